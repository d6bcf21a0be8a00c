package session

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/timeagent-dev/timeagent/tasks"
)

// activeMarkName is the file in a root's state dir that names the active
// task, written when a command closes the root's journal and removed while
// a command holds it: a reader that holds the root's lock and finds it knows
// the active task without opening the journal (an agent's prompt hook,
// which must answer at once, asks only whether the files moved).
const activeMarkName = "active"

// ReadActiveMark returns the active task as the last command to close the
// root's journal left it. ok is false when no command closed it cleanly
// since the last one opened it (a command runs, or one was killed): then
// only the journal knows. The caller holds the root's lock.
func ReadActiveMark(stateDir string) (id tasks.ID, ok bool) {
	b, err := os.ReadFile(filepath.Join(stateDir, activeMarkName))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false
	}
	return tasks.ID(n), true
}

// writeActiveMark writes the mark through a renamed temporary file (best
// effort: a mark that is missing or unreadable only costs its reader a
// journal open).
func writeActiveMark(stateDir string, id tasks.ID) {
	p := filepath.Join(stateDir, activeMarkName)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(uint64(id), 10)+"\n"), 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
	}
}

func removeActiveMark(stateDir string) { _ = os.Remove(filepath.Join(stateDir, activeMarkName)) }
