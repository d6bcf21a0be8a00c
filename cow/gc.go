package cow

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Garbage collection of the history (`timeagent gc`). The policy keeps
// every task created within Keep of Now, every tagged task, the active and
// the applied task; every other task is dropped. A kept task whose parent
// is dropped is attached to its nearest kept ancestor (or the base) and its
// layer becomes the whole change from that ancestor's state to its own, so
// its tree is exactly what it was. The base itself moves forward: the
// longest run of dropped tasks from the base down towards the active task
// is squashed into it (the base's state becomes the last one's), so old
// history on the way to the present costs nothing. The state of the real
// tree, the active task's tree and every kept task's tree never change.
// With MaxSize, more tasks are dropped, oldest first, until the content
// the kept history needs fits (tagged, active and applied tasks never go).

// DefaultGCKeep is how long gc keeps every task by default.
const DefaultGCKeep = 30 * 24 * time.Hour

// GCPolicy says what a gc keeps.
type GCPolicy struct {
	// Keep: every task created within Keep before Now is kept (0: none
	// is kept for its age alone).
	Keep time.Duration
	// MaxSize, if > 0, bounds the stored content (bytes) the kept history
	// needs: older tasks are dropped until it fits.
	MaxSize int64
	Now     time.Time
}

// GCResult is what a gc did (or, dry, would do).
type GCResult struct {
	DryRun  bool       `json:"dryRun"`
	Dropped []tasks.ID `json:"dropped"`
	Kept    int        `json:"kept"`
	// Squashed is the task whose state the base took (0: none).
	Squashed tasks.ID `json:"squashed"`
	// Rewired counts kept tasks that got a new parent or layer.
	Rewired int                 `json:"rewired"`
	Swept   journal.SweepReport `json:"swept"`
	// ContentBefore and ContentAfter are the stored content the history
	// needs (what MaxSize bounds).
	ContentBefore int64 `json:"contentBefore"`
	ContentAfter  int64 `json:"contentAfter"`
	// OverBudget: even dropping every droppable task leaves more than MaxSize.
	OverBudget bool `json:"overBudget"`
}

// gcStep, when set by a test, is called after each durable step of a gc
// with the step's name; an error stops the gc there, as a crash would.
var gcStep func(step string) error

func step(name string) error {
	if gcStep != nil {
		return gcStep(name)
	}
	return nil
}

// ErrGCRefused: the journal is not in a state gc can work on.
var ErrGCRefused = errors.New("gc refused")

// gcTarget is the outcome of the policy: what to drop and how to rewire.
type gcTarget struct {
	plan    journal.GCPlan
	kept    map[tasks.ID]bool
	layers  map[tasks.ID][]Change // the new layers of rewired tasks
	content int64                 // stored content the kept history needs
}

// GC collects the history by the policy: it plans, stores the plan, and
// runs it to the end (FinishGC). The caller holds the root (no session).
func GC(j *journal.Journal, pol GCPolicy, dryRun bool) (GCResult, error) {
	var res GCResult
	res.DryRun = dryRun
	if p, err := j.GCPlan(); err != nil {
		return res, err
	} else if p != nil {
		if err := FinishGC(j); err != nil {
			return res, err
		}
	}
	if in, err := j.Intent(); err != nil {
		return res, err
	} else if in != nil {
		return res, fmt.Errorf("%w: an apply (task %d to %d) is unfinished: run `timeagent recover` first", ErrGCRefused, in.From, in.To)
	}
	if lost, err := j.HasLostChanges(); err != nil {
		return res, err
	} else if lost {
		return res, fmt.Errorf("%w: some tasks lost changes in a salvage (see `timeagent verify`): gc would spread the loss into the tasks it keeps", ErrGCRefused)
	}
	tree, err := j.Tree()
	if err != nil {
		return res, err
	}
	st, err := j.State()
	if err != nil {
		return res, err
	}
	tags, err := j.Tags()
	if err != nil {
		return res, err
	}
	all, err := contentOf(j, tree, nil, nil)
	if err != nil {
		return res, err
	}
	res.ContentBefore = all
	target, err := chooseTarget(j, tree, st, tags, pol)
	if err != nil {
		return res, err
	}
	res.Dropped = target.plan.Drop
	res.Kept = len(target.kept)
	res.Squashed = target.plan.Squash
	res.Rewired = len(target.plan.Rewire)
	res.ContentAfter = target.content
	res.OverBudget = pol.MaxSize > 0 && target.content > pol.MaxSize
	if dryRun {
		if len(res.Dropped) == 0 {
			res.Swept, err = j.Sweep(true)
		}
		return res, err
	}
	if len(target.plan.Drop) == 0 {
		// Nothing to drop: only sweep the garbage.
		res.Swept, err = j.Sweep(false)
		return res, err
	}
	target.plan.Started = pol.Now
	target.plan.Phase = journal.GCStage
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutGCPlan(target.plan) }); err != nil {
		return res, err
	}
	if err := step("plan"); err != nil {
		return res, err
	}
	res.Swept, err = finishGC(j, target.plan, target.layers)
	return res, err
}

