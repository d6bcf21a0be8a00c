//go:build linux || darwin

package session

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/fs"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// fuseSupported says why a FUSE overlay cannot be mounted here, or nil.
func fuseSupported(*Workspace) error { return fs.Supported() }

// fuseRecorder captures a session through a copy-on-write overlay mounted
// over the root: the overlay writes every change into the open task's layer
// as it happens, so sealing a task copies nothing.
type fuseRecorder struct {
	o *fs.Overlay
}

func startFuse(a *Active) (recorder, error) {
	staging := filepath.Join(a.W.StateDir, "sessions", strconv.FormatUint(a.Session.ID, 10), "staging")
	o, err := fs.Mount(fs.Options{RootPath: a.W.Root, Journal: a.W.Journal, StagingDir: staging, Task: a.task})
	if err != nil {
		return nil, fmt.Errorf("start the overlay on %s: %w (use --mode copy)", a.W.Root, err)
	}
	return &fuseRecorder{o: o}, nil
}

func (r *fuseRecorder) seal(a *Active, t, next tasks.ID) ([]journal.Change, error) {
	var err error
	if next != 0 {
		err = r.o.Checkpoint(next)
	} else {
		err = r.o.Flush()
	}
	if err != nil {
		return nil, err
	}
	return a.W.Journal.Layer(t)
}

// close makes the real tree show the session's final state: an apply with
// an intent from the session's base to the active task, after the overlay
// is gone, so a crash at any point is finished by the next command.
func (r *fuseRecorder) close(a *Active) error {
	j := a.W.Journal
	st, err := j.State()
	if err != nil {
		return err
	}
	in := journal.Intent{From: st.Applied, To: st.Active, Started: time.Now(), Reason: "session end"}
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutIntent(in) }); err != nil {
		return fmt.Errorf("end session %d: %w", a.Session.ID, err)
	}
	if err := r.o.Unmount(); err != nil {
		return fmt.Errorf("end session %d: %w", a.Session.ID, err)
	}
	if _, err := cow.FinishIntent(j, a.W.Tree, a.opts.progress()); err != nil {
		return fmt.Errorf("end session %d: apply its work to %s: %w", a.Session.ID, a.W.Root, err)
	}
	return nil
}

func (r *fuseRecorder) changes(a *Active) ([]journal.Change, error) {
	if err := r.o.Flush(); err != nil {
		return nil, err
	}
	return NetChanges(a.W.Journal, a.Session.Base, a.task)
}

func (r *fuseRecorder) move(a *Active, to tasks.ID) (int, error) {
	return 0, fmt.Errorf("undo, redo and switch are %w (fuse mode: not yet supported inside a session); run them after the session ends", ErrInSession)
}
