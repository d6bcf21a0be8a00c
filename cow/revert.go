package cow

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// ErrRevertConflict: paths the reverted task touched were changed since;
// the revert was refused as a whole.
var ErrRevertConflict = errors.New("revert conflicts")

// RevertOptions tune a Revert.
type RevertOptions struct {
	// Force skips conflicting paths (they keep their present content) and
	// reverts the rest.
	Force bool
	// Progress may be nil.
	Progress Progress
	// Cwd and RootPath are passed on to Transition (CheckCwd).
	Cwd, RootPath string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// RevertConflict is a path the reverted task touched whose present state
// is no longer the one the task left.
type RevertConflict struct {
	Path string
	// Present is the path's state now, Left the state the task left.
	Present, Left NodeState
	// Reason says why, when it is not the path's own change (its directory
	// conflicts, or holds content added since).
	Reason string
}

// RevertResult says what a Revert did.
type RevertResult struct {
	// Reverted is the task whose changes were undone, Task the new task.
	Reverted, Task tasks.ID
	// Conflicts are the paths changed since Reverted (skipped under Force).
	Conflicts []RevertConflict
	// Outside is the outside task drifted content was kept as (0: none).
	Outside tasks.ID
	// Drifted lists the paths found changed outside a session.
	Drifted []Drifted
	// Transition is the move to the new task.
	Transition TransitionResult
}

// Revert makes a new task, child of the active task, that undoes only
// task id's changes, like git revert: every path id touched whose present
// state is the one id left goes back to its state before id. A path
// changed since is a conflict: the revert is refused as a whole (wrapped
// ErrRevertConflict, nothing written to the tree) unless opts.Force, which
// skips them. Content changed outside a session on the touched paths is
// first kept as an outside task that becomes the present (the drift rule),
// so it shows as a conflict. The new task is written through Transition,
// the crash-safe apply of every move. id must be the active task or one
// of its ancestors, and the files must show the active task.
func Revert(j *journal.Journal, root *os.Root, id tasks.ID, opts RevertOptions) (RevertResult, error) {
	res := RevertResult{Reverted: id}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if _, err := FinishIntent(j, root, opts.Progress); err != nil {
		return res, fmt.Errorf("revert %d: %w", id, err)
	}
	for round := 0; ; round++ {
		st, err := j.State()
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		tree, err := j.Tree()
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		if err := revertable(tree, st, id); err != nil {
			return res, err
		}
		t, _ := tree.Get(id)
		layer, err := j.Layer(id)
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		changes, conflicts, expected, err := revertPlan(tree, j, id, st.Active, layer)
		if err != nil {
			return res, err
		}
		target := map[string]NodeState{}
		for _, c := range changes {
			target[c.Path] = c.After
		}
		drifted, err := planDrift(j, root, Plan{Expected: expected, Target: target})
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		if len(drifted) > 0 {
			if round > 0 {
				return res, fmt.Errorf("revert %d: %w: the files keep changing (%s); run it again when nothing else writes to them", id, ErrDrift, drifted[0].Path)
			}
			dc := make([]Change, len(drifted))
			for i, d := range drifted {
				dc[i] = Change{Path: d.Path, Before: d.Expected, After: d.Actual}
			}
			out, err := RecordOutside(j, st.Active, dc, now())
			if err != nil {
				return res, fmt.Errorf("revert %d: %w", id, err)
			}
			res.Outside, res.Drifted = out, drifted
			continue
		}
		res.Conflicts = conflicts
		if len(conflicts) > 0 && !opts.Force {
			return res, fmt.Errorf("%w: revert of task %d refused, nothing was changed: %s changed since it ended, first %s; pass --force to revert the rest and keep them as they are",
				ErrRevertConflict, id, plural.Count(len(conflicts), "path"), conflicts[0].Path)
		}
		if len(changes) == 0 {
			return res, fmt.Errorf("revert %d: nothing to revert: every path task %d touched is already as it was before it, or changed since", id, id)
		}
		rt := tasks.Task{ID: NextTaskID(tree, st), Parent: st.Active, Kind: tasks.KindRevert,
			Summary: tasks.Summarize(fmt.Sprintf("revert %d: %s", id, t.Summary)), Created: now(), Ended: now()}
		rt, err = CreateTask(j, NewTask{Task: rt, Changes: changes})
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		res.Task = rt.ID
		tr, err := Transition(j, root, rt.ID, TransitionOptions{Reason: fmt.Sprintf("revert %d", id), Progress: opts.Progress,
			Cwd: opts.Cwd, RootPath: opts.RootPath, Now: opts.Now})
		res.Transition = tr
		if err != nil {
			return res, fmt.Errorf("revert %d: %w", id, err)
		}
		return res, nil
	}
}

// revertable checks that id can be reverted from the position st.
func revertable(tree *tasks.Tree, st journal.State, id tasks.ID) error {
	if id == tasks.Base {
		return errors.New("revert 0: the base is not a task: give a task id from timeagent log")
	}
	if !tree.Has(id) {
		return fmt.Errorf("revert %d: %w %d", id, tasks.ErrUnknown, id)
	}
	if st.Applied != st.Active {
		return fmt.Errorf("revert %d: the files show task %d, not the active task %d: run timeagent apply (or undo) first", id, st.Applied, st.Active)
	}
	for _, a := range tree.Ancestors(st.Active) {
		if a == id {
			return nil
		}
	}
	return fmt.Errorf("revert %d: task %d is not in the history of the active task %d (timeagent log): switch to a branch that holds it", id, id, st.Active)
}

// revertPlan classifies the paths of id's layer against their state at
// active (present): the changes that undo id, the conflicts, and the
// present state of every path looked at (for the drift check).
func revertPlan(tree *tasks.Tree, j *journal.Journal, id, active tasks.ID, layer []Change) ([]Change, []RevertConflict, map[string]NodeState, error) {
	later, err := MakePlan(tree, j, id, active)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("revert %d: %w", id, err)
	}
	present := map[string]NodeState{}
	for p, s := range later.Target {
		present[p] = s
	}
	expected := map[string]NodeState{}
	for _, c := range layer {
		if _, ok := present[c.Path]; !ok {
			present[c.Path] = c.After
		}
		expected[c.Path] = present[c.Path]
	}
	revert := map[string]Change{}
	conflict := map[string]RevertConflict{}
	for _, c := range layer {
		now := present[c.Path]
		switch {
		case now.Equal(c.After) && !now.Equal(c.Before):
			revert[c.Path] = Change{Path: c.Path, Before: now, After: c.Before}
		case now.Equal(c.Before):
			// already as before id
		default:
			conflict[c.Path] = RevertConflict{Path: c.Path, Present: now, Left: c.After}
		}
	}
	names := sortedKeys(present)
	// A conflict spreads: a path that needs its directory back conflicts
	// with that directory; a directory removed conflicts with content
	// below it that stays.
	for changed := true; changed; {
		changed = false
		for p, c := range revert {
			why := ""
			if c.After.Kind != journal.Absent {
				for d := parentDir(p); d != ""; d = parentDir(d) {
					if _, bad := conflict[d]; bad {
						why = "its directory " + d + " conflicts"
						break
					}
				}
			}
			if why == "" && c.Before.Kind == journal.Dir && c.After.Kind != journal.Dir {
				for i := sort.SearchStrings(names, p+"/"); i < len(names) && strings.HasPrefix(names[i], p+"/"); i++ {
					q := names[i]
					if present[q].Kind == journal.Absent {
						continue
					}
					if r, ok := revert[q]; !ok || r.After.Kind != journal.Absent {
						why = "it holds " + q + ", which stays"
						break
					}
				}
			}
			if why != "" {
				conflict[p] = RevertConflict{Path: p, Present: c.Before, Left: c.Before, Reason: why}
				delete(revert, p)
				changed = true
			}
		}
	}
	changes := make([]Change, 0, len(revert))
	for _, c := range revert {
		changes = append(changes, c)
	}
	sort.Slice(changes, func(a, b int) bool { return changes[a].Path < changes[b].Path })
	conflicts := make([]RevertConflict, 0, len(conflict))
	for _, c := range conflict {
		conflicts = append(conflicts, c)
	}
	sort.Slice(conflicts, func(a, b int) bool { return conflicts[a].Path < conflicts[b].Path })
	return changes, conflicts, expected, nil
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
