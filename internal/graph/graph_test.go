package graph

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// tree builds nodes from "id:parent" pairs; the base 0 is added.
func tree(active uint64, pairs ...[2]uint64) []Node {
	nodes := []Node{{ID: 0, Parent: 0, Current: active == 0}}
	kids := map[uint64]int{}
	for _, p := range pairs {
		kids[p[1]]++
	}
	nodes[0].Branch = kids[0] > 1
	for _, p := range pairs {
		nodes = append(nodes, Node{ID: p[0], Parent: p[1], Current: p[0] == active, Branch: kids[p[0]] > 1})
	}
	return nodes
}

func render(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %s %d\n", r.Graph, r.Markers(), r.ID)
	}
	return b.String()
}

func TestLayoutGolden(t *testing.T) {
	cases := []struct {
		name  string
		nodes []Node
		lanes int
	}{
		{"linear", tree(2, [2]uint64{1, 0}, [2]uint64{2, 1}, [2]uint64{3, 2}), 0},
		{"branch", tree(4, [2]uint64{1, 0}, [2]uint64{2, 1}, [2]uint64{3, 2}, [2]uint64{4, 1}, [2]uint64{5, 4}), 0},
		{"three-way", tree(1, [2]uint64{1, 0}, [2]uint64{2, 1}, [2]uint64{3, 1}, [2]uint64{4, 1}, [2]uint64{5, 2}), 0},
		{"base-branches", tree(0, [2]uint64{1, 0}, [2]uint64{2, 0}, [2]uint64{3, 1}, [2]uint64{4, 0}), 0},
		{"nested", tree(6, [2]uint64{1, 0}, [2]uint64{2, 1}, [2]uint64{3, 2}, [2]uint64{4, 2}, [2]uint64{5, 1}, [2]uint64{6, 5}, [2]uint64{7, 3}), 0},
		{"folded", tree(0, [2]uint64{1, 0}, [2]uint64{2, 0}, [2]uint64{3, 0}, [2]uint64{4, 0}, [2]uint64{5, 0}), 3},
		{"empty", tree(0), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := render(Layout(c.nodes, c.lanes))
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("drawing differs from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestLayoutInvariants checks, on random trees, what every drawing must
// keep: each node once, above its parent, a subtree's rows contiguous, one
// width for all rows, and a vertical line between a node and its parent.
func TestLayoutInvariants(t *testing.T) {
	seed := uint64(1)
	next := func(n uint64) uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	for round := 0; round < 200; round++ {
		size := 1 + next(40)
		pairs := [][2]uint64{}
		for id := uint64(1); id <= size; id++ {
			pairs = append(pairs, [2]uint64{id, next(id)})
		}
		nodes := tree(next(size+1), pairs...)
		rows := Layout(nodes, 1000)
		if len(rows) != len(nodes) {
			t.Fatalf("round %d: %d rows for %d nodes", round, len(rows), len(nodes))
		}
		at := map[uint64]int{}
		for i, r := range rows {
			if _, dup := at[r.ID]; dup {
				t.Fatalf("round %d: node %d drawn twice", round, r.ID)
			}
			at[r.ID] = i
			if w := len([]rune(r.Graph)); w != len([]rune(rows[0].Graph)) {
				t.Fatalf("round %d: row %d is %d cells wide, row 0 %d", round, i, w, len([]rune(rows[0].Graph)))
			}
		}
		for _, r := range rows {
			if r.ID == 0 {
				continue
			}
			pi := at[r.Parent]
			if pi <= at[r.ID] {
				t.Fatalf("round %d: node %d is not above its parent %d\n%s", round, r.ID, r.Parent, render(rows))
			}
			// The lane goes down from the node to the parent's row.
			for k := at[r.ID] + 1; k < pi; k++ {
				cell := []rune(rows[k].Graph)[2*r.Lane]
				if !strings.ContainsRune("│┼", cell) {
					t.Fatalf("round %d: no line from %d down to %d at row %d (found %q)\n%s", round, r.ID, r.Parent, k, cell, render(rows))
				}
			}
		}
	}
}

func TestMarkers(t *testing.T) {
	for _, c := range []struct {
		n    Node
		want string
	}{
		{Node{}, "  "},
		{Node{Current: true}, "→ "},
		{Node{Future: true}, "↯ "},
		{Node{Current: true, Branch: true}, "→⎇"},
		{Node{Future: true, Branch: true}, "↯⎇"},
		{Node{Branch: true}, " ⎇"},
	} {
		if got := c.n.Markers(); got != c.want {
			t.Errorf("%+v: Markers() = %q, want %q", c.n, got, c.want)
		}
	}
}
