package cow

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
	"pgregory.net/rapid"
)

// gcModel is a history built straight into a journal, with the whole tree of
// every task kept aside: path -> content ("" absent is not a key).
type gcModel struct {
	j     *journal.Journal
	trees map[tasks.ID]map[string]string
	// created is each task's creation time.
	created map[tasks.ID]time.Time
	now     time.Time
	next    tasks.ID
}

// gcSeen counts what the model test's gc runs did, to show they did something.
var gcSeen struct{ runs, dropped, rewired, squashed, stopped int }

// errStopped is the crash a test's gcStep simulates.
var errStopped = errors.New("gc stopped by the test")

var gcNames = []string{"a", "b", "c", "d", "e", "f"}

func newGCModel(t tb) *gcModel {
	dir := tempDir(t)
	j, err := journal.Open(filepath.Join(dir, "journal"), filepath.Join(dir, "root"))
	mustDo(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return &gcModel{j: j, trees: map[tasks.ID]map[string]string{tasks.Base: {"a": "base a", "b": "base b"}},
		created: map[tasks.ID]time.Time{},
		now:     time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), next: 1}
}

func (m *gcModel) state(tree map[string]string, p string) NodeState {
	c, ok := tree[p]
	if !ok {
		return NodeState{}
	}
	ref, err := m.j.PutBytes([]byte(c))
	if err != nil {
		panic(err)
	}
	return NodeState{Kind: journal.File, Mode: 0o644, Size: int64(len(c)), Blob: ref}
}

// addTask records a child of parent, created age ago, whose content edits
// are edits (path -> new content, "" deletes).
func (m *gcModel) addTask(t tb, parent tasks.ID, age time.Duration, edits map[string]string) tasks.ID {
	before := m.trees[parent]
	after := make(map[string]string, len(before))
	for p, c := range before {
		after[p] = c
	}
	var changes []Change
	for _, p := range gcNames {
		c, ok := edits[p]
		if !ok {
			continue
		}
		if c == "" {
			delete(after, p)
		} else {
			after[p] = c
		}
		b, a := m.state(before, p), m.state(after, p)
		if !b.Equal(a) {
			changes = append(changes, Change{Path: p, Before: b, After: a})
		}
	}
	if changes == nil {
		changes = []Change{}
	}
	id := m.next
	m.next++
	created := m.now.Add(-age)
	_, err := CreateTask(m.j, NewTask{Task: tasks.Task{ID: id, Parent: parent, Summary: fmt.Sprintf("task %d", id),
		Kind: tasks.KindAgent, Created: created, Ended: created.Add(time.Minute)}, Changes: changes, Activate: true, Applied: true})
	mustDo(t, err)
	m.trees[id] = after
	m.created[id] = created
	return id
}

// setPosition makes id the active and applied task (the real tree would be
// in its state).
func (m *gcModel) setPosition(t tb, id tasks.ID) {
	mustDo(t, m.j.Update(func(tx *journal.Tx) error {
		st, err := tx.State()
		if err != nil {
			return err
		}
		st.Active, st.Applied = id, id
		return tx.SetState(st)
	}))
}

