// Package graph draws a tree of tasks as lanes, newest first, the way
// `jj log` and `git log --graph` draw history: one row per node, a vertical
// line per branch still open below, and branches joining their parent on the
// parent's own row. It knows nothing of the journal or of tasks: callers give
// ids, parents and marks (→ current, ↯ future, ⎇ branch point). `timeagent
// log` and the time machine menu (internal/menu) both draw with it.
package graph

import (
	"container/heap"
	"sort"
	"strings"
)

// DefaultMaxLanes is how many lanes Layout draws before folding the rest
// into "…": a history where the user went back to the base a thousand times
// has a thousand lanes open above it, and no screen shows them.
const DefaultMaxLanes = 12

// Glyphs of a drawing.
const (
	glyphNode    = "○"
	glyphCurrent = "●"
	glyphLine    = "│"
	glyphCross   = "┼"
	glyphJoin    = "┴"
	glyphLast    = "╯"
	glyphBar     = "─"
	glyphMore    = "… "
)

// Node is one vertex of the tree. A node whose Parent is itself, or is not
// among the nodes given to Layout, is a root (the base).
type Node struct {
	ID, Parent uint64
	// Current marks the active task (→, drawn ●), Future a task redo can
	// reach (↯), Branch a task with more than one child (⎇).
	Current, Future, Branch bool
}

// Markers is the node's two-character marker column: → or ↯ or a space,
// then ⎇ or a space.
func (n Node) Markers() string {
	m := " "
	switch {
	case n.Current:
		m = "→"
	case n.Future:
		m = "↯"
	}
	if n.Branch {
		return m + "⎇"
	}
	return m + " "
}

// Row is one drawn line: the node, the lane it sits in and the graph drawn
// left of it, padded to the same width (in cells) on every row.
type Row struct {
	Node
	Lane  int
	Graph string
}

// Layout orders nodes newest first — every node above its parent, each
// branch contiguous, the newest branch on top, siblings' subtrees in
// descending order of their first id — and draws the lanes, at most
// maxLanes of them (0 means DefaultMaxLanes).
func Layout(nodes []Node, maxLanes int) []Row {
	if maxLanes <= 0 {
		maxLanes = DefaultMaxLanes
	}
	order := topoOrder(nodes)
	l := lanes{expect: map[uint64][]int{}}
	rows := make([]Row, 0, len(order))
	cells := make([][]string, 0, len(order))
	width := 0
	for _, n := range order {
		col, c := l.place(n, maxLanes)
		width = max(width, len(c))
		rows = append(rows, Row{Node: n.Node, Lane: col})
		cells = append(cells, c)
	}
	var b strings.Builder
	for i, c := range cells {
		b.Reset()
		for _, s := range c {
			b.WriteString(s)
		}
		for k := len(c); k < width; k++ {
			b.WriteString("  ")
		}
		rows[i].Graph = b.String()
	}
	return rows
}

// placed is a node with whether it is a root of the drawing.
type placed struct {
	Node
	root bool
}

// topoOrder is the reversed pre-order of the tree with children visited
// oldest first: descendants before ancestors, subtrees contiguous.
func topoOrder(nodes []Node) []placed {
	byID := make(map[uint64]bool, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = true
	}
	children := map[uint64][]Node{}
	var roots []Node
	for _, n := range nodes {
		if n.Parent == n.ID || !byID[n.Parent] {
			roots = append(roots, n)
			continue
		}
		children[n.Parent] = append(children[n.Parent], n)
	}
	less := func(s []Node) { sort.Slice(s, func(i, j int) bool { return s[i].ID < s[j].ID }) }
	less(roots)
	for _, c := range children {
		less(c)
	}
	pre := make([]placed, 0, len(nodes))
	isRoot := map[uint64]bool{}
	for _, r := range roots {
		isRoot[r.ID] = true
	}
	// An explicit stack: a history can be 10,000 tasks deep.
	stack := make([]Node, 0, 64)
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, roots[i])
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pre = append(pre, placed{Node: n, root: isRoot[n.ID]})
		c := children[n.ID]
		for i := len(c) - 1; i >= 0; i-- {
			stack = append(stack, c[i])
		}
	}
	for i, j := 0, len(pre)-1; i < j; i, j = i+1, j-1 {
		pre[i], pre[j] = pre[j], pre[i]
	}
	return pre
}

// lanes are the open branches while drawing top to bottom: each slot waits
// for the node it leads to (its parent); a free slot is reused by the next
// new branch, the leftmost first.
type lanes struct {
	used   []bool
	free   freeSlots
	high   int              // slots up to the last used one
	expect map[uint64][]int // node id → slots waiting for it, ascending
}

// place draws n's row, at most maxLanes slots of it, and updates the
// lanes; it returns n's slot and the row's cells (two columns each). Its
// cost is the drawn width plus the branches joining n, never the number
// of open lanes: a tree of 10,000 branches from the base draws in
// milliseconds.
func (l *lanes) place(n placed, maxLanes int) (int, []string) {
	joining := l.expect[n.ID]
	delete(l.expect, n.ID)
	col := -1
	if len(joining) > 0 {
		col = joining[0]
	} else {
		if l.free.Len() > 0 {
			col = heap.Pop(&l.free).(int)
		} else {
			l.used = append(l.used, false)
			col = len(l.used) - 1
		}
		l.used[col] = true
		l.high = max(l.high, col+1)
	}
	last := col
	if len(joining) > 1 {
		last = joining[len(joining)-1]
	}
	merge := map[int]bool{}
	for _, j := range joining[min(1, len(joining)):] {
		if j < maxLanes {
			merge[j] = true
		}
	}
	for l.high > 0 && !l.used[l.high-1] {
		l.high--
	}
	width := min(l.high, maxLanes)
	cells := make([]string, width, width+1)
	for i := 0; i < width; i++ {
		inside := i > col && i < last
		var g string
		switch {
		case i == col:
			g = glyphNode
			if n.Current {
				g = glyphCurrent
			}
		case merge[i] && i == last:
			g = glyphLast
		case merge[i]:
			g = glyphJoin
		case l.used[i] && inside:
			g = glyphCross
		case l.used[i]:
			g = glyphLine
		case inside:
			g = glyphBar
		default:
			g = " "
		}
		sep := " "
		if i >= col && i < last {
			sep = glyphBar
		}
		cells[i] = g + sep
	}
	if l.high > maxLanes {
		cells = append(cells, glyphMore)
	}
	for _, j := range joining[min(1, len(joining)):] {
		l.release(j)
	}
	if n.root {
		l.release(col)
		return col, cells
	}
	l.expect[n.Parent] = insertSorted(l.expect[n.Parent], col)
	return col, cells
}

func (l *lanes) release(slot int) {
	l.used[slot] = false
	heap.Push(&l.free, slot)
}

// freeSlots is a min-heap of free slot numbers.
type freeSlots []int

func (f freeSlots) Len() int           { return len(f) }
func (f freeSlots) Less(i, j int) bool { return f[i] < f[j] }
func (f freeSlots) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *freeSlots) Push(x any)        { *f = append(*f, x.(int)) }
func (f *freeSlots) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}

func insertSorted(s []int, v int) []int {
	i := sort.SearchInts(s, v)
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
