package cow

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// MakePlan walks the tree from a to b and simulates the layers on the way.
//
// The state of a path at a task is the After of the nearest task at or above
// it (towards the base) that touched the path. Walking from a up to the
// common ancestor, each task's Before undoes it; walking down to b, each
// task's After redoes it. So, for every path p touched on the walk:
//
//   - Target[p] is the last state the simulation leaves: the After of the
//     last down task touching p, else the Before of the up task touching p
//     closest to the common ancestor.
//   - Expected[p] (the state at a) is the After of the up task touching p
//     closest to a; if no up task touches p, the state at a equals the state
//     at the common ancestor, which is the Before of the first down task
//     touching p.
//
// Every path read from a layer is validated (ErrBadPath), and the layer of
// a sealed task must hold as many paths as the task records (Files): a
// layer that cannot be read whole is a wrapped journal.ErrCorrupt, never a
// plan that silently restores less.
func MakePlan(tree *tasks.Tree, layers LayerSource, a, b tasks.ID) (Plan, error) {
	walk, err := tree.Path(a, b)
	if err != nil {
		return Plan{}, fmt.Errorf("plan %d -> %d: %w", a, b, err)
	}
	plan := Plan{Walk: walk, Expected: map[string]NodeState{}, Target: map[string]NodeState{}}
	visit := func(id tasks.ID, up bool) error {
		changes, err := layers.Layer(id)
		if err != nil {
			return fmt.Errorf("plan %d -> %d: layer of task %d: %w", a, b, id, err)
		}
		if t, ok := tree.Get(id); ok && !t.Ended.IsZero() && len(changes) != t.Files {
			return fmt.Errorf("plan %d -> %d: %w: the layer of task %d holds %s but the task was sealed with %d: records were lost",
				a, b, journal.ErrCorrupt, id, plural.Count(len(changes), "path"), t.Files)
		}
		for _, c := range changes {
			if !ValidPath(c.Path) {
				return fmt.Errorf("plan %d -> %d: task %d: %q: %w", a, b, id, c.Path, ErrBadPath)
			}
			if _, seen := plan.Expected[c.Path]; !seen {
				if up {
					plan.Expected[c.Path] = c.After
				} else {
					plan.Expected[c.Path] = c.Before
				}
			}
			if up {
				plan.Target[c.Path] = c.Before
			} else {
				plan.Target[c.Path] = c.After
			}
		}
		return nil
	}
	for _, id := range walk.Up {
		if err := visit(id, true); err != nil {
			return Plan{}, err
		}
	}
	for _, id := range walk.Down {
		if err := visit(id, false); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

// Paths returns the touched paths of the plan, sorted.
func (p Plan) Paths() []string { return sortedKeys(p.Target) }

// Changes returns the paths whose target differs from their expected state,
// as changes from Expected to Target, sorted by path.
func (p Plan) Changes() []Change {
	var out []Change
	for _, path := range sortedKeys(p.Target) {
		if e, t := p.Expected[path], p.Target[path]; !e.Equal(t) {
			out = append(out, Change{Path: path, Before: e, After: t})
		}
	}
	return out
}

// refused explains a move refused before it changed anything because its
// plan could not be made (a layer on the way cannot be read whole).
func refused(reason string, from, to tasks.ID, err error) error {
	if reason == "" {
		reason = "apply"
	}
	return fmt.Errorf("%s (task %d to %d) refused, nothing was changed: %w", reason, from, to, err)
}
