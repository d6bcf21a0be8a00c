package session

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// copyRecorder captures a task's layer by scanning the whole tree and
// diffing it with the scan the task started from.
type copyRecorder struct{}

func (copyRecorder) seal(a *Active, _, _ tasks.ID) ([]journal.Change, error) {
	m := a.prescan
	a.prescan = nil
	if m == nil {
		var skipped []string
		var err error
		m, skipped, err = cow.Scan(a.W.Tree, a.W.Journal, cow.ScanOptions{Cache: a.last, Exclude: a.W.Exclude(), Progress: a.opts.progress()})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", a.W.Root, err)
		}
		a.notifySkipped(skipped)
	}
	a.sealed = m
	return cow.Diff(a.last, m), nil
}

// committed saves the sealed task's scan as the stat cache. Before this,
// the cache still holds the scan the task started from: a crash between
// the task's commit and here leaves a sealed task and that cache, which
// recovery rescans without recording the task again.
func (copyRecorder) committed(a *Active) error {
	if a.sealed == nil {
		return nil
	}
	if err := saveStats(a.W.Journal, a.last, a.sealed); err != nil {
		return err
	}
	a.last, a.sealed = a.sealed, nil
	return nil
}

func (copyRecorder) stop(*Active) error { return nil }

func (copyRecorder) close(*Active) error { return nil }

func (copyRecorder) changes(a *Active) ([]journal.Change, error) {
	m, _, err := cow.Scan(a.W.Tree, a.W.Journal, cow.ScanOptions{Cache: a.last, Exclude: a.W.Exclude()})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", a.W.Root, err)
	}
	return cow.Diff(a.first, m), nil
}

func (copyRecorder) move(*Active, tasks.ID, bool) (cow.TransitionResult, error) {
	return cow.TransitionResult{}, fmt.Errorf("undo, redo and switch are %w: the agent writes into the real tree; run them after the session ends (or use --mode fuse)", ErrInSession)
}

func (copyRecorder) flush() error { return nil }

// saveStats writes the entries of m that differ from old and deletes the
// paths that are gone.
func saveStats(j *journal.Journal, old, m cow.Manifest) error {
	up := make(map[string]journal.StatEntry)
	for p, e := range m {
		if o, ok := old[p]; !ok || o != e {
			up[p] = e
		}
	}
	var del []string
	for p := range old {
		if _, ok := m[p]; !ok {
			del = append(del, p)
		}
	}
	if len(up) == 0 && len(del) == 0 {
		return nil
	}
	if err := j.PutStats(up, del); err != nil {
		return fmt.Errorf("save stat cache: %w", err)
	}
	return nil
}
