package cow

import (
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
	"pgregory.net/rapid"
)

func TestNextTaskIDTable(t *testing.T) {
	tree := func(ids ...tasks.ID) *tasks.Tree {
		var list []tasks.Task
		for _, id := range ids {
			list = append(list, tasks.Task{ID: id, Parent: tasks.Base})
		}
		tr, err := tasks.NewTree(list)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	cases := []struct {
		name string
		tree *tasks.Tree
		st   journal.State
		want tasks.ID
	}{
		{"empty", tree(), journal.State{}, 1},
		{"current", tree(1, 2), journal.State{Current: 2}, 3},
		{"state lags the tree (crash)", tree(1, 2, 5), journal.State{Current: 2}, 6},
		{"tree lags the state", tree(1), journal.State{Current: 4}, 5},
		{"reserved id taken", tree(1, 2), journal.State{Current: 2, Reserved: 3}, 4},
		{"old reserved id", tree(1, 2, 3), journal.State{Current: 3, Reserved: 2}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NextTaskID(c.tree, c.st); got != c.want {
				t.Fatalf("NextTaskID = %d, want %d", got, c.want)
			}
		})
	}
}

// TestHistoryBookkeeping drives the history writers (new tasks active or
// beside the position, reserved ids recorded or not, visits) in random
// orders against one journal and checks after every step: ids are never
// given twice, a reserved id is never taken by another task, Current is the
// highest id, and the active task carries the newest visit.
func TestHistoryBookkeeping(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := tempDir(t)
		j := openJournal(t, dir)
		defer j.Close()
		now := time.Unix(1700000000, 0)
		var reserved tasks.ID // reserved and not yet recorded
		seen := map[tasks.ID]bool{}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			st, err := j.State()
			mustDo(t, err)
			tree, err := j.Tree()
			mustDo(t, err)
			ids := []tasks.ID{tasks.Base}
			for _, x := range tree.All() {
				ids = append(ids, x.ID)
			}
			switch op := rapid.SampledFrom([]string{"agent", "outside", "drift", "reserve", "record", "visit"}).Draw(rt, "op"); op {
			case "agent", "outside", "drift":
				kind := tasks.KindAgent
				if op != "agent" {
					kind = tasks.KindOutside
				}
				id := NextTaskID(tree, st)
				if id == reserved {
					rt.Fatalf("NextTaskID gave the reserved id %d", id)
				}
				parent := st.Active
				if op == "drift" {
					parent = rapid.SampledFrom(ids).Draw(rt, "parent")
				}
				changes := []Change{{Path: "f", Before: NodeState{Kind: absentKind}, After: NodeState{Kind: absentKind}}}
				_, err := CreateTask(j, NewTask{Task: tasks.Task{ID: id, Parent: parent, Kind: kind, Created: now},
					Changes: changes, Activate: op != "drift"})
				mustDo(t, err)
				if seen[id] {
					rt.Fatalf("id %d given twice", id)
				}
				seen[id] = true
			case "reserve":
				id, err := Reserve(j)
				mustDo(t, err)
				if seen[id] {
					rt.Fatalf("Reserve gave id %d of an existing task", id)
				}
				if reserved > maxID(tree) && id != reserved {
					rt.Fatalf("Reserve gave %d while %d was reserved, unrecorded and above every task", id, reserved)
				}
				if id <= maxID(tree) {
					rt.Fatalf("Reserve gave %d, not above every task (%d)", id, maxID(tree))
				}
				reserved = id
			case "record":
				id, err := ReservedID(j)
				mustDo(t, err)
				if reserved == 0 || reserved < maxID(tree) {
					continue // a reservation overtaken by other tasks is reserved afresh
				}
				if id != reserved {
					rt.Fatalf("ReservedID = %d, want %d", id, reserved)
				}
				_, err = CreateTask(j, NewTask{Task: tasks.Task{ID: id, Parent: st.Active, Kind: tasks.KindAgent, Created: now},
					Activate: true})
				mustDo(t, err)
				seen[id], reserved = true, 0
			case "visit":
				to := rapid.SampledFrom(ids).Draw(rt, "to")
				visited, next := Visit(tree, st, to)
				mustDo(t, j.Update(func(tx *journal.Tx) error {
					for _, v := range visited {
						if err := tx.PutTask(v); err != nil {
							return err
						}
					}
					return tx.SetState(next)
				}))
			}
			st, err = j.State()
			mustDo(t, err)
			tree, err = j.Tree()
			mustDo(t, err)
			if st.Current != maxID(tree) {
				rt.Fatalf("Current = %d, highest id %d", st.Current, maxID(tree))
			}
			if active, ok := tree.Get(st.Active); ok && active.Visit != tree.MaxVisit() {
				rt.Fatalf("active task %d visit %d, newest visit %d", st.Active, active.Visit, tree.MaxVisit())
			}
			if st.Clock < tree.MaxVisit() {
				rt.Fatalf("clock %d behind visit %d", st.Clock, tree.MaxVisit())
			}
		}
	})
}
