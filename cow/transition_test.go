package cow

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// openJournal opens a fresh journal for rootDir, closed at the end of the test.
func openJournal(t tb, rootDir string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(filepath.Join(tempDir(t), "journal"), rootDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// runSession does what a copy-mode session does around fn: scan, run, scan,
// record the difference as a task, child of the active task, and update the
// stat cache. It returns the new task's id and the tree after it.
func runSession(t tb, j *journal.Journal, root *os.Root, fn func()) (tasks.ID, map[string]NodeState) {
	t.Helper()
	cache, err := j.StatCache()
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := Scan(root, j, ScanOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	fn()
	after, _, err := Scan(root, j, ScanOptions{Cache: before})
	if err != nil {
		t.Fatal(err)
	}
	changes := Diff(before, after)
	st, err := j.State()
	if err != nil {
		t.Fatal(err)
	}
	id := st.Current + 1
	task := tasks.Task{ID: id, Parent: st.Active, Kind: tasks.KindAgent, Summary: fmt.Sprint("session ", id),
		Created: time.Now(), Ended: time.Now(), Visit: st.Clock + 1}
	next := journal.State{Active: id, Applied: id, Current: id, Clock: st.Clock + 1}
	if err := CommitTask(j, task, changes, next); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, c := range changes {
		if c.After.Kind == absentKind {
			deleted = append(deleted, c.Path)
		}
	}
	if err := j.PutStats(after, deleted); err != nil {
		t.Fatal(err)
	}
	return id, states(after)
}

func mustTransition(t tb, j *journal.Journal, root *os.Root, to tasks.ID, opts TransitionOptions) TransitionResult {
	t.Helper()
	res, err := Transition(j, root, to, opts)
	if err != nil {
		t.Fatalf("transition to %d: %v", to, err)
	}
	return res
}

func assertTree(t tb, root *os.Root, blobs Blobs, want map[string]NodeState) {
	t.Helper()
	if d := diffStates(withoutAbsent(want), scanStates(t, root, blobs)); d != "" {
		t.Fatalf("real tree differs from the expected one:\n%s", d)
	}
}

func assertState(t tb, j *journal.Journal, active, applied tasks.ID) {
	t.Helper()
	st, err := j.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Active != active || st.Applied != applied {
		t.Fatalf("state = active %d applied %d, want %d %d", st.Active, st.Applied, active, applied)
	}
	in, err := j.Intent()
	if err != nil || in != nil {
		t.Fatalf("intent = %+v, %v; want none", in, err)
	}
}

// sessionsFixture: a base tree and two sessions on it.
func sessionsFixture(t *testing.T) (dir string, root *os.Root, j *journal.Journal, trees map[tasks.ID]map[string]NodeState) {
	dir = t.TempDir()
	write(t, dir, "keep.txt", "kept\n", 0o644)
	write(t, dir, "edit.txt", "v0\n", 0o644)
	write(t, dir, "del.txt", "deleted by 1\n", 0o644)
	write(t, dir, ".git/HEAD", "ref\n", 0o644)
	root = openRoot(t, dir)
	j = openJournal(t, dir)
	trees = map[tasks.ID]map[string]NodeState{0: scanStates(t, root, j)}
	id, tree := runSession(t, j, root, func() {
		write(t, dir, "edit.txt", "v1\n", 0o644)
		mustDo(t, os.Remove(filepath.Join(dir, "del.txt")))
		write(t, dir, "new/dir/file.go", "package dir\n", 0o644)
		mustDo(t, os.Symlink("new/dir", filepath.Join(dir, "link")))
		write(t, dir, ".git/HEAD", "ref2\n", 0o644)
	})
	trees[id] = tree
	id, tree = runSession(t, j, root, func() {
		write(t, dir, "edit.txt", "v2 longer\n", 0o755)
		mustDo(t, os.RemoveAll(filepath.Join(dir, "new")))
		write(t, dir, "new", "new is a file now", 0o644)
	})
	trees[id] = tree
	return dir, root, j, trees
}

func TestTransitionUndoRedoSwitch(t *testing.T) {
	_, root, j, trees := sessionsFixture(t)
	for _, to := range []tasks.ID{1, 0, 2, 0, 1, 2} {
		res := mustTransition(t, j, root, to, TransitionOptions{Reason: "switch"})
		if res.To != to || res.Outside != 0 {
			t.Fatalf("result %+v", res)
		}
		assertTree(t, root, j, trees[to])
		assertState(t, j, to, to)
	}
	// A transition to where the tree already is, is a valid no-op.
	res := mustTransition(t, j, root, 2, TransitionOptions{})
	if res.Written != 0 || len(res.Plan.Target) != 0 {
		t.Errorf("no-op transition wrote %d paths", res.Written)
	}
}

func TestTransitionDrift(t *testing.T) {
	dir, root, j, trees := sessionsFixture(t)
	mustTransition(t, j, root, 1, TransitionOptions{})
	write(t, dir, "edit.txt", "edited by hand\n", 0o644)

	res, err := Transition(j, root, 0, TransitionOptions{Reason: "undo"})
	if !errors.Is(err, ErrDrift) {
		t.Fatalf("err = %v, want ErrDrift", err)
	}
	if len(res.Drifted) != 1 || res.Drifted[0].Path != "edit.txt" || res.Outside == 0 {
		t.Fatalf("result %+v", res)
	}
	out := res.Outside
	task, err := j.Task(out)
	if err != nil || task.Kind != tasks.KindOutside || task.Parent != 1 || task.Files != 1 {
		t.Fatalf("outside task %+v, %v", task, err)
	}
	assertState(t, j, 1, 1)
	if b, _ := os.ReadFile(filepath.Join(dir, "edit.txt")); string(b) != "edited by hand\n" {
		t.Fatalf("a refused transition changed the tree: %q", b)
	}

	// Asking again records no duplicate; saying no refuses the same way.
	asked := 0
	res, err = Transition(j, root, 0, TransitionOptions{Confirm: func(d []Drifted) (bool, error) { asked++; return false, nil }})
	if !errors.Is(err, ErrDrift) || res.Outside != out || asked != 1 {
		t.Fatalf("second refusal: %v, outside %d (first %d), asked %d", err, res.Outside, out, asked)
	}
	if all, _ := j.Tasks(); len(all) != 3 {
		t.Fatalf("%d tasks, want 3 (no duplicate outside task)", len(all))
	}

	// Confirmed: the tree goes to the base; the hand edit stays reachable.
	res = mustTransition(t, j, root, 0, TransitionOptions{Confirm: func([]Drifted) (bool, error) { return true, nil }})
	if res.Outside != out {
		t.Fatalf("outside %d, want %d", res.Outside, out)
	}
	assertTree(t, root, j, trees[0])
	assertState(t, j, 0, 0)
	mustTransition(t, j, root, out, TransitionOptions{})
	if b, _ := os.ReadFile(filepath.Join(dir, "edit.txt")); string(b) != "edited by hand\n" {
		t.Fatalf("switch to the outside task gave %q", b)
	}
	mustTransition(t, j, root, 2, TransitionOptions{})
	assertTree(t, root, j, trees[2])
}

func TestTransitionKeepsUnknownFilesOfRemovedDirs(t *testing.T) {
	dir, root, j, trees := sessionsFixture(t)
	mustTransition(t, j, root, 1, TransitionOptions{})
	write(t, dir, "new/dir/untracked.txt", "made by hand", 0o644)
	res, err := Transition(j, root, 0, TransitionOptions{})
	if !errors.Is(err, ErrDrift) || len(res.Drifted) != 1 || res.Drifted[0].Path != "new/dir/untracked.txt" {
		t.Fatalf("err %v, drifted %+v", err, res.Drifted)
	}
	mustTransition(t, j, root, 0, TransitionOptions{Yes: true})
	assertTree(t, root, j, trees[0])
	mustTransition(t, j, root, res.Outside, TransitionOptions{})
	if b, _ := os.ReadFile(filepath.Join(dir, "new/dir/untracked.txt")); string(b) != "made by hand" {
		t.Fatalf("untracked file not restored: %q", b)
	}
}

func TestTransitionCwdCheck(t *testing.T) {
	dir, root, j, _ := sessionsFixture(t)
	mustTransition(t, j, root, 1, TransitionOptions{})
	_, err := Transition(j, root, 0, TransitionOptions{RootPath: dir, Cwd: filepath.Join(dir, "new", "dir")})
	if !errors.Is(err, ErrCwdRemoved) {
		t.Fatalf("err = %v, want ErrCwdRemoved", err)
	}
	assertState(t, j, 1, 1)
	if _, err := os.Stat(filepath.Join(dir, "new/dir/file.go")); err != nil {
		t.Fatal("a refused transition changed the tree")
	}
}

// TestFinishIntent crashes an undo after each of its k file operations
// (k = 0..n-1, staging included): the intent is always there, a crash while
// staging has changed nothing in the tree but staging files, and the next
// FinishIntent or transition finishes the undo exactly, staging files gone.
func TestFinishIntent(t *testing.T) {
	n := 0
	{
		_, root, j, _ := sessionsFixture(t)
		applyHook = func(string, string) error { n++; return nil }
		_, err := Transition(j, root, 0, TransitionOptions{Reason: "undo"})
		applyHook = nil
		mustDo(t, err)
	}
	if n < 8 {
		t.Fatalf("only %d operations in the undo", n)
	}
	staging := 0
	for k := 0; k < n; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			_, root, j, trees := sessionsFixture(t)
			count := 0
			applyHook = func(op, p string) error {
				if count == k {
					return errCrash
				}
				count++
				return nil
			}
			_, err := Transition(j, root, 0, TransitionOptions{Reason: "undo"})
			applyHook = nil
			if !errors.Is(err, errCrash) {
				t.Fatalf("err = %v", err)
			}
			in, err := j.Intent()
			if err != nil || in == nil || in.From != 2 || in.To != 0 || in.Reason != "undo" {
				t.Fatalf("intent after the crash = %+v, %v", in, err)
			}
			if in.Staging {
				staging++
				if d := diffStates(withoutAbsent(trees[2]), withoutStaging(scanStates(t, root, j))); d != "" {
					t.Fatalf("a crash while staging changed the tree:\n%s", d)
				}
			}
			if k%2 == 0 {
				finished, err := FinishIntent(j, root, nil)
				if err != nil || !finished {
					t.Fatalf("FinishIntent = %v, %v", finished, err)
				}
			} else {
				// Any transition finishes the interrupted apply first.
				mustTransition(t, j, root, 0, TransitionOptions{})
			}
			assertTree(t, root, j, trees[0])
			assertState(t, j, 0, 0)
			if finished, err := FinishIntent(j, root, nil); err != nil || finished {
				t.Fatalf("second FinishIntent = %v, %v", finished, err)
			}
		})
	}
	if staging == 0 || staging == n {
		t.Errorf("%d of %d crashes while staging: want some in each phase", staging, n)
	}
}

