package lanes

import (
	"strings"
	"testing"
)

// draw renders rows as the log draws them: the join line, then the node's
// line with its id.
func draw(nodes []Node, rows []Row) string {
	var b strings.Builder
	for i, r := range rows {
		if r.Joins != nil {
			b.WriteString(Draw(r.Joins, "") + "\n")
		}
		line := Draw(r.Line, "○")
		b.WriteString(line + strings.Repeat(" ", 2*Width(rows)-len([]rune(line))) + " " + string(rune('0'+nodes[i].ID)) + "\n")
	}
	return b.String()
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []Node // newest first; 0 is the base
		want  string
	}{
		{"empty", nil, ""},
		{"base only", []Node{{0, 0}}, "○  0\n"},
		{"a line", []Node{{2, 1}, {1, 0}, {0, 0}}, "○  2\n○  1\n○  0\n"},
		{"a branch after an undo", []Node{{5, 4}, {4, 1}, {3, 2}, {2, 1}, {1, 0}, {0, 0}}, `○    5
○    4
│ ○  3
│ ○  2
├─╯
○    1
○    0
`},
		{"three branches at the base", []Node{{3, 0}, {2, 0}, {1, 0}, {0, 0}}, `○      3
│ ○    2
│ │ ○  1
├─┴─╯
○      0
`},
		{"a join crossing a lane", []Node{{6, 3}, {5, 2}, {4, 3}, {3, 1}, {2, 1}, {1, 0}, {0, 0}}, `○      6
│ ○    5
│ │ ○  4
├─┼─╯
○ │    3
│ ○    2
├─╯
○      1
○      0
`},
		{"a freed lane is reused", []Node{{9, 3}, {8, 2}, {7, 3}, {6, 1}, {3, 1}, {5, 1}, {2, 1}, {1, 0}, {0, 0}}, `○        9
│ ○      8
│ │ ○    7
│ │ │ ○  6
├─┼─╯ │
○ │   │  3
│ │ ○ │  5
│ ○ │ │  2
├─┴─┴─╯
○        1
○        0
`},
		{"a parent not laid out ends the lane", []Node{{3, 9}, {2, 1}, {1, 0}}, "○  3\n○  2\n○  1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Layout(tc.nodes)
			if len(rows) != len(tc.nodes) {
				t.Fatalf("%d rows for %d nodes", len(rows), len(tc.nodes))
			}
			if got := draw(tc.nodes, rows); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestLayoutLanes: each node's lane holds its mark, and a parent sits in
// the lane of its first child (the leftmost), as the drawing shows.
func TestLayoutLanes(t *testing.T) {
	nodes := []Node{{5, 4}, {4, 1}, {3, 2}, {2, 1}, {1, 0}, {0, 0}}
	rows := Layout(nodes)
	wantLane := []int{0, 0, 1, 1, 0, 0}
	for i, r := range rows {
		if r.Lane != wantLane[i] || r.Line[r.Lane] != Mark {
			t.Errorf("node %d: lane %d, line %v; want lane %d", nodes[i].ID, r.Lane, r.Line, wantLane[i])
		}
	}
	if Width(rows) != 2 {
		t.Errorf("width %d, want 2", Width(rows))
	}
}

// BenchmarkLayout lays out a history of 10,000 tasks with a branch every
// tenth task.
func BenchmarkLayout(b *testing.B) {
	nodes := make([]Node, 0, 10001)
	for id := uint64(10000); id > 0; id-- {
		parent := id - 1
		if id%10 == 0 {
			parent = id - 5
		}
		nodes = append(nodes, Node{id, parent})
	}
	nodes = append(nodes, Node{0, 0})
	for b.Loop() {
		Layout(nodes)
	}
}
