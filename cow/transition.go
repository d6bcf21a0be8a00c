package cow

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// TransitionOptions tune a Transition.
type TransitionOptions struct {
	// Reason says what started the apply: "undo", "redo", "switch", "session end".
	Reason string
	// Confirm asks the user whether to overwrite drifted paths; nil means there
	// is no terminal to ask on.
	Confirm func(drifted []Drifted) (bool, error)
	// Yes overwrites drifted paths without asking (--yes).
	Yes bool
	// Progress may be nil.
	Progress Progress
	// Cwd is the user's current directory (absolute), for CheckCwd; empty
	// skips the check.
	Cwd string
	// RootPath is the root's absolute path (for messages and CheckCwd).
	RootPath string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Tree is the history as the caller read it, nothing written since
	// (nil: Transition reads it). Unused when an unfinished apply is
	// finished first. Reading 10,000 tasks once instead of twice.
	Tree *tasks.Tree
}

func (o TransitionOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// TransitionResult says what a Transition did.
type TransitionResult struct {
	// From is the task the real tree was in, To the task it is in now.
	From, To tasks.ID
	// Outside is the outside task the drifted content was recorded as, 0 if
	// there was no drift.
	Outside tasks.ID
	// Drifted lists the paths that had changed since their task ended.
	Drifted []Drifted
	// Written is the number of paths whose state the apply changed.
	Written int
	// Plan is the plan that was applied (from Outside when drift was
	// overwritten).
	Plan Plan
}

// Transition makes the real tree go from the applied task to task to, and
// makes to the active and applied task. An unfinished apply is finished
// first. Drifted paths are recorded as an outside task (child of the applied
// task) before anything else; they are then overwritten only with opts.Yes or
// opts.Confirm's consent, otherwise a wrapped ErrDrift is returned and the
// real tree and the position in history are unchanged. A wrapped
// ErrUnsupported (fifos on Windows) comes with a completed transition: only
// the listed paths were skipped.
func Transition(j *journal.Journal, root *os.Root, to tasks.ID, opts TransitionOptions) (TransitionResult, error) {
	finished, err := FinishIntent(j, root, opts.Progress)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return TransitionResult{}, err
		}
		return redirect(j, root, to, opts, err)
	}
	st, err := j.State()
	if err != nil {
		return TransitionResult{}, fmt.Errorf("transition: %w", err)
	}
	tree := opts.Tree
	if tree == nil || finished {
		if tree, err = j.Tree(); err != nil {
			return TransitionResult{}, fmt.Errorf("transition: %w", err)
		}
	}
	if !tree.Has(to) {
		return TransitionResult{}, fmt.Errorf("transition: %w %d", tasks.ErrUnknown, to)
	}
	from := st.Applied
	plan, err := MakePlan(tree, j, from, to)
	if err != nil {
		return TransitionResult{}, refused(opts.Reason, from, to, err)
	}
	res := TransitionResult{From: from, To: to, Plan: plan}
	if opts.Cwd != "" && opts.RootPath != "" {
		if err := CheckCwd(opts.RootPath, opts.Cwd, plan.Target); err != nil {
			return res, err
		}
	}
	drifted, err := planDrift(j, root, plan)
	if err != nil {
		return res, err
	}
	if len(drifted) > 0 {
		res.Drifted = drifted
		changes := make([]Change, len(drifted))
		for i, d := range drifted {
			changes[i] = Change{Path: d.Path, Before: d.Expected, After: d.Actual}
		}
		out, err := recordDrift(j, tree, from, changes, opts.now())
		if err != nil {
			return res, err
		}
		res.Outside = out
		if !opts.Yes {
			ok := false
			if opts.Confirm != nil {
				if ok, err = opts.Confirm(drifted); err != nil {
					return res, err
				}
			}
			if !ok {
				return res, fmt.Errorf("%w: %s, first %s; their content is kept as task %d",
					ErrDrift, plural.Count(len(drifted), "path"), drifted[0].Path, out)
			}
		}
		if tree, err = j.Tree(); err != nil {
			return res, fmt.Errorf("transition: %w", err)
		}
		if plan, err = MakePlan(tree, j, out, to); err != nil {
			return res, refused(opts.Reason, out, to, err)
		}
		res.Plan = plan
	}
	in := journal.Intent{From: plan.Walk.From, To: to, Started: opts.now(), Reason: opts.Reason}
	err = finishPlan(j, root, tree, plan, in, false, opts.Progress)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return res, err
	}
	res.Written = len(plan.Changes())
	return res, err
}

