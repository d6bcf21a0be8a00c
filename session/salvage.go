package session

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

// SalvageJournal locks root's state dir and replaces a damaged journal by
// one holding everything still readable (journal.Salvage). It refuses while
// a session runs, and leaves a journal that reads and verifies whole alone
// (journal.ErrNothingToSalvage).
func SalvageJournal(root, stateDir string) (*journal.SalvageReport, error) {
	l, held, err := WaitLock(stateDir, Holder{Pid: os.Getpid(), Command: "verify"}, 10*time.Second)
	if err != nil {
		if errors.Is(err, ErrLocked) && held != nil {
			return nil, fmt.Errorf("salvage the journal of %s: %w (pid %d, %s): wait for it to end", root, ErrLocked, held.Pid, describe(held))
		}
		return nil, fmt.Errorf("salvage the journal of %s: %w", root, err)
	}
	defer l.Release()
	dir := journalDir(stateDir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("salvage the journal of %s: %w: there is no journal yet", root, journal.ErrNothingToSalvage)
	}
	return journal.Salvage(dir, root, time.Now())
}