// FinishGC finishes a gc that was interrupted (its plan is stored), doing
// what is left of each phase. Without a stored plan it does nothing.
func FinishGC(j *journal.Journal) error {
	p, err := j.GCPlan()
	if err != nil || p == nil {
		return err
	}
	_, err = finishGC(j, *p, nil)
	return err
}

func finishGC(j *journal.Journal, p journal.GCPlan, layers map[tasks.ID][]Change) (journal.SweepReport, error) {
	var rep journal.SweepReport
	next := func(phase string) error {
		p.Phase = phase
		if err := j.Update(func(tx *journal.Tx) error { return tx.PutGCPlan(p) }); err != nil {
			return err
		}
		return step("phase " + phase)
	}
	if p.Phase == journal.GCStage {
		tree, err := j.Tree()
		if err != nil {
			return rep, err
		}
		for _, r := range p.Rewire {
			if _, done, err := j.Staged(r.ID); err != nil {
				return rep, err
			} else if done {
				continue
			}
			changes, ok := layers[r.ID]
			if !ok {
				if changes, err = rewiredLayer(j, tree, p.Squash, r); err != nil {
					return rep, fmt.Errorf("gc: stage task %d: %w", r.ID, err)
				}
			}
			if err := j.PutStaged(r.ID, changes); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			if err := step(fmt.Sprintf("staged %d", r.ID)); err != nil {
				return rep, err
			}
		}
		if err := next(journal.GCSwitch); err != nil {
			return rep, err
		}
	}
	if p.Phase == journal.GCSwitch {
		for _, r := range p.Rewire {
			staged, ok, err := j.Staged(r.ID)
			if err != nil {
				return rep, err
			}
			if !ok {
				continue // switched before a crash
			}
			t, err := j.Task(r.ID)
			if err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			t.Parent = r.Parent
			if err := j.SwitchLayer(t, staged); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			if err := step(fmt.Sprintf("switched %d", r.ID)); err != nil {
				return rep, err
			}
		}
		if err := j.CleanStaged(); err != nil {
			return rep, err
		}
		if err := next(journal.GCDrop); err != nil {
			return rep, err
		}
	}
	if p.Phase == journal.GCDrop {
		all, err := j.Tasks()
		if err != nil {
			return rep, err
		}
		parent := make(map[tasks.ID]tasks.ID, len(all))
		for _, t := range all {
			parent[t.ID] = t.Parent
		}
		dropped := make(map[tasks.ID]bool, len(p.Drop))
		for _, id := range p.Drop {
			dropped[id] = true
		}
		// A session that started from a dropped task now starts from its
		// nearest kept ancestor (the base when none).
		newBase := func(id tasks.ID) tasks.ID {
			for n := 0; dropped[id] && n <= len(all); n++ {
				id = parent[id]
			}
			if dropped[id] {
				return tasks.Base
			}
			return id
		}
		if err := j.ForgetTasks(p.Drop, newBase); err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if err := step("forgot"); err != nil {
			return rep, err
		}
		if err := j.DropTasks(p.Drop); err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if err := next(journal.GCSweep); err != nil {
			return rep, err
		}
	}
	if p.Phase == journal.GCSweep {
		var err error
		if rep, err = j.Sweep(false); err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if err := step("swept"); err != nil {
			return rep, err
		}
		if err := j.Update(func(tx *journal.Tx) error { return tx.DeleteGCPlan() }); err != nil {
			return rep, err
		}
		return rep, nil
	}
	return rep, fmt.Errorf("gc: %w: unknown phase %q in the stored gc plan", journal.ErrCorrupt, p.Phase)
}

// rewiredLayer is task r.ID's layer after the gc: the change from its new
// parent's state (the squashed task's for the base) to its own.
func rewiredLayer(j *journal.Journal, tree *tasks.Tree, squash tasks.ID, r journal.Rewire) ([]Change, error) {
	from := r.Parent
	if from == tasks.Base {
		from = squash
	}
	plan, err := MakePlan(tree, j, from, r.ID)
	if err != nil {
		return nil, err
	}
	return plan.Changes(), nil
}

