// Package menu is the time machine menu: a full-screen bubbletea program
// showing the task tree as a graph (internal/graph), a preview of the
// selected task's changed paths and diffs, and keys to switch, undo, redo,
// filter and tag. It knows nothing of the journal, sessions or files: all it
// reads and does goes through a Source, which the command line implements
// with its own commands, so the menu works the same after a session and
// during a live one (through the session's control channel).
package menu

import (
	"fmt"
	"strings"
	"time"
)

// Task is one task of the history as the menu shows it.
type Task struct {
	ID, Parent uint64
	Summary    string
	Kind       string // agent, outside, revert
	Status     string // past, current, future, other
	Branches   bool   // more than one child
	Session    uint64
	Created    time.Time
	Files      int
	Tags       []string
}

// History is the whole task tree and where the user is in it.
type History struct {
	Active, Current uint64
	// BaseBranches: the base (task 0) has more than one child.
	BaseBranches bool
	Tasks        []Task
	// Stamp identifies this state of the history: the menu redraws the tree
	// only when a poll returns another stamp.
	Stamp string
}

// Change is one changed path of a task.
type Change struct {
	Path string
	Kind string // created, modified, deleted, typechanged
}

// Move is an undo, redo or switch asked from the menu.
type Move struct {
	Action string // "undo", "redo" or "switch"
	Task   uint64 // the switch's target
	// Yes confirms moving over drifted files (their content is kept as a
	// task first) and leaving an interrupted session's tasks.
	Yes bool
}

// ConfirmError is a move refused until the user confirms it: files changed
// since their task ended (drift), or an interrupted session's tasks. The
// menu shows it and asks; yes repeats the move with Move.Yes.
type ConfirmError struct {
	Message string
	Drifted []string
	// Outside is the task already keeping the drifted content, if any.
	Outside uint64
}

func (e *ConfirmError) Error() string { return e.Message }

// Source is what the menu reads and does. Every call may take a while (it
// may reach a running session): the menu calls it outside its event loop.
type Source interface {
	// History reads the task tree.
	History() (History, error)
	// Changes lists the paths task changed.
	Changes(task uint64) ([]Change, error)
	// Patch is task's diff as a git patch, one entry per path (binary
	// files named, not shown).
	Patch(task uint64) (map[string]string, error)
	// Move undoes, redoes or switches and says what it did in one line.
	// A move that needs confirming returns a *ConfirmError.
	Move(m Move) (string, error)
	// Tag names task.
	Tag(name string, task uint64) error
	// Touching lists the tasks that changed a path containing query.
	Touching(query string) ([]uint64, error)
}

// SplitPatch cuts a git patch into one text per path, keyed by the path
// of its "diff --git a/X b/Y" header (Y, the path after the change).
func SplitPatch(patch string) map[string]string {
	out := map[string]string{}
	var cur string
	var b strings.Builder
	flush := func() {
		if cur != "" {
			out[cur] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(patch, "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			flush()
			cur = patchPath(strings.TrimSuffix(line, "\n"))
		}
		if cur != "" {
			b.WriteString(line)
		}
	}
	flush()
	return out
}

// patchPath is the path a "diff --git a/X b/X" header names. Paths with
// spaces or quotes are quoted by git's rules; the menu only needs them to
// match Change.Path, so a quoted name is unquoted.
func patchPath(header string) string {
	rest := strings.TrimPrefix(header, "diff --git ")
	if strings.HasPrefix(rest, `"`) {
		// "a/x y" "b/x y"
		if i := strings.Index(rest[1:], `" "`); i >= 0 {
			return unquote(rest[i+4:])
		}
	}
	// a/X b/X: both halves are equal, so the split is in the middle.
	if n := len(rest); n%2 == 1 {
		a, b := rest[:n/2], rest[n/2+1:]
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return b[2:]
		}
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

func unquote(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`)
	s = strings.TrimPrefix(s, "b/")
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			out = append(out, c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case '"', '\\':
			out = append(out, s[i])
		default:
			if i+2 < len(s) {
				var v byte
				if _, err := fmt.Sscanf(s[i:i+3], "%03o", &v); err == nil {
					out = append(out, v)
					i += 2
					continue
				}
			}
			out = append(out, '\\', s[i])
		}
	}
	return string(out)
}
