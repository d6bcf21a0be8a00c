package tasks

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"
)

// ID identifies a task. IDs start at 1 and are never reused; 0 is the base,
// the state before any recorded task.
type ID uint64

// Base is the pseudo-task that stands for the tree before any task.
const Base ID = 0

// Kind says how a task's layer came to be.
type Kind string

// Task kinds.
const (
	// KindAgent is work done inside a session.
	KindAgent Kind = "agent"
	// KindOutside is content found changed outside any session (drift), kept so
	// nothing is lost.
	KindOutside Kind = "outside"
	// KindRevert is a task `timeagent revert` made: it undoes one earlier
	// task's changes on top of the present.
	KindRevert Kind = "revert"
)

// Task is one unit of work in the tree.
type Task struct {
	ID      ID        `json:"id"`
	Parent  ID        `json:"parent"`
	Summary string    `json:"summary"`
	Session uint64    `json:"session"`
	Kind    Kind      `json:"kind"`
	Created time.Time `json:"created"`
	Ended   time.Time `json:"ended,omitempty"`
	// Files is the number of paths in the task's layer, filled when sealed.
	Files int `json:"files"`
	// Visit is a logical clock: the value of the tree's visit counter when this
	// task was last made active (or was on the path to the active task). Redo
	// follows the child with the highest Visit.
	Visit uint64 `json:"visit"`
}

// Status of a task relative to the active one.
type Status string

// Statuses, as shown by log.
const (
	StatusPast    Status = "past"    // an ancestor of the active task
	StatusCurrent Status = "current" // the active task itself
	StatusFuture  Status = "future"  // a descendant of the active task (redoable)
	StatusOther   Status = "other"   // on another branch
)

// Sentinel errors callers branch on.
var (
	ErrAtBase  = errors.New("already at the base: there is nothing to undo")
	ErrAtLeaf  = errors.New("nothing to redo: the active task has no later task")
	ErrUnknown = errors.New("unknown task")
)

// SummaryMax is how many characters of a prompt or command line a summary keeps.
const SummaryMax = 80

// Summarize cuts s to SummaryMax characters (runes), on one line.
func Summarize(s string) string {
	out := make([]rune, 0, SummaryMax)
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		if len(out) == SummaryMax {
			break
		}
		out = append(out, r)
	}
	return string(out)
}

// Tree is an in-memory view of all tasks of a root.
type Tree struct {
	tasks    map[ID]*Task
	children map[ID][]ID
	order    []*Task // every task, oldest (lowest id) first
}

// NewTree builds a tree from task records in any order. It fails when a
// task's parent is missing or a cycle exists, which means a damaged journal.
func NewTree(list []Task) (*Tree, error) {
	return AdoptTree(append([]Task(nil), list...)) // one allocation for every task
}

// AdoptTree is NewTree without the copy: the tree keeps own, which the
// caller must not use afterwards. For a list read only to build the tree
// (a history of thousands of tasks, read on every listing).
func AdoptTree(own []Task) (*Tree, error) {
	t := &Tree{tasks: make(map[ID]*Task, len(own)), children: make(map[ID][]ID, len(own)), order: make([]*Task, 0, len(own))}
	for i := range own {
		task := &own[i]
		if task.ID == Base {
			return nil, fmt.Errorf("task tree: a task has the reserved id 0")
		}
		if _, dup := t.tasks[task.ID]; dup {
			return nil, fmt.Errorf("task tree: task %d recorded twice", task.ID)
		}
		t.tasks[task.ID] = task
		t.order = append(t.order, task)
	}
	// The journal lists tasks by id already; other callers may not.
	if !slices.IsSortedFunc(t.order, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) }) {
		slices.SortFunc(t.order, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) })
	}
	for _, task := range t.order {
		if task.Parent != Base {
			if _, ok := t.tasks[task.Parent]; !ok {
				return nil, fmt.Errorf("task tree: task %d has missing parent %d", task.ID, task.Parent)
			}
		}
		if task.Parent >= task.ID {
			return nil, fmt.Errorf("task tree: task %d has parent %d, which is not older", task.ID, task.Parent)
		}
		t.children[task.Parent] = append(t.children[task.Parent], task.ID)
	}
	// Children were added in id order: each list is sorted already.
	return t, nil
}

// Has reports whether id is the base or a known task.
func (t *Tree) Has(id ID) bool {
	if id == Base {
		return true
	}
	_, ok := t.tasks[id]
	return ok
}

// Get returns the task with id.
func (t *Tree) Get(id ID) (Task, bool) {
	task, ok := t.tasks[id]
	if !ok {
		return Task{}, false
	}
	return *task, true
}

// MaxID is the highest task id, Base when there is no task.
func (t *Tree) MaxID() ID {
	if len(t.order) == 0 {
		return Base
	}
	return t.order[len(t.order)-1].ID
}

// Len is the number of tasks (the base not counted).
func (t *Tree) Len() int { return len(t.order) }

// Each yields every task ordered by id, without copying the list first
// (a listing of a long history).
func (t *Tree) Each() iter.Seq[Task] {
	return func(yield func(Task) bool) {
		for _, task := range t.order {
			if !yield(*task) {
				return
			}
		}
	}
}

// All returns every task ordered by id.
func (t *Tree) All() []Task {
	out := make([]Task, len(t.order))
	for i, task := range t.order {
		out[i] = *task
	}
	return out
}

// Children returns the ids of id's children, oldest first.
func (t *Tree) Children(id ID) []ID {
	return append([]ID(nil), t.children[id]...)
}

// HasBranches reports whether id is a branch point (more than one child).
func (t *Tree) HasBranches(id ID) bool { return len(t.children[id]) > 1 }

