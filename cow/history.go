package cow

import (
	"errors"
	"fmt"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// This file is the one owner of history's bookkeeping: which id a new task
// gets, which clock a visit gets, how a new task, a visit and a layer are
// written. Sessions, recovery and moves all call it, so there is one
// formula for each and it is tested here (history_test.go).

// NextTaskID is the id the next new task gets: one above every id the root
// has used or given out (the highest task created, the id reserved for a
// fuse session's next task, every task in the tree). An id is never given
// to two tasks, even when the state lags behind the tree after a crash.
func NextTaskID(tree *tasks.Tree, st journal.State) tasks.ID {
	return max(st.Current, st.Reserved, maxID(tree)) + 1
}

// NextClock is the visit clock the next visit gets: one above the state's
// clock and every visit mark in the tree.
func NextClock(tree *tasks.Tree, st journal.State) uint64 {
	return max(st.Clock, tree.MaxVisit()) + 1
}

// Visit marks to and its ancestors as visited now and makes to the active
// task. It returns the task records to write and the new state; the caller
// writes both in one update. Current is raised to the highest id in the
// tree, so it never lags behind after a crash.
func Visit(tree *tasks.Tree, st journal.State, to tasks.ID) ([]tasks.Task, journal.State) {
	st.Clock = NextClock(tree, st)
	st.Active = to
	st.Current = max(st.Current, maxID(tree))
	return tree.Visit(to, st.Clock), st
}

// Reserve gives out the id of a task whose record is written later: a fuse
// session records into it at once and gives it a record only when
// something was written (after an in-session move) or at the next
// checkpoint. The id is kept in the state durably, so no other task (an
// outside task recorded meanwhile, another session after a crash) can take
// it. A reserved id that never got a record is given out again while it is
// still above every task (a parent's id is always below its child's).
func Reserve(j *journal.Journal) (tasks.ID, error) {
	tree, err := j.Tree()
	if err != nil {
		return 0, fmt.Errorf("reserve a task id: %w", err)
	}
	var id tasks.ID
	err = j.Update(func(tx *journal.Tx) error {
		st, err := tx.State()
		if err != nil {
			return err
		}
		if st.Reserved > maxID(tree) {
			id = st.Reserved
			return nil
		}
		id = NextTaskID(tree, st)
		st.Reserved = id
		return tx.SetState(st)
	})
	if err != nil {
		return 0, fmt.Errorf("reserve a task id: %w", err)
	}
	return id, nil
}

// ReservedID returns the reserved id that has no task record yet, or 0.
// Journals written before ids were reserved in the state reserved
// Current+1 implicitly: that id is returned when it has no record.
func ReservedID(j *journal.Journal) (tasks.ID, error) {
	st, err := j.State()
	if err != nil {
		return 0, err
	}
	id := st.Reserved
	if id == 0 {
		id = st.Current + 1
	}
	if _, err := j.Task(id); err == nil {
		return 0, nil
	} else if !errors.Is(err, journal.ErrNotFound) {
		return 0, fmt.Errorf("read task %d: %w", id, err)
	}
	return id, nil
}

// NewTask describes a task to create with CreateTask.
type NewTask struct {
	// Task is the record; its Visit and (when Changes is not nil) Files are
	// set by CreateTask.
	Task tasks.Task
	// Changes, when not nil, is written as the task's whole layer first. A
	// nil Changes keeps the layer as it is (a fuse session's task, whose
	// layer the overlay writes).
	Changes []Change
	// Activate makes the task the active one, visited now; otherwise the
	// position in history stays (an outside task found beside it).
	Activate bool
	// Applied makes the task the applied one too (the real tree shows it).
	Applied bool
	// Session, when not nil, is written in the same update.
	Session *journal.Session
}

// CreateTask records a new task: its layer (when given), then in one
// durable update the task, the visit marks, the session and the state.
// Current becomes the new id. Callers hold the root's lock: the tree is
// read before the update.
func CreateTask(j *journal.Journal, n NewTask) (tasks.Task, error) {
	t := n.Task
	if n.Changes != nil {
		for _, c := range n.Changes {
			if !ValidPath(c.Path) {
				return t, fmt.Errorf("create task %d %q: %w", t.ID, c.Path, ErrBadPath)
			}
		}
		if err := putLayer(j, t.ID, n.Changes); err != nil {
			return t, fmt.Errorf("create task %d: %w", t.ID, err)
		}
		t.Files = len(n.Changes)
	}
	tree, err := j.Tree()
	if err != nil {
		return t, fmt.Errorf("create task %d: %w", t.ID, err)
	}
	err = j.Update(func(tx *journal.Tx) error {
		st, err := tx.State()
		if err != nil {
			return err
		}
		if tree.Has(t.ID) {
			return fmt.Errorf("task %d exists already", t.ID)
		}
		if t.Parent != tasks.Base && !tree.Has(t.Parent) {
			return fmt.Errorf("parent: %w %d", tasks.ErrUnknown, t.Parent)
		}
		var visited []tasks.Task
		if n.Activate {
			visited, st = Visit(tree, st, t.Parent)
			t.Visit = st.Clock
			st.Active = t.ID
			if n.Applied {
				st.Applied = t.ID
			}
		}
		st.Current = max(st.Current, t.ID)
		for _, v := range append(visited, t) {
			if err := tx.PutTask(v); err != nil {
				return err
			}
		}
		if n.Session != nil {
			if err := tx.PutSession(*n.Session); err != nil {
				return err
			}
		}
		return tx.SetState(st)
	})
	if err != nil {
		return t, fmt.Errorf("create task %d: %w", t.ID, err)
	}
	return t, nil
}

// putLayer makes id's layer hold exactly changes. The layer is written
// before the task record (a layer can be too big for one transaction), so a
// crash in between leaves records under an id without a task, and that id
// is given out again: whatever they hold that changes does not is dropped.
func putLayer(j *journal.Journal, id tasks.ID, changes []Change) error {
	old, err := j.Layer(id)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		keep := make(map[string]bool, len(changes))
		for _, c := range changes {
			keep[c.Path] = true
		}
		var stale []string
		for _, c := range old {
			if !keep[c.Path] {
				stale = append(stale, c.Path)
			}
		}
		if len(stale) > 0 {
			if err := j.DeleteChanges(id, stale); err != nil {
				return err
			}
		}
	}
	return j.PutChanges(id, changes)
}