// treeAt reads task id's whole tree back from the journal: the applied
// task's tree (the real files, from the model) with the walk to id applied,
// every file's content read from its blob.
func (m *gcModel) treeAt(t tb, id tasks.ID) map[string]string {
	st, err := m.j.State()
	mustDo(t, err)
	tree, err := m.j.Tree()
	mustDo(t, err)
	plan, err := MakePlan(tree, m.j, st.Applied, id)
	mustDo(t, err)
	out := map[string]string{}
	for p, c := range m.trees[st.Applied] {
		out[p] = c
	}
	for p, s := range plan.Target {
		switch s.Kind {
		case journal.Absent:
			delete(out, p)
		case journal.File:
			b, err := m.j.ReadBlob(s.Blob)
			mustDo(t, err)
			out[p] = string(b)
		default:
			t.Fatalf("task %d: %s is a %s", id, p, s.Kind)
		}
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for p, c := range a {
		if d, ok := b[p]; !ok || d != c {
			return false
		}
	}
	return true
}

// TestGCModel builds random histories (branches, tags, tasks of random
// ages), runs gc with a random policy, and checks: every kept task's tree
// is what it was, byte for byte; dropped tasks and their layers are gone;
// the position, the tags and the real tree's task stay; verify passes; no
// blob is left that nothing refers to. Some runs stop after a random
// durable step (a crash): verify passes there, and FinishGC ends the gc.
func TestGCModel(t *testing.T) {
	defer func() {
		t.Logf("%d gc runs: %d tasks dropped, %d rewired, %d squashes into the base, %d stopped midway and finished",
			gcSeen.runs, gcSeen.dropped, gcSeen.rewired, gcSeen.squashed, gcSeen.stopped)
		if gcSeen.dropped == 0 || gcSeen.rewired == 0 || gcSeen.squashed == 0 || gcSeen.stopped == 0 {
			t.Errorf("the random histories never dropped, rewired or squashed a task")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		m := newGCModel(rt)
		n := rapid.IntRange(1, 25).Draw(rt, "tasks")
		active := tasks.Base
		var ids []tasks.ID
		for i := 0; i < n; i++ {
			if len(ids) > 0 && rapid.IntRange(0, 3).Draw(rt, "branch") == 0 {
				active = rapid.SampledFrom(append([]tasks.ID{tasks.Base}, ids...)).Draw(rt, "from")
			}
			edits := map[string]string{}
			for k := rapid.IntRange(0, 3).Draw(rt, "edits"); k > 0; k-- {
				p := rapid.SampledFrom(gcNames).Draw(rt, "path")
				edits[p] = rapid.SampledFrom([]string{"", "x", "y", "hello\n", fmt.Sprintf("v%d", i)}).Draw(rt, "content")
			}
			age := time.Duration(rapid.IntRange(0, 90).Draw(rt, "age")) * 24 * time.Hour
			active = m.addTask(rt, active, age, edits)
			ids = append(ids, active)
		}
		m.setPosition(rt, rapid.SampledFrom(append([]tasks.ID{tasks.Base}, ids...)).Draw(rt, "position"))
		tags := map[string]tasks.ID{}
		for k := rapid.IntRange(0, 3).Draw(rt, "tags"); k > 0; k-- {
			id := rapid.SampledFrom(ids).Draw(rt, "tagged")
			name := fmt.Sprintf("t%d", k)
			_, err := SetTag(m.j, name, id, true)
			mustDo(rt, err)
			tags[name] = id
		}
		before, err := m.j.State()
		mustDo(rt, err)
		pol := GCPolicy{Keep: time.Duration(rapid.IntRange(1, 100).Draw(rt, "keepDays")) * 24 * time.Hour, Now: m.now}
		if rapid.Bool().Draw(rt, "budget") {
			pol.MaxSize = int64(rapid.IntRange(0, 400).Draw(rt, "maxSize"))
		}
		// Now and then the gc stops after one of its durable steps, as
		// after a crash: verify must pass then, and FinishGC end it.
		stopAt := rapid.IntRange(0, 12).Draw(rt, "stopAt")
		steps := 0
		gcStep = func(name string) error {
			if steps++; steps == stopAt {
				return fmt.Errorf("%w after %s", errStopped, name)
			}
			return nil
		}
		res, err := GC(m.j, pol, false)
		gcStep = nil
		if errors.Is(err, errStopped) {
			gcSeen.stopped++
			damage, verr := m.j.Verify(nil)
			mustDo(rt, verr)
			if len(damage) > 0 {
				rt.Fatalf("verify after a gc stopped (%v): %v", err, damage)
			}
			err = FinishGC(m.j)
		}
		mustDo(rt, err)
		gcSeen.runs++
		gcSeen.dropped += len(res.Dropped)
		gcSeen.rewired += res.Rewired
		if res.Squashed != 0 {
			gcSeen.squashed++
		}

		after, err := m.j.State()
		mustDo(rt, err)
		if after.Active != before.Active || after.Applied != before.Applied {
			rt.Fatalf("position moved: %+v -> %+v", before, after)
		}
		dropped := map[tasks.ID]bool{}
		for _, id := range res.Dropped {
			dropped[id] = true
		}
		for name, id := range tags {
			if dropped[id] {
				rt.Fatalf("tagged task %d (%s) dropped", id, name)
			}
			if got, err := m.j.Tag(name); err != nil || got != id {
				rt.Fatalf("tag %s: %d, %v", name, got, err)
			}
		}
		if dropped[after.Active] || dropped[after.Applied] {
			rt.Fatalf("the active or applied task was dropped: %v", res.Dropped)
		}
		for _, id := range ids {
			if dropped[id] {
				if _, err := m.j.Task(id); !errors.Is(err, journal.ErrNotFound) {
					rt.Fatalf("dropped task %d still readable: %v", id, err)
				}
				if l, _ := m.j.Layer(id); len(l) != 0 {
					rt.Fatalf("dropped task %d keeps %d changes", id, len(l))
				}
				if pol.MaxSize == 0 && !m.created[id].Before(pol.Now.Add(-pol.Keep)) {
					rt.Fatalf("task %d is within the keep window and was dropped", id)
				}
				continue
			}
			if got := m.treeAt(rt, id); !sameTree(got, m.trees[id]) {
				rt.Fatalf("task %d: tree after gc %v, want %v", id, got, m.trees[id])
			}
		}
		damage, err := m.j.Verify(nil)
		mustDo(rt, err)
		if len(damage) > 0 {
			rt.Fatalf("verify after gc: %v", damage)
		}
		u, err := m.j.Usage()
		mustDo(rt, err)
		if u.Unreferenced != 0 {
			rt.Fatalf("%d blob(s) nothing refers to are left", u.Unreferenced)
		}
		if p, err := m.j.GCPlan(); err != nil || p != nil {
			rt.Fatalf("gc plan left: %+v, %v", p, err)
		}
	})
}