// chooseTarget applies the policy; with MaxSize it drops more, oldest
// first, until the content fits (a binary search over how many).
func chooseTarget(j *journal.Journal, tree *tasks.Tree, st journal.State, tags map[string]tasks.ID, pol GCPolicy) (gcTarget, error) {
	pinned := map[tasks.ID]bool{st.Active: true, st.Applied: true}
	for _, id := range tags {
		pinned[id] = true
	}
	cutoff := pol.Now.Add(-pol.Keep)
	var recent []tasks.Task // kept by age alone, oldest first
	kept := map[tasks.ID]bool{}
	for _, t := range tree.All() {
		switch {
		case pinned[t.ID]:
			kept[t.ID] = true
		case !t.Created.Before(cutoff):
			kept[t.ID] = true
			recent = append(recent, t)
		}
	}
	sort.Slice(recent, func(a, b int) bool {
		if !recent[a].Created.Equal(recent[b].Created) {
			return recent[a].Created.Before(recent[b].Created)
		}
		return recent[a].ID < recent[b].ID
	})
	build := func(extra int) (gcTarget, error) {
		k := make(map[tasks.ID]bool, len(kept))
		for id := range kept {
			k[id] = true
		}
		for _, t := range recent[:extra] {
			delete(k, t.ID)
		}
		return targetFor(j, tree, st, k)
	}
	best, err := build(0)
	if err != nil || pol.MaxSize <= 0 || best.content <= pol.MaxSize {
		return best, err
	}
	lo, hi := 1, len(recent) // the smallest extra that fits is in [lo, hi]
	last, err := build(hi)
	if err != nil || last.content > pol.MaxSize {
		return last, err
	}
	best = last
	for lo < hi {
		mid := (lo + hi) / 2
		t, err := build(mid)
		if err != nil {
			return t, err
		}
		if t.content <= pol.MaxSize {
			best, hi = t, mid
		} else {
			lo = mid + 1
		}
	}
	return best, nil
}

// targetFor plans the gc that keeps exactly kept: the dropped tasks, the
// squash point, the rewired tasks with their new layers, and the content
// the result needs.
func targetFor(j *journal.Journal, tree *tasks.Tree, st journal.State, kept map[tasks.ID]bool) (gcTarget, error) {
	t := gcTarget{kept: kept, layers: map[tasks.ID][]Change{}}
	t.plan.Drop = []tasks.ID{}
	t.plan.Rewire = []journal.Rewire{}
	for _, task := range tree.All() {
		if !kept[task.ID] {
			t.plan.Drop = append(t.plan.Drop, task.ID)
		}
	}
	sort.Slice(t.plan.Drop, func(a, b int) bool { return t.plan.Drop[a] < t.plan.Drop[b] })
	// The squash point: the last of the dropped run from the base down
	// towards the active task.
	path := tree.Ancestors(st.Active)
	for i := len(path) - 1; i >= 0 && !kept[path[i]]; i-- {
		t.plan.Squash = path[i]
	}
	ids := make([]tasks.ID, 0, len(kept))
	for id := range kept {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		parent := tree.Parent(id)
		for parent != tasks.Base && !kept[parent] {
			parent = tree.Parent(parent)
		}
		if parent == tree.Parent(id) && (parent != tasks.Base || t.plan.Squash == tasks.Base) {
			continue // parent and layer stay
		}
		r := journal.Rewire{ID: id, Parent: parent}
		changes, err := rewiredLayer(j, tree, t.plan.Squash, r)
		if err != nil {
			return t, fmt.Errorf("gc: plan task %d: %w", id, err)
		}
		t.plan.Rewire = append(t.plan.Rewire, r)
		t.layers[id] = changes
	}
	var err error
	t.content, err = contentOf(j, tree, kept, t.layers)
	return t, err
}

// contentOf is the stored content the history needs when only kept
// (nil: every task) remains, with the rewired tasks' new layers: every blob
// their layers and the stat cache refer to.
func contentOf(j *journal.Journal, tree *tasks.Tree, kept map[tasks.ID]bool, rewired map[tasks.ID][]Change) (int64, error) {
	refs, err := j.StatBlobs()
	if err != nil {
		return 0, err
	}
	add := func(changes []Change) {
		for _, c := range changes {
			for _, s := range []NodeState{c.Before, c.After} {
				if s.Kind == journal.File {
					refs[s.Blob] = true
				}
			}
		}
	}
	for _, task := range tree.All() {
		if kept != nil && !kept[task.ID] {
			continue
		}
		if changes, ok := rewired[task.ID]; ok {
			add(changes)
			continue
		}
		changes, err := j.Layer(task.ID)
		if err != nil {
			return 0, err
		}
		add(changes)
	}
	return j.ContentSize(refs)
}