// CommitTask writes an existing task's layer (exactly changes), then in one
// durable update the task (Files = len(changes)) and the root's new
// position.
func CommitTask(j *journal.Journal, t tasks.Task, changes []Change, state journal.State) error {
	for _, c := range changes {
		if !ValidPath(c.Path) {
			return fmt.Errorf("commit task %d %q: %w", t.ID, c.Path, ErrBadPath)
		}
	}
	if err := putLayer(j, t.ID, changes); err != nil {
		return fmt.Errorf("commit task %d: %w", t.ID, err)
	}
	t.Files = len(changes)
	err := j.Update(func(tx *journal.Tx) error {
		if err := tx.PutTask(t); err != nil {
			return err
		}
		return tx.SetState(state)
	})
	if err != nil {
		return fmt.Errorf("commit task %d: %w", t.ID, err)
	}
	return nil
}

// Release gives back a reserved id that never got a record (a fuse
// session ended after an in-session move without writing anything more),
// so the next task takes it and ids stay without gaps.
func Release(j *journal.Journal, id tasks.ID) error {
	if _, err := j.Task(id); err == nil {
		return nil
	} else if !errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("release task id %d: %w", id, err)
	}
	err := j.Update(func(tx *journal.Tx) error {
		st, err := tx.State()
		if err != nil || st.Reserved != id {
			return err
		}
		st.Reserved = 0
		return tx.SetState(st)
	})
	if err != nil {
		return fmt.Errorf("release task id %d: %w", id, err)
	}
	return nil
}