// FinishIntent finishes an apply a crash interrupted: it re-plans from the
// intent's From to its To, applies (every step is idempotent) and records the
// end. Drift is not recorded: the tree is half-applied by the apply itself.
// An apply that was still staging (nothing in the tree had changed) is
// finished the same way, unless one of its blobs is damaged: then it is
// cancelled (its staging files removed, the intent deleted) and the error
// says so.
func FinishIntent(j *journal.Journal, root *os.Root, progress Progress) (finished bool, err error) {
	in, err := j.Intent()
	if err != nil {
		return false, fmt.Errorf("finish apply: %w", err)
	}
	if in == nil {
		return false, nil
	}
	tree, err := j.Tree()
	if err != nil {
		return false, fmt.Errorf("finish apply %d -> %d: %w", in.From, in.To, err)
	}
	plan, err := intentPlan(tree, j, *in)
	if err != nil {
		return false, fmt.Errorf("finish apply: %w", err)
	}
	if err := finishPlan(j, root, tree, plan, *in, true, progress); err != nil {
		return errors.Is(err, ErrUnsupported), err
	}
	return true, nil
}

// intentPlan is the plan of intent in: From to To or, when it took the
// place of unfinished applies (in.Via), the paths of every step
// From→Via[0]→…→To, each with its state at To (a path no step touches
// keeps its state along the way).
func intentPlan(tree *tasks.Tree, j *journal.Journal, in journal.Intent) (Plan, error) {
	steps := append(append([]tasks.ID{in.From}, in.Via...), in.To)
	var plan Plan
	for i := 0; i+1 < len(steps); i++ {
		p, err := MakePlan(tree, j, steps[i], steps[i+1])
		if err != nil {
			return Plan{}, err
		}
		if i == 0 {
			plan = p
			continue
		}
		for path, t := range p.Target {
			if _, ok := plan.Target[path]; !ok {
				plan.Expected[path] = p.Expected[path]
			}
			plan.Target[path] = t
		}
		plan.Walk = p.Walk
	}
	return plan, nil
}

// redirect makes an apply that cannot finish (err) go to task to instead:
// the intent is replaced by one from the same start through its target
// (Via) to to, which brings every path either apply touched to its state at
// to, and is finished at once. A path the system refuses to replace is no
// obstacle when it already has its state at to (an undo straight back past
// the apply that failed on it). It returns err when there is nothing to
// redirect.
func redirect(j *journal.Journal, root *os.Root, to tasks.ID, opts TransitionOptions, err error) (TransitionResult, error) {
	in, ierr := j.Intent()
	if ierr != nil || in == nil || in.To == to {
		return TransitionResult{}, err
	}
	next := journal.Intent{From: in.From, Via: append(append([]tasks.ID(nil), in.Via...), in.To), To: to, Started: opts.now(),
		Reason: fmt.Sprintf("%s, in place of the unfinished %s", reasonOf(opts.Reason), reasonOf(in.Reason))}
	if uerr := j.Update(func(tx *journal.Tx) error { return tx.PutIntent(next) }); uerr != nil {
		return TransitionResult{}, errors.Join(err, fmt.Errorf("%s: write intent: %w", reasonOf(opts.Reason), uerr))
	}
	tree, terr := j.Tree()
	if terr != nil {
		return TransitionResult{}, fmt.Errorf("transition: %w", terr)
	}
	plan, perr := intentPlan(tree, j, next)
	if perr != nil {
		return TransitionResult{}, perr
	}
	res := TransitionResult{From: in.From, To: to, Plan: plan}
	ferr := finishPlan(j, root, tree, plan, next, true, opts.Progress)
	if ferr != nil && !errors.Is(ferr, ErrUnsupported) {
		return res, fmt.Errorf("%s could not take the place of the unfinished %s either: %w", reasonOf(opts.Reason), reasonOf(in.Reason), ferr)
	}
	res.Written = len(plan.Changes())
	return res, ferr
}

