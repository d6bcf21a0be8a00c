//go:build linux || darwin

package session

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/fs"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// fuseSupported says why a FUSE overlay cannot be mounted here, or nil.
func fuseSupported(*Workspace) error { return fs.Supported() }

// fuseRecorder captures a session through a copy-on-write overlay mounted
// over the root: the overlay writes every change into the open task's layer
// as it happens, so sealing a task copies nothing.
type fuseRecorder struct {
	o       *fs.Overlay
	dev     uint64 // device number of the mounted overlay
	restore func() // undoes guardSession
}

// fuseGCPercent is the garbage collector's target while an overlay is
// mounted. Most of a session's heap is the overlay's inodes, which live as
// long as the kernel keeps them (the whole session); the default target
// (100: the heap may double before a collection) would make the process
// twice their size, 40 keeps it within 1.4 times for a little more
// collection work.
const fuseGCPercent = 40

// startFuse mounts the overlay of session id over the root, recording into
// task. It runs before anything of the session is recorded: a mount that
// fails leaves no trace. Its errors match ErrNoOverlay.
func startFuse(a *Active, id uint64, task tasks.ID) (recorder, error) {
	debug.SetGCPercent(fuseGCPercent)
	if Isolated() {
		if err := detachOtherOverlays(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoOverlay, err)
		}
	}
	if !a.opts.Isolate {
		warnRootUsers(a)
	}
	restore := guardSession()
	staging := filepath.Join(a.W.StateDir, "sessions", strconv.FormatUint(id, 10), "staging")
	o, err := fs.Mount(fs.Options{RootPath: a.W.Root, Journal: a.W.Journal, StagingDir: staging, Task: task, Logf: a.log.Printf})
	if err != nil {
		restore()
		return nil, fmt.Errorf("%w: start the overlay on %s: %v", ErrNoOverlay, a.W.Root, err)
	}
	a.log.count()
	return &fuseRecorder{o: o, dev: deviceOf(a.W.Root), restore: restore}, nil
}

// warnRootUsers names the processes that use the root before the overlay
// is mounted: they keep seeing the real tree. (An isolated session leaves
// the real tree to the user: writes there are edits made outside, checked
// by apply like any other.)
func warnRootUsers(a *Active) {
	users := rootUsers(a.W.Root, deviceOf(a.W.Root))
	if len(users) == 0 {
		return
	}
	a.notice(fmt.Sprintf("%d process(es) have their working directory or open files in %s from before the session: %s; "+
		"they see your real files, not the session's view, and what they write there is not part of the session "+
		"(where the session changes the same file, their version is kept as an outside task at its end)",
		len(users), a.W.Root, describeUsers(users)))
}

// stop ends recording at the end of the session, before its last layer is
// read: it waits (up to TIMEAGENT_END_WAIT) for the processes still inside
// the overlay, names those that outlive the wait, and unmounts (cutting
// them off), so the layer committed next is the layer applied.
func (r *fuseRecorder) stop(a *Active) error {
	if users := waitForUsers(a.W.Root, r.dev, endWait(a.notice)); len(users) > 0 {
		a.notice(fmt.Sprintf("%d process(es) still use %s after the agent exited: %s; the session ends without them: "+
			"from now on they cannot write through the session's view, and what they write into your files by absolute path "+
			"is kept as an outside task by the next undo, redo or switch that touches it (wait longer with %s=30s)",
			len(users), a.W.Root, describeUsers(users), EnvEndWait))
	}
	if !r.o.Mounted() {
		a.notice(fmt.Sprintf("the overlay on %s was unmounted during the session, not by timeagent: what was written there afterwards "+
			"went straight to your files; where it differs from what the session recorded, it is kept as an outside task", a.W.Root))
	}
	err := r.o.Unmount()
	r.restore()
	if err != nil {
		return fmt.Errorf("end session %d: %w", a.Session.ID, err)
	}
	return nil
}

func (r *fuseRecorder) committed(*Active) error { return nil }

// abandonMount unmounts an overlay whose session could not be recorded.
func (r *fuseRecorder) abandonMount() error {
	err := r.o.Unmount()
	r.restore()
	return err
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
	// Sockets and device files the task made or removed: not recorded,
	// reported as a copy-mode scan reports them.
	a.notifySkipped(r.o.Skipped())
	return a.W.Journal.Layer(t)
}

// close makes the real tree show the session's final state (the overlay
// is gone: stop). It is a transition from the session's base to the active
// task like any other: paths whose real state differs from the base (a
// process that wrote into the real tree under the overlay) are first kept
// as an outside task, child of the base. A crash before the apply's intent
// is written is finished by recovery the same way.
func (r *fuseRecorder) close(a *Active) error {
	j := a.W.Journal
	if err := r.o.Unmount(); err != nil {
		return fmt.Errorf("end session %d: %w", a.Session.ID, err)
	}
	if a.Session.Isolated {
		return nil // the real tree stays at the session's base: apply or undo decide
	}
	st, err := j.State()
	if err != nil {
		return err
	}
	res, err := cow.Transition(j, a.W.Tree, st.Active, cow.TransitionOptions{Reason: "session end", Yes: true,
		Progress: a.opts.progress(), Now: a.opts.Now})
	if res.Outside != 0 {
		a.notice(fmt.Sprintf("%s had been changed in %s outside the session's view during the session (first %s); "+
			"that content is kept as task %d", plural.Count(len(res.Drifted), "path"), a.W.Root, res.Drifted[0].Path, res.Outside))
	}
	if err != nil {
		return fmt.Errorf("end session %d: apply its work to %s: %w", a.Session.ID, a.W.Root, err)
	}
	return removeSpecials(a, r.o.RemovedSpecials())
}