// withoutStaging drops the staging files from a scanned tree.
func withoutStaging(m map[string]NodeState) map[string]NodeState {
	out := map[string]NodeState{}
	for p, s := range m {
		if !strings.HasPrefix(path.Base(p), StagingPrefix) {
			out[p] = s
		}
	}
	return out
}

func TestRecordOutside(t *testing.T) {
	dir, root, j, _ := sessionsFixture(t)
	write(t, dir, "keep.txt", "changed outside\n", 0o644)
	cache, err := j.StatCache()
	if err != nil {
		t.Fatal(err)
	}
	now, _, err := Scan(root, j, ScanOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	changes := Diff(Manifest(cache), now)
	if len(changes) != 1 || changes[0].Path != "keep.txt" {
		t.Fatalf("changes %+v", changes)
	}
	id, err := RecordOutside(j, 2, changes, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	task, err := j.Task(id)
	if err != nil || task.Kind != tasks.KindOutside || task.Parent != 2 || task.Files != 1 || task.Visit == 0 {
		t.Fatalf("task %+v, %v", task, err)
	}
	st, _ := j.State()
	if st.Active != id || st.Applied != id || st.Current != id {
		t.Fatalf("state %+v", st)
	}
	tree, _ := j.Tree()
	if next, err := tree.Redo(2, 1); err != nil || next != id {
		t.Errorf("redo from 2 = %d, %v; want the outside task %d", next, err, id)
	}
}

// TestCommitTaskDropsStaleLayer: records left under an id by a commit that
// crashed before its task record do not leak into the next task given that
// id.
func TestCommitTaskDropsStaleLayer(t *testing.T) {
	j := openJournal(t, tempDir(t))
	ref, err := j.PutBytes([]byte("stale\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := NodeState{Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref}
	// The crashed commit of task 1: its layer, no task record.
	if err := j.PutChanges(1, []Change{{Path: "stale.txt", After: file}, {Path: "both.txt", After: file}}); err != nil {
		t.Fatal(err)
	}
	task := tasks.Task{ID: 1, Kind: tasks.KindAgent, Created: time.Now(), Ended: time.Now(), Visit: 1}
	changes := []Change{{Path: "both.txt", After: file}, {Path: "new.txt", After: file}}
	if err := CommitTask(j, task, changes, journal.State{Active: 1, Applied: 1, Current: 1, Clock: 1}); err != nil {
		t.Fatal(err)
	}
	layer, err := j.Layer(1)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range layer {
		paths = append(paths, c.Path)
	}
	if fmt.Sprint(paths) != "[both.txt new.txt]" {
		t.Fatalf("layer of task 1 = %v, want [both.txt new.txt]", paths)
	}
}
