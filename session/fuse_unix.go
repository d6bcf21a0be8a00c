//go:build linux || darwin

package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
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

// fuseGCPercent is the garbage collector's target while an overlay is
// mounted. Most of a session's heap is the overlay's inodes, which live as
// long as the kernel keeps them (the whole session); the default target
// (100: the heap may double before a collection) would make the process
// twice their size, 40 keeps it within 1.4 times for a little more
// collection work.
const fuseGCPercent = 40

func startFuse(a *Active) (recorder, error) {
	debug.SetGCPercent(fuseGCPercent)
	if Isolated() {
		if err := detachOtherOverlays(); err != nil {
			return nil, err
		}
	}
	staging := filepath.Join(a.W.StateDir, "sessions", strconv.FormatUint(a.Session.ID, 10), "staging")
	o, err := fs.Mount(fs.Options{RootPath: a.W.Root, Journal: a.W.Journal, StagingDir: staging, Task: a.task, Logf: a.log.Printf})
	if err != nil {
		return nil, fmt.Errorf("start the overlay on %s: %w (use --mode copy)", a.W.Root, err)
	}
	a.log.count()
	return &fuseRecorder{o: o}, nil
}

func (r *fuseRecorder) seal(a *Active, t, next tasks.ID) ([]journal.Change, error) {
	var err error
	if next != 0 {
		err = r.o.Checkpoint(next)
	} else {
		err = r.o.Flush()
	}
	if err != nil && next == 0 {
		// The session ends in error (a full disk): take the overlay away,
		// so no mount is left on the root and the journal is not closed
		// under it. The next command recovers the session (interrupted)
		// from what was recorded.
		err = errors.Join(err, r.o.Unmount())
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
	if a.Session.Isolated {
		// The real tree stays at the session's base: apply or undo decide.
		if err := r.o.Unmount(); err != nil {
			return fmt.Errorf("end session %d: %w", a.Session.ID, err)
		}
		return nil
	}
	st, err := j.State()
	if err != nil {
		return err
	}
	// Staging: a damaged blob found before the first change cancels the
	// apply and leaves the real tree at the base (as an isolated session).
	in := journal.Intent{From: st.Applied, To: st.Active, Started: time.Now(), Reason: "session end", Staging: true}
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
	j := a.W.Journal
	if err := r.o.Flush(); err != nil {
		return nil, err
	}
	if !a.pending {
		return NetChanges(j, a.Session.Base, a.task)
	}
	// A reserved task has no record yet: the view is its parent's state
	// plus its own layer.
	tree, err := j.Tree()
	if err != nil {
		return nil, err
	}
	plan, err := cow.MakePlan(tree, j, a.Session.Base, a.pendingParent)
	if err != nil {
		return nil, err
	}
	layer, err := j.Layer(a.task)
	if err != nil {
		return nil, err
	}
	for _, c := range layer {
		if _, ok := plan.Expected[c.Path]; !ok {
			plan.Expected[c.Path] = c.Before
		}
		plan.Target[c.Path] = c.After
	}
	return diffPlan(plan), nil
}

func (r *fuseRecorder) flush() error { return r.o.Flush() }

// move shows task to in the mounted view at once. The open task is sealed
// first (a reserved task only when something was written into it); later
// changes go to a new reserved task, a child of to: a new branch, as for a
// run after an undo.
func (r *fuseRecorder) move(a *Active, to tasks.ID) (int, error) {
	j := a.W.Journal
	if a.pending {
		if _, err := a.recordPending(false); err != nil {
			return 0, err
		}
	}
	if !a.pending {
		if err := r.o.Flush(); err != nil {
			return 0, err
		}
		changes, err := j.Layer(a.task)
		if err != nil {
			return 0, err
		}
		st, err := j.State()
		if err != nil {
			return 0, err
		}
		t, err := j.Task(a.task)
		if err != nil {
			return 0, err
		}
		t.Ended, t.Files = a.opts.now(), len(changes)
		if err := cow.CommitTask(j, t, changes, st); err != nil {
			return 0, fmt.Errorf("seal task %d: %w", t.ID, err)
		}
	}
	st, err := j.State()
	if err != nil {
		return 0, err
	}
	tree, err := j.Tree()
	if err != nil {
		return 0, err
	}
	plan, err := cow.MakePlan(tree, j, st.Active, to)
	if err != nil {
		return 0, err
	}
	next := st.Current + 1
	if err := r.o.SetView(plan.Target, next); err != nil {
		return 0, fmt.Errorf("show task %d: %w", to, err)
	}
	st.Clock++
	visited := tree.Visit(to, st.Clock)
	st.Active = to
	if err := j.Update(func(tx *journal.Tx) error {
		for _, v := range visited {
			if err := tx.PutTask(v); err != nil {
				return err
			}
		}
		return tx.SetState(st)
	}); err != nil {
		return 0, fmt.Errorf("move to task %d: %w", to, err)
	}
	a.task, a.pending, a.pendingParent = next, true, to
	return len(plan.Target), nil
}