// Parent returns the parent of id; the base's parent is the base.
func (t *Tree) Parent(id ID) ID {
	if task, ok := t.tasks[id]; ok {
		return task.Parent
	}
	return Base
}

// Ancestors returns id, its parent, … up to but not including the base.
func (t *Tree) Ancestors(id ID) []ID {
	var out []ID
	for id != Base {
		out = append(out, id)
		id = t.Parent(id)
	}
	return out
}

// Depth is the number of tasks between the base and id, id included.
func (t *Tree) Depth(id ID) int { return len(t.Ancestors(id)) }

// Undo returns the task n steps up from from. Going past the base is refused
// as a whole.
func (t *Tree) Undo(from ID, n int) (ID, error) {
	if err := t.check(from); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("undo: count must be at least 1, got %d", n)
	}
	if from == Base {
		return 0, ErrAtBase
	}
	if d := t.Depth(from); n > d {
		return 0, fmt.Errorf("%w: %s requested, only %s above the base", ErrAtBase, count(n, "step"), count(d, "task"))
	}
	id := from
	for i := 0; i < n; i++ {
		id = t.Parent(id)
	}
	return id, nil
}

// Redo returns the task n steps down from from, each step following the child
// visited most recently (the newest child when none was visited).
func (t *Tree) Redo(from ID, n int) (ID, error) {
	if err := t.check(from); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("redo: count must be at least 1, got %d", n)
	}
	id := from
	for i := 0; i < n; i++ {
		next, ok := t.redoChild(id)
		if !ok {
			if i == 0 {
				return 0, ErrAtLeaf
			}
			return 0, fmt.Errorf("%w: %s requested, only %d available", ErrAtLeaf, count(n, "step"), i)
		}
		id = next
	}
	return id, nil
}

func (t *Tree) redoChild(id ID) (ID, bool) {
	kids := t.children[id]
	if len(kids) == 0 {
		return 0, false
	}
	best := kids[len(kids)-1]
	for _, k := range kids {
		kv, bv := t.tasks[k].Visit, t.tasks[best].Visit
		if kv > bv || (kv == bv && k > best) {
			best = k
		}
	}
	return best, true
}

// Switch validates target as a destination: any task, or the base.
func (t *Tree) Switch(target ID) (ID, error) {
	if err := t.check(target); err != nil {
		return 0, err
	}
	return target, nil
}

func (t *Tree) check(id ID) error {
	if !t.Has(id) {
		return fmt.Errorf("%w %d", ErrUnknown, id)
	}
	return nil
}

// Visit marks id and all its ancestors as visited at clock, so redo from any
// ancestor leads back towards id. It returns the tasks whose Visit changed.
func (t *Tree) Visit(id ID, clock uint64) []Task {
	var changed []Task
	for _, a := range t.Ancestors(id) {
		task := t.tasks[a]
		if task.Visit != clock {
			task.Visit = clock
			changed = append(changed, *task)
		}
	}
	return changed
}

// MaxVisit is the highest visit clock in the tree.
func (t *Tree) MaxVisit() uint64 {
	var m uint64
	for _, task := range t.tasks {
		if task.Visit > m {
			m = task.Visit
		}
	}
	return m
}

// Walk is the way from one task to another: Up lists the tasks left on the way
// to the lowest common ancestor (from first), Down the tasks entered after it
// (top-down, to last).
type Walk struct {
	From, To, Common ID
	Up, Down         []ID
}

// Path returns the walk from a to b through their lowest common ancestor.
func (t *Tree) Path(a, b ID) (Walk, error) {
	if err := t.check(a); err != nil {
		return Walk{}, err
	}
	if err := t.check(b); err != nil {
		return Walk{}, err
	}
	onA := map[ID]bool{Base: true}
	for _, id := range t.Ancestors(a) {
		onA[id] = true
	}
	var down []ID
	common := b
	for !onA[common] {
		down = append(down, common)
		common = t.Parent(common)
	}
	for i, j := 0, len(down)-1; i < j; i, j = i+1, j-1 {
		down[i], down[j] = down[j], down[i]
	}
	var up []ID
	for id := a; id != common; id = t.Parent(id) {
		up = append(up, id)
	}
	return Walk{From: a, To: b, Common: common, Up: up, Down: down}, nil
}

// Statuses returns the status of every task relative to active, as
// StatusOf would, in one walk of the tree (StatusOf walks the ancestors of
// each task: log over a long history calls this instead).
func (t *Tree) Statuses(active ID) map[ID]Status {
	out := make(map[ID]Status, len(t.tasks))
	for id := range t.tasks {
		out[id] = StatusOther
	}
	if active == Base {
		for id := range t.tasks {
			out[id] = StatusFuture
		}
		return out
	}
	for _, id := range t.Ancestors(active) {
		out[id] = StatusPast
	}
	if _, ok := t.tasks[active]; ok {
		out[active] = StatusCurrent
	}
	below := append([]ID(nil), t.children[active]...)
	for len(below) > 0 {
		id := below[len(below)-1]
		below = below[:len(below)-1]
		out[id] = StatusFuture
		below = append(below, t.children[id]...)
	}
	return out
}

// StatusOf returns id's status relative to active.
func (t *Tree) StatusOf(id, active ID) Status {
	if id == active {
		return StatusCurrent
	}
	for _, a := range t.Ancestors(active) {
		if a == id {
			return StatusPast
		}
	}
	for _, a := range t.Ancestors(id) {
		if a == active {
			return StatusFuture
		}
	}
	if active == Base {
		return StatusFuture
	}
	return StatusOther
}

// count is n and noun, in the plural unless n is 1 (internal/plural's
// Count, which this bottom package cannot import).
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
