package cow

import (
	"errors"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// TestTransitionLostLayerRecords: a sealed task's layer that lost records
// (it holds fewer paths than the task was sealed with) cannot be planned:
// a move through it is refused with the task named and ErrCorrupt, the tree
// and the position unchanged; moves that do not walk through it still work.
func TestTransitionLostLayerRecords(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a0\n", 0o644)
	root := openRoot(t, dir)
	j := openJournal(t, dir)
	trees := map[tasks.ID]map[string]NodeState{0: scanStates(t, root, j)}
	id, tree := runSession(t, j, root, func() {
		write(t, dir, "a.txt", "a1\n", 0o644)
		write(t, dir, "n.txt", "n\n", 0o644)
	})
	trees[id] = tree
	id, tree = runSession(t, j, root, func() {
		write(t, dir, "a.txt", "a2\n", 0o644)
		write(t, dir, "m.txt", "m\n", 0o644)
	})
	trees[id] = tree
	mustDo(t, j.DeleteChanges(2, []string{"a.txt"}))

	for _, to := range []tasks.ID{1, 0} {
		_, err := Transition(j, root, to, TransitionOptions{Reason: "undo"})
		t.Logf("refused: %v", err)
		if !errors.Is(err, journal.ErrCorrupt) {
			t.Fatalf("undo to %d through a layer that lost records: err = %v, want ErrCorrupt", to, err)
		}
		for _, want := range []string{"undo (task 2 to", "refused, nothing was changed", "task 2 holds 1 path but", "sealed with 2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		assertTree(t, root, j, trees[2])
		assertState(t, j, 2, 2)
	}
	// Task 1's layer is whole: once at task 1 by other means the way to the
	// base does not pass task 2.
	if _, err := MakePlan(mustTree(t, j), j, 1, 0); err != nil {
		t.Fatalf("plan 1 -> 0: %v", err)
	}
}

func mustTree(t *testing.T, j *journal.Journal) *tasks.Tree {
	t.Helper()
	tree, err := j.Tree()
	mustDo(t, err)
	return tree
}