// removeSpecials removes from the real tree the sockets and device files
// the agent removed in the view: they are not recorded (design decision 5)
// and so not part of the apply, but the real tree should not keep what the
// agent deleted, as it would not in copy mode. A path that is no longer a
// socket or device file is left alone.
func removeSpecials(a *Active, paths []string) error {
	for _, p := range paths {
		fi, err := a.W.Tree.Lstat(p)
		if err != nil || fi.Mode()&(iofs.ModeSocket|iofs.ModeDevice) == 0 {
			continue
		}
		if err := a.W.Tree.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("end session %d: remove %s, which the agent removed: %w", a.Session.ID, filepath.Join(a.W.Root, p), err)
		}
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
//
// The view is held still while the move is decided, so the sealed layer is
// the whole task. Content the view shows that differs from the states its
// tasks left (edits that reached the lower tree, between sessions or
// during this one) is drift: it is first kept as an outside task, and the
// move goes on over it only with yes. A move that fails (drift refused, a
// damaged blob, no space to stage the content, a directory replaced by a
// symlink) leaves the view as it was, and the overlay goes on recording
// into the open task.
func (r *fuseRecorder) move(a *Active, to tasks.ID, yes bool) (cow.TransitionResult, error) {
	j := a.W.Journal
	if a.pending {
		if _, err := a.recordPending(false); err != nil {
			return cow.TransitionResult{}, err
		}
	}
	var res cow.TransitionResult
	var st journal.State
	var tree *tasks.Tree
	var next tasks.ID
	written, err := r.o.Move(func(view fs.ViewReader) (map[string]journal.NodeState, tasks.ID, error) {
		if !a.pending {
			if err := r.sealOpen(a); err != nil {
				return nil, 0, err
			}
		}
		var err error
		if st, err = j.State(); err != nil {
			return nil, 0, err
		}
		if tree, err = j.Tree(); err != nil {
			return nil, 0, err
		}
		plan, err := cow.MakePlan(tree, j, st.Active, to)
		if err != nil {
			return nil, 0, err
		}
		res = cow.TransitionResult{From: st.Active, To: to, Plan: plan}
		// The lower tree is the real tree: its stat cache vouches for
		// files unchanged since the last apply or scan.
		cache, err := j.Stats(plan.Paths())
		if err != nil {
			return nil, 0, err
		}
		if res.Drifted, err = cow.DriftFrom(view, plan, cache); err != nil {
			return nil, 0, err
		}
		if len(res.Drifted) > 0 {
			if res.Outside, err = cow.KeepDrift(j, st.Active, res.Drifted, a.opts.now()); err != nil {
				return nil, 0, err
			}
			if !yes {
				return nil, 0, fmt.Errorf("%w: %s, first %s; their content is kept as task %d",
					ErrViewDrift, plural.Count(len(res.Drifted), "path"), res.Drifted[0].Path, res.Outside)
			}
			if st, err = j.State(); err != nil {
				return nil, 0, err
			}
			if tree, err = j.Tree(); err != nil {
				return nil, 0, err
			}
			if res.Plan, err = cow.MakePlan(tree, j, res.Outside, to); err != nil {
				return nil, 0, err
			}
		}
		// The id the overlay records into from now on is reserved first,
		// so nothing else can take it (cow.Reserve).
		if next, err = cow.Reserve(j); err != nil {
			return nil, 0, err
		}
		return res.Plan.Target, next, nil
	})
	if err != nil {
		if errors.Is(err, cow.ErrDrift) {
			return res, err
		}
		if errors.Is(err, fs.ErrViewMixed) {
			return res, fmt.Errorf("move to task %d failed part way; the open task goes on recording: %w", to, err)
		}
		return res, fmt.Errorf("move to task %d cancelled, the session's view and recording are unchanged: %w", to, err)
	}
	res.Written = written
	// The view shows to, and the overlay records into next.
	a.task, a.pending, a.pendingParent = next, true, to
	if st, err = j.State(); err != nil {
		return res, err
	}
	if tree, err = j.Tree(); err != nil {
		return res, err
	}
	visited, st := cow.Visit(tree, st, to)
	if err := j.Update(func(tx *journal.Tx) error {
		for _, v := range visited {
			if err := tx.PutTask(v); err != nil {
				return err
			}
		}
		return tx.SetState(st)
	}); err != nil {
		return res, fmt.Errorf("move to task %d: %w", to, err)
	}
	return res, nil
}

// sealOpen records the open task's layer, as it is now, in its task
// record. The overlay goes on recording into it until the view changes.
func (r *fuseRecorder) sealOpen(a *Active) error {
	j := a.W.Journal
	changes, err := j.Layer(a.task)
	if err != nil {
		return err
	}
	st, err := j.State()
	if err != nil {
		return err
	}
	t, err := j.Task(a.task)
	if err != nil {
		return err
	}
	t.Ended, t.Files = a.opts.now(), len(changes)
	if err := cow.CommitTask(j, t, changes, st); err != nil {
		return fmt.Errorf("seal task %d: %w", t.ID, err)
	}
	return nil
}
