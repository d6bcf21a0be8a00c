package tasks

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// tree builds:   0 ─ 1 ─ 2 ─ 3
//
//	│   └ 5
//	└ 4 ─ 6
func sample(t *testing.T) *Tree {
	t.Helper()
	tr, err := NewTree([]Task{
		{ID: 1, Parent: 0}, {ID: 2, Parent: 1}, {ID: 3, Parent: 2},
		{ID: 4, Parent: 1}, {ID: 5, Parent: 2}, {ID: 6, Parent: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestAdoptTreeAndEach: a tree adopted from an unsorted list yields its
// tasks by id (Each, All, Len agree), Each stops when asked, and NewTree
// leaves the caller's list alone.
func TestAdoptTreeAndEach(t *testing.T) {
	list := []Task{{ID: 3, Parent: 1, Summary: "c"}, {ID: 1, Summary: "a"}, {ID: 2, Parent: 1, Summary: "b"}}
	keep := append([]Task(nil), list...)
	if _, err := NewTree(list); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(list, keep) {
		t.Fatalf("NewTree changed its argument: %v", list)
	}
	tr, err := AdoptTree(list)
	if err != nil {
		t.Fatal(err)
	}
	var got []ID
	for task := range tr.Each() {
		got = append(got, task.ID)
	}
	if !reflect.DeepEqual(got, []ID{1, 2, 3}) || tr.Len() != 3 || len(tr.All()) != 3 || tr.MaxID() != 3 {
		t.Fatalf("Each = %v, Len = %d, All = %v; want ids 1, 2, 3", got, tr.Len(), tr.All())
	}
	n := 0
	for range tr.Each() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("Each went on after break: %d", n)
	}
	if empty, err := AdoptTree(nil); err != nil || empty.MaxID() != Base || empty.Len() != 0 {
		t.Fatalf("empty tree: MaxID %d, Len %d, %v", empty.MaxID(), empty.Len(), err)
	}
	if _, err := AdoptTree([]Task{{ID: 2, Parent: 1}}); err == nil {
		t.Fatal("AdoptTree took a task whose parent is missing")
	}
}

func TestNewTreeRejectsDamage(t *testing.T) {
	tests := []struct {
		name string
		list []Task
		want string
	}{
		{"reserved id", []Task{{ID: 0}}, "reserved id 0"},
		{"duplicate", []Task{{ID: 1}, {ID: 1}}, "recorded twice"},
		{"missing parent", []Task{{ID: 2, Parent: 1}}, "missing parent"},
		{"parent not older", []Task{{ID: 1, Parent: 2}, {ID: 2, Parent: 1}}, "not older"},
	}
	for _, tt := range tests {
		if _, err := NewTree(tt.list); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestUndo(t *testing.T) {
	tr := sample(t)
	tests := []struct {
		from    ID
		n       int
		want    ID
		wantErr error
	}{
		{3, 1, 2, nil}, {3, 3, 0, nil}, {6, 2, 1, nil},
		{0, 1, 0, ErrAtBase}, {3, 4, 0, ErrAtBase}, {9, 1, 0, ErrUnknown},
	}
	for _, tt := range tests {
		got, err := tr.Undo(tt.from, tt.n)
		if !errors.Is(err, tt.wantErr) || (err == nil && got != tt.want) {
			t.Errorf("Undo(%d, %d) = %d, %v; want %d, %v", tt.from, tt.n, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := tr.Undo(3, 0); err == nil {
		t.Error("Undo(3, 0) accepted a zero count")
	}
}

func TestRedoFollowsMostRecentVisit(t *testing.T) {
	tr := sample(t)
	// Without visits: the newest child.
	if got, _ := tr.Redo(1, 1); got != 4 {
		t.Errorf("Redo(1) without visits = %d, want the newest child 4", got)
	}
	if got, _ := tr.Redo(2, 1); got != 5 {
		t.Errorf("Redo(2) without visits = %d, want 5", got)
	}
	tr.Visit(3, 1) // switch to 3 visits 3, 2, 1
	if got, _ := tr.Redo(0, 3); got != 3 {
		t.Errorf("Redo(0, 3) after visiting 3 = %d, want 3", got)
	}
	tr.Visit(6, 2)
	if got, _ := tr.Redo(1, 1); got != 4 {
		t.Errorf("Redo(1) after visiting 6 = %d, want 4", got)
	}
	if got, _ := tr.Redo(2, 1); got != 3 {
		t.Errorf("Redo(2) keeps its own last visit = %d, want 3", got)
	}
	if _, err := tr.Redo(6, 1); !errors.Is(err, ErrAtLeaf) {
		t.Errorf("Redo at a leaf: %v", err)
	}
	if _, err := tr.Redo(4, 2); !errors.Is(err, ErrAtLeaf) {
		t.Errorf("Redo(4, 2) past the leaf: %v", err)
	}
}

func TestPath(t *testing.T) {
	tr := sample(t)
	tests := []struct {
		a, b     ID
		common   ID
		up, down []ID
	}{
		{3, 6, 1, []ID{3, 2}, []ID{4, 6}},
		{3, 3, 3, nil, nil},
		{0, 3, 0, nil, []ID{1, 2, 3}},
		{5, 0, 0, []ID{5, 2, 1}, nil},
		{3, 5, 2, []ID{3}, []ID{5}},
	}
	for _, tt := range tests {
		w, err := tr.Path(tt.a, tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if w.Common != tt.common || !reflect.DeepEqual(w.Up, tt.up) || !reflect.DeepEqual(w.Down, tt.down) {
			t.Errorf("Path(%d, %d) = %+v, want common %d up %v down %v", tt.a, tt.b, w, tt.common, tt.up, tt.down)
		}
	}
	if _, err := tr.Path(1, 99); !errors.Is(err, ErrUnknown) {
		t.Errorf("Path to an unknown task: %v", err)
	}
}

func TestStatusOf(t *testing.T) {
	tr := sample(t)
	want := map[ID]Status{1: StatusPast, 2: StatusCurrent, 3: StatusFuture, 5: StatusFuture, 4: StatusOther, 6: StatusOther}
	for id, s := range want {
		if got := tr.StatusOf(id, 2); got != s {
			t.Errorf("StatusOf(%d, active 2) = %s, want %s", id, got, s)
		}
	}
	if got := tr.StatusOf(6, Base); got != StatusFuture {
		t.Errorf("at the base every task is future, got %s", got)
	}
	if !tr.HasBranches(1) || !tr.HasBranches(2) || tr.HasBranches(3) || tr.HasBranches(Base) {
		t.Error("HasBranches is wrong")
	}
}

// TestStatuses: one walk gives what StatusOf gives task by task, for
// every active task of the sample.
func TestStatuses(t *testing.T) {
	tr := sample(t)
	for active := Base; active <= 6; active++ {
		got := tr.Statuses(active)
		if len(got) != 6 {
			t.Fatalf("active %d: %d statuses for 6 tasks", active, len(got))
		}
		for id := ID(1); id <= 6; id++ {
			if want := tr.StatusOf(id, active); got[id] != want {
				t.Errorf("Statuses(%d)[%d] = %s, StatusOf says %s", active, id, got[id], want)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	long := strings.Repeat("é", 100)
	if got := Summarize(long); len([]rune(got)) != SummaryMax {
		t.Errorf("Summarize kept %d runes, want %d", len([]rune(got)), SummaryMax)
	}
	if got := Summarize("a\nb\tc"); got != "a b c" {
		t.Errorf("Summarize = %q", got)
	}
}

// TestWalkProperty: for random trees and any two tasks, the walk goes up
// from a through parents to a common ancestor of both, then down to b.
func TestWalkProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		var list []Task
		for i := 1; i <= n; i++ {
			list = append(list, Task{ID: ID(i), Parent: ID(rapid.IntRange(0, i-1).Draw(t, "parent"))})
		}
		tr, err := NewTree(list)
		if err != nil {
			t.Fatal(err)
		}
		a := ID(rapid.IntRange(0, n).Draw(t, "a"))
		b := ID(rapid.IntRange(0, n).Draw(t, "b"))
		w, err := tr.Path(a, b)
		if err != nil {
			t.Fatal(err)
		}
		cur := a
		for _, id := range w.Up {
			if id != cur {
				t.Fatalf("up step %d, expected %d", id, cur)
			}
			cur = tr.Parent(cur)
		}
		if cur != w.Common {
			t.Fatalf("walk up ended at %d, common is %d", cur, w.Common)
		}
		for _, id := range w.Down {
			if tr.Parent(id) != cur {
				t.Fatalf("down step %d is not a child of %d", id, cur)
			}
			cur = id
		}
		if cur != b {
			t.Fatalf("walk ended at %d, want %d", cur, b)
		}
		// Common is an ancestor (or equal) of both, and no task of Down is
		// an ancestor of a.
		for _, id := range w.Down {
			for _, anc := range tr.Ancestors(a) {
				if anc == id {
					t.Fatalf("down step %d is an ancestor of a=%d", id, a)
				}
			}
		}
	})
}

// TestStatuses: Statuses agrees with StatusOf for every task and every
// active task of a tree with branches.
func TestStatusesBranches(t *testing.T) {
	tree, err := NewTree([]Task{
		{ID: 1}, {ID: 2, Parent: 1}, {ID: 3, Parent: 2}, {ID: 4, Parent: 1}, {ID: 5, Parent: 4},
		{ID: 6}, {ID: 7, Parent: 6}, {ID: 8, Parent: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	for active := ID(0); active <= 8; active++ {
		got := tree.Statuses(active)
		if len(got) != 8 {
			t.Fatalf("active %d: %d statuses, want 8", active, len(got))
		}
		for id := ID(1); id <= 8; id++ {
			if want := tree.StatusOf(id, active); got[id] != want {
				t.Errorf("active %d, task %d: %s, want %s", active, id, got[id], want)
			}
		}
	}
}