func reasonOf(s string) string {
	if s == "" {
		return "apply"
	}
	return s
}

// finishPlan applies the plan, updates the stat cache and records the end:
// active = applied = the plan's end, the visit marks, and the intent
// removed, in one durable update. Unless intentExists, it writes the intent
// first (see applyPlan).
func finishPlan(j *journal.Journal, root *os.Root, tree *tasks.Tree, plan Plan, in journal.Intent, intentExists bool, progress Progress) error {
	to := plan.Walk.To
	var m Manifest
	var unsupported error
	if len(plan.Target) > 0 {
		var err error
		m, err = applyPlan(j, root, plan, in, intentExists, progress)
		if errors.Is(err, ErrUnsupported) {
			unsupported, err = err, nil // the rest was applied: record the end, then report it
		}
		if err != nil {
			return err
		}
	}
	var deleted []string
	for p, t := range plan.Target {
		if _, ok := m[p]; t.Kind == absentKind || (len(plan.Target) > 0 && !ok) {
			// Absent now, or changed by another process after the apply
			// wrote it: no entry vouches for it.
			deleted = append(deleted, p)
		}
	}
	if err := j.PutStats(m, deleted); err != nil {
		return fmt.Errorf("apply %d -> %d: stat cache: %w", in.From, to, err)
	}
	st, err := j.State()
	if err != nil {
		return fmt.Errorf("apply %d -> %d: %w", in.From, to, err)
	}
	visited, next := Visit(tree, st, to)
	next.Applied = to
	err = j.Update(func(tx *journal.Tx) error {
		for _, t := range visited {
			if err := tx.PutTask(t); err != nil {
				return err
			}
		}
		if err := tx.SetState(next); err != nil {
			return err
		}
		if len(plan.Target) > 0 || intentExists {
			return tx.DeleteIntent()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply %d -> %d: record end: %w", in.From, to, err)
	}
	return unsupported
}

// applyPlan makes the real tree match plan.Target, in two phases around the
// intent:
//
//  1. The intent is written marked Staging. Apply's prepare phase then
//     stages every file it can beside its path and reads back every other
//     blob the apply needs (hash and length). Nothing in the tree changes
//     but the staging files, so a failure here, above all a damaged blob,
//     cancels the apply: the staging files are removed, the intent is
//     deleted, and the error names the path, the task and the blob. A crash
//     here leaves a Staging intent: the next command (FinishIntent) removes
//     the staging files, stages again and goes on, or cancels the same way.
//  2. The intent is written again without the mark, durably: from here on
//     the apply can only be finished, never cancelled (the tree is being
//     changed), and every step is idempotent. Then the removals,
//     directories, remaining files and renames.
//
// An intent written by an older version, or by a caller without the mark,
// is at phase 2 already.
func applyPlan(j *journal.Journal, root *os.Root, plan Plan, in journal.Intent, intentExists bool, progress Progress) (Manifest, error) {
	a, err := newApplier(root, j, plan.Target, progress)
	if err != nil {
		return nil, err
	}
	defer a.close()
	cancellable := !intentExists || in.Staging
	if !intentExists {
		in.Staging = true
		if err := j.Update(func(tx *journal.Tx) error { return tx.PutIntent(in) }); err != nil {
			return nil, fmt.Errorf("apply %d -> %d: write intent: %w", in.From, in.To, err)
		}
	}
	if err := a.prepare(); err != nil {
		a.discard(err)
		if !cancellable || errors.Is(err, errCrash) {
			return nil, err
		}
		err = cancelled(j, plan, in, err)
		if derr := j.Update(func(tx *journal.Tx) error { return tx.DeleteIntent() }); derr != nil {
			return nil, errors.Join(err, fmt.Errorf("apply %d -> %d: delete intent: %w", in.From, in.To, derr))
		}
		return nil, err
	}
	if cancellable {
		in.Staging = false
		if err := j.Update(func(tx *journal.Tx) error { return tx.PutIntent(in) }); err != nil {
			a.discard(err)
			return nil, fmt.Errorf("apply %d -> %d: write intent: %w", in.From, in.To, err)
		}
	}
	return a.finish()
}

// cancelled explains an apply cancelled before it changed the tree: for a
// damaged or missing blob, which path needs it and which task recorded it.
func cancelled(j *journal.Journal, plan Plan, in journal.Intent, err error) error {
	what := in.Reason
	if what == "" {
		what = "apply"
	}
	var be *blobError
	if !errors.As(err, &be) {
		return fmt.Errorf("%s (task %d to %d) cancelled before changing anything: %w", what, in.From, in.To, err)
	}
	source := ""
	if id, state, ok := targetSource(j, plan, be.path); ok {
		source = fmt.Sprintf(" (its %s state in task %d)", state, id)
	}
	return fmt.Errorf("%s (task %d to %d) refused, nothing was changed: %s%s needs content the journal cannot read back intact: %w",
		what, in.From, in.To, be.path, source, be.err)
}

// targetSource finds the task whose layer gave p its target state in plan
// (MakePlan's rule): the last task down the walk that touched p (its after
// state), else the task up the walk closest to the common ancestor (its
// before state).
func targetSource(j *journal.Journal, plan Plan, p string) (tasks.ID, string, bool) {
	for i := len(plan.Walk.Down) - 1; i >= 0; i-- {
		if _, ok, err := j.LayerChange(plan.Walk.Down[i], p); err == nil && ok {
			return plan.Walk.Down[i], "after", true
		}
	}
	for i := len(plan.Walk.Up) - 1; i >= 0; i-- {
		if _, ok, err := j.LayerChange(plan.Walk.Up[i], p); err == nil && ok {
			return plan.Walk.Up[i], "before", true
		}
	}
	return 0, "", false
}

// planDrift returns the touched paths whose real state differs from the
// plan's expected state, plus the unrecorded content of directories the plan
// removes (so nothing the history does not know is deleted unseen).
//
// Only the plan's paths are looked up in the stat cache (journal.Stats), and
// every directory is opened once (dirCache).
func planDrift(j *journal.Journal, root *os.Root, plan Plan) ([]Drifted, error) {
	paths := plan.Paths()
	for p := range plan.Expected {
		if _, ok := plan.Target[p]; !ok {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		if !ValidPath(p) {
			return nil, fmt.Errorf("drift %q: %w", p, ErrBadPath)
		}
	}
	c, err := j.Stats(paths)
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	cache := Manifest(c)
	dirs := newDirCache(root)
	defer dirs.close()
	actual, err := actualStates(dirs, j, paths, cache)
	if err != nil {
		return nil, err
	}
	out := drifted(sortedKeys(plan.Expected), plan.Expected, actual)
	for _, p := range plan.Paths() {
		if plan.Target[p].Kind == dirKind || actual[p].Kind != dirKind {
			continue
		}
		extra, err := unknownBelow(root, j, p, plan.Target, cache)
		if err != nil {
			return nil, err
		}
		out = append(out, extra...)
	}
	sortDrifted(out)
	return dedupeDrifted(out), nil
}

// unknownBelow scans the real directory dir and returns every entry below it
// that the plan does not mention, as drift from absent.
func unknownBelow(root *os.Root, blobs Blobs, dir string, target map[string]NodeState, cache Manifest) ([]Drifted, error) {
	sub, err := root.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("drift %s: %w", dir, err)
	}
	defer sub.Close()
	subCache := Manifest{}
	for p, e := range cache {
		if rest, ok := strings.CutPrefix(p, dir+"/"); ok {
			subCache[rest] = e
		}
	}
	m, _, err := Scan(sub, blobs, ScanOptions{Cache: subCache})
	if err != nil {
		return nil, fmt.Errorf("drift %s: %w", dir, err)
	}
	var out []Drifted
	for rel, e := range m {
		p := dir + "/" + rel
		if _, known := target[p]; !known {
			out = append(out, Drifted{Path: p, Actual: e.State()})
		}
	}
	return out, nil
}

func dedupeDrifted(d []Drifted) []Drifted {
	out := d[:0]
	for i, x := range d {
		if i > 0 && x.Path == d[i-1].Path {
			continue
		}
		out = append(out, x)
	}
	return out
}

// recordDrift records changes as an outside task under parent, or returns
// an existing outside child of parent with exactly these changes. The
// position in history is unchanged (only Current moves).
func recordDrift(j *journal.Journal, tree *tasks.Tree, parent tasks.ID, changes []Change, now time.Time) (tasks.ID, error) {
	for _, c := range tree.Children(parent) {
		t, _ := tree.Get(c)
		if t.Kind != tasks.KindOutside {
			continue
		}
		layer, err := j.Layer(c)
		if err != nil {
			return 0, fmt.Errorf("record drift: %w", err)
		}
		if sameChanges(layer, changes) {
			return c, nil
		}
	}
	st, err := j.State()
	if err != nil {
		return 0, fmt.Errorf("record drift: %w", err)
	}
	t, err := CreateTask(j, NewTask{Task: outsideTask(NextTaskID(tree, st), parent, len(changes), now), Changes: changes})
	if err != nil {
		return 0, fmt.Errorf("record drift: %w", err)
	}
	return t.ID, nil
}

func outsideTask(id, parent tasks.ID, n int, now time.Time) tasks.Task {
	return tasks.Task{
		ID: id, Parent: parent, Kind: tasks.KindOutside, Created: now, Ended: now,
		Summary: fmt.Sprintf("changes made outside a session (%d files)", n),
	}
}

func sameChanges(a, b []Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || !a[i].Before.Equal(b[i].Before) || !a[i].After.Equal(b[i].After) {
			return false
		}
	}
	return true
}

func maxID(tree *tasks.Tree) tasks.ID { return tree.MaxID() }

// RecordOutside records changes found outside any session (a copy-mode
// session's first scan differing from the stat cache) as an outside task,
// child of parent, and makes it the active, applied and current task.
func RecordOutside(j *journal.Journal, parent tasks.ID, changes []Change, now time.Time) (tasks.ID, error) {
	for _, c := range changes {
		if !ValidPath(c.Path) {
			return 0, fmt.Errorf("record outside changes %q: %w", c.Path, ErrBadPath)
		}
	}
	st, err := j.State()
	if err != nil {
		return 0, fmt.Errorf("record outside changes: %w", err)
	}
	tree, err := j.Tree()
	if err != nil {
		return 0, fmt.Errorf("record outside changes: %w", err)
	}
	if !tree.Has(parent) {
		return 0, fmt.Errorf("record outside changes: %w %d", tasks.ErrUnknown, parent)
	}
	t, err := CreateTask(j, NewTask{Task: outsideTask(NextTaskID(tree, st), parent, len(changes), now),
		Changes: changes, Activate: true, Applied: true})
	if err != nil {
		return 0, fmt.Errorf("record outside changes: %w", err)
	}
	return t.ID, nil
}
