package session

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/recovery"
)

// Workspace is a root opened for one command: its lock held, its journal
// open and the real tree reachable through an os.Root.
type Workspace struct {
	Root     string
	StateDir string
	Journal  *journal.Journal
	Tree     *os.Root
	// Unmounted is true when a stale overlay mount of a dead session was
	// detached from the root while opening.
	Unmounted bool
	lock      *Lock
}

// RunningError means a session owns the root; commands go to its control socket.
type RunningError struct{ Holder Holder }

func (e *RunningError) Error() string {
	return fmt.Sprintf("a session is running on this root (timeagent pid %d)", e.Holder.Pid)
}

// Unwrap lets errors.Is(err, ErrLocked) match.
func (e *RunningError) Unwrap() error { return ErrLocked }

// Open locks root's state dir and opens its journal and tree. When a session
// holds the lock it returns a *RunningError naming it; another short command
// holding the lock is waited for briefly.
func Open(root, stateDir, command string) (*Workspace, error) {
	return OpenWait(root, stateDir, command, 10*time.Second)
}

// OpenWait is Open waiting at most wait for another short command's lock
// (an agent's hook, which must answer at once, gives up early).
func OpenWait(root, stateDir, command string, wait time.Duration) (*Workspace, error) {
	l, held, err := WaitLock(stateDir, Holder{Pid: os.Getpid(), Command: command}, wait)
	if err != nil {
		return nil, lockError(err, held)
	}
	return OpenLocked(root, stateDir, l)
}

// lockError is the error of a lock held by held: a running session's
// (RunningError) or another command's.
func lockError(err error, held *Holder) error {
	if !errors.Is(err, ErrLocked) {
		return err
	}
	if held != nil && held.Command == "run" {
		return &RunningError{Holder: *held}
	}
	pid := 0
	if held != nil {
		pid = held.Pid
	}
	return fmt.Errorf("%w (pid %d, %s): wait for it to finish", ErrLocked, pid, describe(held))
}

// OpenLocked opens root's journal and tree under l, the root's lock already
// held (handed over by another process: HandOff, AdoptLock). The workspace
// releases l when it closes, and when opening fails.
func OpenLocked(root, stateDir string, l *Lock) (*Workspace, error) {
	return openLocked(root, stateDir, l, false)
}

// OpenForReading is Open for a command that only reads the history
// (status, log): its journal is opened read-only when it can be, which
// spares the read-write open's files and syncs. The caller checks that
// nothing needs recovering (recovery.Pending) and calls Writable if
// something does.
func OpenForReading(root, stateDir, command string) (*Workspace, error) {
	l, held, err := WaitLock(stateDir, Holder{Pid: os.Getpid(), Command: command}, 10*time.Second)
	if err != nil {
		return nil, lockError(err, held)
	}
	return openLocked(root, stateDir, l, true)
}

func openLocked(root, stateDir string, l *Lock, readOnly bool) (*Workspace, error) {
	// The active mark is gone while a command may move the files; Close
	// writes it again.
	removeActiveMark(stateDir)
	unmounted, err := recovery.UnmountStale(root)
	if err != nil {
		l.Release()
		return nil, err
	}
	var j *journal.Journal
	if readOnly && !unmounted {
		// Whatever a read-only open refuses (no journal yet, a log to
		// repair, damage), the read-write open below handles or reports.
		j, _ = journal.OpenReadOnly(journalDir(stateDir), root)
	}
	if j == nil {
		if j, err = journal.Open(journalDir(stateDir), root); err != nil {
			l.Release()
			return nil, err
		}
	}
	tree, err := os.OpenRoot(root)
	if err != nil {
		j.Close()
		l.Release()
		return nil, fmt.Errorf("open root %s: %w", root, err)
	}
	return &Workspace{Root: root, StateDir: stateDir, Journal: j, Tree: tree, Unmounted: unmounted, lock: l}, nil
}

func describe(h *Holder) string {
	if h == nil || h.Command == "" {
		return "another timeagent command"
	}
	return "timeagent " + h.Command
}

func journalDir(stateDir string) string { return stateDir + string(os.PathSeparator) + "journal" }

// Writable reopens a journal opened read-only (OpenForReading) for
// writing, the root's lock kept; a no-op when it is writable already.
func (w *Workspace) Writable() error {
	if !w.Journal.ReadOnly() {
		return nil
	}
	if err := w.Journal.Close(); err != nil {
		return err
	}
	j, err := journal.Open(journalDir(w.StateDir), w.Root)
	if err != nil {
		w.Journal = nil
		return err
	}
	w.Journal = j
	return nil
}

// Lock returns the workspace's lock, so a session can describe itself in it.
func (w *Workspace) Lock() *Lock { return w.lock }

// Close closes the tree and the journal and releases the lock, writing the
// active mark (ReadActiveMark) when the journal closed cleanly.
func (w *Workspace) Close() error {
	var errs []error
	if w.Tree != nil {
		errs = append(errs, w.Tree.Close())
	}
	if w.Journal != nil {
		st, serr := w.Journal.State()
		cerr := w.Journal.Close()
		if serr == nil && cerr == nil {
			writeActiveMark(w.StateDir, st.Active)
		}
		errs = append(errs, cerr)
	}
	errs = append(errs, w.lock.Release())
	return errors.Join(errs...)
}
