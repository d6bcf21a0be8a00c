package session

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// openTaskLocked commits t as the new active task together with the session
// record. In copy mode it is the applied task too (the child writes into the
// real tree); in fuse mode the real tree stays at the session's base until
// the session ends.
func (a *Active) openTaskLocked(t tasks.Task, sess journal.Session) error {
	if _, err := cow.CreateTask(a.W.Journal, cow.NewTask{Task: t, Activate: true, Applied: a.Mode == ModeCopy,
		Session: &sess}); err != nil {
		return fmt.Errorf("record task %d: %w", t.ID, err)
	}
	a.task = t.ID
	a.Session = sess
	return nil
}

// Checkpoint seals the open task and opens the next one (a child of it).
func (a *Active) Checkpoint(summary string) (sealed tasks.ID, next tasks.ID, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkpointLocked(summary)
}

func (a *Active) checkpointLocked(summary string) (sealed tasks.ID, next tasks.ID, err error) {
	j := a.W.Journal
	if a.pending {
		if _, err := a.recordPending(true); err != nil {
			return 0, 0, err
		}
	}
	cur := a.task
	// The next task's id is reserved durably before the overlay records
	// into it, so nothing else can take it if the session dies here.
	next, err = cow.Reserve(j)
	if err != nil {
		return 0, 0, err
	}
	changes, err := a.rec.seal(a, cur, next)
	if err != nil {
		return 0, 0, err
	}
	t, err := j.Task(cur)
	if err != nil {
		return 0, 0, err
	}
	now := a.opts.now()
	t.Ended, t.Files = now, len(changes)
	st, err := j.State()
	if err != nil {
		return 0, 0, err
	}
	if err := cow.CommitTask(j, t, changes, st); err != nil {
		return 0, 0, fmt.Errorf("seal task %d: %w", cur, err)
	}
	if err := a.rec.committed(a); err != nil {
		return 0, 0, err
	}
	if summary == "" {
		summary = a.summaryOf()
	}
	nt := tasks.Task{ID: next, Parent: cur, Summary: tasks.Summarize(summary), Session: a.Session.ID,
		Kind: tasks.KindAgent, Created: now}
	sess := a.Session
	sess.Tasks = append(append([]tasks.ID(nil), sess.Tasks...), nt.ID)
	if err := a.openTaskLocked(nt, sess); err != nil {
		return 0, 0, err
	}
	return cur, nt.ID, nil
}

// recordPending gives the reserved task of a fuse session its record, as a
// child of the task the session moved to, when anything was written into it
// (always when force). It reports whether the task now exists.
func (a *Active) recordPending(force bool) (bool, error) {
	j := a.W.Journal
	if err := a.rec.flush(); err != nil {
		return false, err
	}
	layer, err := j.Layer(a.task)
	if err != nil {
		return false, err
	}
	if len(layer) == 0 && !force {
		return false, nil
	}
	t := tasks.Task{ID: a.task, Parent: a.pendingParent, Summary: a.summaryOf(),
		Session: a.Session.ID, Kind: tasks.KindAgent, Created: a.opts.now()}
	sess := a.Session
	sess.Tasks = append(append([]tasks.ID(nil), sess.Tasks...), t.ID)
	if err := a.openTaskLocked(t, sess); err != nil {
		return false, err
	}
	a.pending = false
	return true, nil
}
