// Package lanes lays out a tree as the lanes of a text graph, as
// `git log --graph` and `jj log` draw history: one row per node, in the
// order given (newest first: every node before its parent), each node in
// a lane, and a branch's lane joining its parent's lane on a line drawn
// above the parent. It is a pure function of ids and parents: it knows
// nothing of tasks, journals, colours or terminals.
package lanes

// Node is one row's node: its id and its parent's. A node whose parent is
// not among the nodes laid out (the base, or a parent filtered away) ends
// its lane.
type Node struct {
	ID, Parent uint64
}

// Cell is one lane's part of a line, two columns wide when drawn.
type Cell uint8

// The cells of a line.
const (
	Empty Cell = iota // no lane here
	Pass              // a lane passing by: "│ "
	Mark              // the row's node: drawn as the caller's glyph
	Fork              // the lane that branches join, on the join line: "├─"
	Join              // a branch joining, with more to its right: "┴─"
	Last              // the rightmost branch joining: "╯ "
	Cross             // a lane that a join line crosses: "┼─"
	Over              // no lane, under a join line: "──"
)

var cellText = [...]string{Empty: "  ", Pass: "│ ", Mark: "○ ", Fork: "├─", Join: "┴─", Last: "╯ ", Cross: "┼─", Over: "──"}

// String is the cell as drawn (Mark as "○ ").
func (c Cell) String() string { return cellText[c] }

// Row is where one node is drawn.
type Row struct {
	// Lane is the node's lane (0 is the leftmost).
	Lane int
	// Joins is the line drawn above the node where branches join its
	// lane; nil when none do.
	Joins []Cell
	// Line is the node's own line: Mark in its lane, the other lanes
	// passing by.
	Line []Cell
}

// Draw renders cells with mark as the node's glyph, each cell two columns
// wide, without trailing blanks.
func Draw(cells []Cell, mark string) string {
	return string(AppendDraw(make([]byte, 0, 4*len(cells)), cells, mark))
}

// AppendDraw is Draw appending to b (a log of thousands of rows reuses one
// buffer).
func AppendDraw(b []byte, cells []Cell, mark string) []byte {
	n := len(b)
	for _, c := range cells {
		if c == Mark {
			b = append(b, mark...)
			b = append(b, ' ')
			continue
		}
		b = append(b, c.String()...)
	}
	for len(b) > n && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// Width is the number of lanes of the widest line of rows.
func Width(rows []Row) int {
	w := 0
	for _, r := range rows {
		w = max(w, len(r.Line), len(r.Joins))
	}
	return w
}

// Layout places nodes, given newest first (each before its parent), in
// lanes. A node no lane is waiting for starts a new lane, in the leftmost
// free one; the lanes waiting for the same node join the leftmost of them
// on the line above it.
func Layout(nodes []Node) []Row {
	index := make(map[uint64]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	const free = ^uint64(0)
	var wait []uint64 // wait[l]: the id lane l goes down to, or free
	rows := make([]Row, 0, len(nodes))
	for i, n := range nodes {
		var into []int
		for l, id := range wait {
			if id == n.ID && id != free {
				into = append(into, l)
			}
		}
		var row Row
		if len(into) == 0 {
			row.Lane = len(wait)
			for l, id := range wait {
				if id == free {
					row.Lane = l
					break
				}
			}
			if row.Lane == len(wait) {
				wait = append(wait, free)
			}
		} else {
			row.Lane = into[0]
		}
		if len(into) > 1 {
			row.Joins = joinLine(wait, into, n.ID)
			for _, l := range into[1:] {
				wait[l] = free
			}
		}
		// The parent must come later for the lane to wait for it.
		p, ok := index[n.Parent]
		parentLater := ok && p > i
		row.Line = make([]Cell, len(wait))
		for l, id := range wait {
			switch {
			case l == row.Lane:
				row.Line[l] = Mark
			case id != free:
				row.Line[l] = Pass
			}
		}
		row.Line = trim(row.Line)
		if parentLater {
			wait[row.Lane] = n.Parent
		} else {
			wait[row.Lane] = free
		}
		for len(wait) > 0 && wait[len(wait)-1] == free {
			wait = wait[:len(wait)-1]
		}
		rows = append(rows, row)
	}
	return rows
}

// joinLine is the line where the lanes into (ascending, more than one)
// join the first of them, the node id they all wait for.
func joinLine(wait []uint64, into []int, id uint64) []Cell {
	const free = ^uint64(0)
	first, last := into[0], into[len(into)-1]
	cells := make([]Cell, len(wait))
	for l, w := range wait {
		switch {
		case l == first:
			cells[l] = Fork
		case l == last:
			cells[l] = Last
		case l > first && l < last && w == id:
			cells[l] = Join
		case l > first && l < last && w != free:
			cells[l] = Cross
		case l > first && l < last:
			cells[l] = Over
		case w != free:
			cells[l] = Pass
		}
	}
	return trim(cells)
}

func trim(cells []Cell) []Cell {
	for len(cells) > 0 && cells[len(cells)-1] == Empty {
		cells = cells[:len(cells)-1]
	}
	return cells
}
