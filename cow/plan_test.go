package cow

import (
	"errors"
	"fmt"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"
)

// layerMap is a LayerSource over hand-made layers.
type layerMap map[tasks.ID][]Change

func (l layerMap) Layer(id tasks.ID) ([]Change, error) { return l[id], nil }

// branchedTree is:
//
//	base ─ 1 ─ 2 ─ 3
//	│          └ 4 ─ 5
//	└ 6
func branchedTree(t *testing.T) (*tasks.Tree, layerMap) {
	t.Helper()
	tree, err := tasks.NewTree([]tasks.Task{
		{ID: 1, Parent: 0}, {ID: 2, Parent: 1}, {ID: 3, Parent: 2},
		{ID: 4, Parent: 2}, {ID: 5, Parent: 4}, {ID: 6, Parent: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	A, B, C, D, E := fileState("A", 0o644), fileState("B", 0o644), fileState("C", 0o644), fileState("D", 0o644), fileState("E", 0o644)
	Y1, Z, W := fileState("Y1", 0o644), fileState("Z", 0o600), linkState("W")
	none := NodeState{}
	layers := layerMap{
		1: {{Path: "x", Before: none, After: A}, {Path: "y", Before: none, After: Y1}},
		2: {{Path: "x", Before: A, After: B}},
		3: {{Path: "x", Before: B, After: C}, {Path: "z", Before: none, After: Z}},
		4: {{Path: "w", Before: none, After: W}, {Path: "y", Before: Y1, After: none}},
		5: {{Path: "x", Before: B, After: D}},
		6: {{Path: "q", Before: none, After: dirState(0o755)}, {Path: "x", Before: none, After: E}},
	}
	return tree, layers
}

func TestMakePlan(t *testing.T) {
	tree, layers := branchedTree(t)
	A, C, D, E := fileState("A", 0o644), fileState("C", 0o644), fileState("D", 0o644), fileState("E", 0o644)
	Y1, Z, W := fileState("Y1", 0o644), fileState("Z", 0o600), linkState("W")
	none := NodeState{}
	tests := []struct {
		a, b             tasks.ID
		expected, target map[string]NodeState
	}{
		{3, 5, map[string]NodeState{"x": C, "z": Z, "y": Y1, "w": none},
			map[string]NodeState{"x": D, "z": none, "y": none, "w": W}},
		{5, 3, map[string]NodeState{"x": D, "y": none, "w": W, "z": none},
			map[string]NodeState{"x": C, "y": Y1, "w": none, "z": Z}},
		{5, 6, map[string]NodeState{"x": D, "y": none, "w": W, "q": none},
			map[string]NodeState{"x": E, "y": none, "w": none, "q": dirState(0o755)}},
		{3, 0, map[string]NodeState{"x": C, "y": Y1, "z": Z},
			map[string]NodeState{"x": none, "y": none, "z": none}},
		{0, 1, map[string]NodeState{"x": none, "y": none},
			map[string]NodeState{"x": A, "y": Y1}},
		{2, 2, map[string]NodeState{}, map[string]NodeState{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d->%d", tt.a, tt.b), func(t *testing.T) {
			plan, err := MakePlan(tree, layers, tt.a, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffStates(tt.expected, plan.Expected); d != "" || len(plan.Expected) != len(tt.expected) {
				t.Errorf("Expected differs (%d paths):\n%s", len(plan.Expected), d)
			}
			if d := diffStates(tt.target, plan.Target); d != "" || len(plan.Target) != len(tt.target) {
				t.Errorf("Target differs (%d paths):\n%s", len(plan.Target), d)
			}
		})
	}
}

// stateAt is the plain definition: the After of the nearest task at or above
// id that touched p, else the Before of the topmost task touching p on any
// branch (the base state).
func stateAt(tree *tasks.Tree, layers layerMap, id tasks.ID, p string) NodeState {
	for _, a := range tree.Ancestors(id) {
		for _, c := range layers[a] {
			if c.Path == p {
				return c.After
			}
		}
	}
	for _, task := range tree.All() {
		if tree.Parent(task.ID) != tasks.Base {
			continue
		}
		for _, c := range layers[task.ID] {
			if c.Path == p {
				return c.Before
			}
		}
	}
	return NodeState{}
}

func TestMakePlanAgreesWithDefinition(t *testing.T) {
	tree, layers := branchedTree(t)
	ids := []tasks.ID{0, 1, 2, 3, 4, 5, 6}
	for _, a := range ids {
		for _, b := range ids {
			plan, err := MakePlan(tree, layers, a, b)
			if err != nil {
				t.Fatal(err)
			}
			for p := range plan.Target {
				if w := stateAt(tree, layers, a, p); !w.Equal(plan.Expected[p]) {
					t.Errorf("%d->%d: Expected[%s] = %s, want %s", a, b, p, fmtState(plan.Expected[p]), fmtState(w))
				}
				if w := stateAt(tree, layers, b, p); !w.Equal(plan.Target[p]) {
					t.Errorf("%d->%d: Target[%s] = %s, want %s", a, b, p, fmtState(plan.Target[p]), fmtState(w))
				}
			}
		}
	}
}

func TestMakePlanRejectsBadPaths(t *testing.T) {
	tree, layers := branchedTree(t)
	layers[5] = append(layers[5], Change{Path: "../etc/passwd", After: fileState("x", 0o644)})
	if _, err := MakePlan(tree, layers, 3, 5); !errors.Is(err, ErrBadPath) {
		t.Errorf("err = %v, want ErrBadPath", err)
	}
	if _, err := MakePlan(tree, layers, 0, 99); !errors.Is(err, tasks.ErrUnknown) {
		t.Errorf("err = %v, want ErrUnknown", err)
	}
}
