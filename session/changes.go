package session

import (
	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// SessionChanges is the net change of a session: from its base task to its
// last task.
func SessionChanges(j *journal.Journal, s journal.Session) ([]journal.Change, error) {
	if len(s.Tasks) == 0 {
		return nil, nil
	}
	return NetChanges(j, s.Base, s.Tasks[len(s.Tasks)-1])
}

// NetChanges is the change of every path from task a to task b, dropping
// paths that end as they started.
func NetChanges(j *journal.Journal, a, b tasks.ID) ([]journal.Change, error) {
	tree, err := j.Tree()
	if err != nil {
		return nil, err
	}
	plan, err := cow.MakePlan(tree, j, a, b)
	if err != nil {
		return nil, err
	}
	return diffPlan(plan), nil
}

// diffPlan lists the paths of a plan whose target differs from the expected
// state, sorted by path.
func diffPlan(plan cow.Plan) []journal.Change {
	var out []journal.Change
	for p, after := range plan.Target {
		before := plan.Expected[p]
		if !before.Equal(after) {
			out = append(out, journal.Change{Path: p, Before: before, After: after})
		}
	}
	sortChanges(out)
	return out
}
