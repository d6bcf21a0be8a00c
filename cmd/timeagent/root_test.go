package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// taIn runs timeagent ARGS with dir as its working directory.
func (e *env) taIn(dir string, args ...string) result {
	e.t.Helper()
	cmd := e.cmd(args...)
	cmd.Dir = dir
	return runCmd(e.t, cmd, args)
}

// okIn runs timeagent ARGS in dir and fails the test unless it exits 0.
func (e *env) okIn(dir string, args ...string) result {
	e.t.Helper()
	r := e.taIn(dir, args...)
	if r.Code != 0 {
		e.t.Fatalf("in %s, want exit 0:\n%s", dir, r)
	}
	return r
}

// gitFsck runs git fsck --full in dir and fails the test when it fails.
func (e *env) gitFsck(dir string) {
	e.t.Helper()
	cmd := exec.Command("git", "fsck", "--full")
	cmd.Dir = dir
	cmd.Env = e.baseEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("git fsck in %s: %v\n%s", dir, err, out)
	}
}

// TestUndoAfterGitDeleted: the agent deletes .git/ (and more); a plain
// `timeagent undo`, with no --root and no git repository left to ask, finds
// the root through its history and restores everything byte for byte, from
// the root and from a directory below it.
func TestUndoAfterGitDeleted(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			pre := e.manifest()
			e.sh(mode, "rm -rf .git NOTES.md && echo broken > main.go")
			post := e.manifest()
			if exists(e.path(".git")) {
				t.Fatal("the agent did not remove .git")
			}
			r := e.okIn(e.path("docs/a/b"), "undo")
			contains(t, "undo from docs/a/b", r.Stdout, "task 1 → task 0")
			sameManifest(t, "undo after .git was deleted", pre, e.manifest())
			e.gitFsck(e.root)
			e.ok("redo")
			sameManifest(t, "redo", post, e.manifest())
			e.ok("undo")
			sameManifest(t, "undo from the root", pre, e.manifest())
			e.gitFsck(e.root)
		})
	}
}

// TestNestedRepositories: a repository inside another one, each with its
// own history. A plain command in the inner one acts on the inner one, also
// after the agent deleted the inner .git (git then names the outer one),
// and never touches the outer root's history.
func TestNestedRepositories(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("outer.txt", "o0\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "outer")
	inner := e.path("inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, inner, e.baseEnv(), "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(inner, "a.txt"), []byte("a0\n"), 0o644)
	testrepo.Git(t, inner, e.baseEnv(), "add", "-A")
	testrepo.Git(t, inner, e.baseEnv(), "commit", "-q", "-m", "inner")
	e.sh("copy", "echo o1 > outer.txt")
	outerAfter := e.manifest()
	innerPre := manifest(t, inner)

	var st statusDoc
	decodeJSON(t, e.okIn(inner, "status", "--json"), &st)
	if st.Root != inner {
		t.Fatalf("status in the inner repository acts on %s, want %s", st.Root, inner)
	}
	e.okIn(inner, "run", "--mode", "copy", "--", "sh", "-c", "rm -rf .git && echo a1 > a.txt")
	if exists(filepath.Join(inner, ".git")) {
		t.Fatal("the agent did not remove inner/.git")
	}
	r := e.okIn(inner, "undo")
	contains(t, "undo in the inner repository", r.Stdout, "task 1 → task 0")
	sameManifest(t, "inner after undo", innerPre, manifest(t, inner))
	e.gitFsck(inner)
	if got := e.read("outer.txt"); got != "o1\n" {
		t.Fatalf("undo in the inner repository changed the outer one: outer.txt = %q", got)
	}
	if st := e.status(); st.ActiveTask != 1 || st.Root != e.root {
		t.Fatalf("outer status after the inner undo: %+v", st)
	}
	// The outer root's history is still its own.
	e.ok("undo")
	if got := e.read("outer.txt"); got != "o0\n" {
		t.Fatalf("outer undo: outer.txt = %q", got)
	}
	e.ok("redo")
	_ = outerAfter
}

// TestPlainDirWithHistoryInRepo: a plain directory protected with --root
// inside a git repository. A plain command in it (or below it) acts on it,
// the nearer root with history; in the rest of the repository, on the
// repository.
func TestPlainDirWithHistoryInRepo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("top.txt", "t0\n", 0o644)
	e.write("plain/p.txt", "p0\n", 0o644)
	e.write("plain/deep/d.txt", "d0\n", 0o644)
	e.write("plain/keep/k.txt", "k0\n", 0o644)
	plain := e.path("plain")
	pre := manifest(t, plain)
	e.okIn(plain, "--root", ".", "run", "--mode", "copy", "--", "sh", "-c", "echo p1 > p.txt; rm -r deep")
	post := manifest(t, plain)
	r := e.okIn(plain, "undo")
	contains(t, "undo in the plain directory", r.Stdout, "task 1 → task 0")
	sameManifest(t, "plain after undo", pre, manifest(t, plain))
	e.okIn(filepath.Join(plain, "keep"), "redo")
	sameManifest(t, "plain after redo from below", post, manifest(t, plain))
	var st statusDoc
	decodeJSON(t, e.okIn(plain, "status", "--json"), &st)
	if st.Root != plain || st.ActiveTask != 1 {
		t.Fatalf("status in the plain directory: %+v", st)
	}
	if st := e.status(); st.Root != e.root || st.ActiveTask != 0 {
		t.Fatalf("status at the repository's top: %+v", st)
	}
}

// TestRunRootFromOutside: `--root DIR run CMD` started outside DIR runs CMD
// in DIR and says so, so what it does is recorded and can be undone.
func TestRunRootFromOutside(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := &env{t: t, home: t.TempDir(), root: realDir(t, t.TempDir()), scratch: t.TempDir()}
			e.write("a.txt", "a\n", 0o644)
			pre := e.manifest()
			outside := realDir(t, t.TempDir())
			r := e.okIn(outside, "--root", e.root, "run", "--mode", mode, "--", "sh", "-c", "rm a.txt && echo b > b.txt")
			contains(t, "run from outside the root", r.Stderr, "runs in "+e.root)
			if exists(filepath.Join(outside, "b.txt")) {
				t.Fatal("the command ran in the caller's directory")
			}
			if e.read("b.txt") != "b\n" || exists(e.path("a.txt")) {
				t.Fatal("the command did not run in the root")
			}
			e.okIn(outside, "--root", e.root, "undo")
			sameManifest(t, "undo", pre, e.manifest())
		})
	}
}

// damageLayer opens the env's journal and breaks task id's layer: "missing"
// drops its records (what a lost log tail leaves), "garbage" overwrites
// one with bytes that do not decode.
func (e *env) damageLayer(id tasks.ID, how string) {
	e.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal"))
	if len(dirs) != 1 {
		e.t.Fatalf("want one journal, found %v", dirs)
	}
	j, err := journal.Open(dirs[0], e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	defer j.Close()
	layer, err := j.Layer(id)
	if err != nil || len(layer) == 0 {
		e.t.Fatalf("layer %d: %d changes, %v", id, len(layer), err)
	}
	switch how {
	case "missing":
		var paths []string
		for _, c := range layer {
			paths = append(paths, c.Path)
		}
		err = j.DeleteChanges(id, paths[:1])
	case "garbage":
		c := layer[0]
		c.After.Kind = 200 // no such kind
		err = j.PutChanges(id, []journal.Change{c})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// TestUndoDamagedLayer: a move through a task whose layer cannot be read
// whole is refused before anything is written: exit 1, the task named, the
// tree unchanged; verify reports it.
func TestUndoDamagedLayer(t *testing.T) {
	for _, how := range []string{"missing", "garbage"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("a.txt", "a0\n", 0o644)
			e.sh("copy", "echo a1 > a.txt; echo n > n.txt")
			e.sh("copy", "echo a2 > a.txt; echo m > m.txt")
			post := e.manifest()
			e.damageLayer(2, how)
			r := e.fails(1, "undo")
			t.Logf("refused undo: %s", r.Stderr)
			oneLine(t, r.Stderr)
			contains(t, "undo through a damaged layer", r.Stderr, "task 2", "timeagent verify")
			if strings.Contains(r.Stdout, "→") {
				t.Fatalf("a refused undo reported a move:\n%s", r)
			}
			sameManifest(t, "after the refused undo", post, e.manifest())
			if st := e.status(); st.ActiveTask != 2 {
				t.Fatalf("status after the refused undo: %+v", st)
			}
			r = e.fails(1, "verify")
			contains(t, "verify", r.Stdout, "task 2")
		})
	}
}

// TestUndoSessionStepsBack: repeated `undo --session` goes back session by
// session, then says there is nothing to undo (exit 1) and changes nothing.
func TestUndoSessionStepsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	m := []string{e.manifest()}
	for _, s := range []string{"echo a1 > a.txt", "echo a2 > a.txt; echo b > b.txt", "rm b.txt"} {
		e.sh("copy", s)
		m = append(m, e.manifest())
	}
	for want := 2; want >= 0; want-- {
		r := e.ok("undo", "--session")
		contains(t, "undo --session", r.Stdout, "→ task ")
		sameManifest(t, "undo --session", m[want], e.manifest())
		if st := e.status(); st.ActiveTask != uint64(want) {
			t.Fatalf("after undo --session: active %d, want %d", st.ActiveTask, want)
		}
	}
	r := e.fails(1, "undo", "--session")
	oneLine(t, r.Stderr)
	contains(t, "undo --session at the first session's base", r.Stderr, "nothing to undo")
	sameManifest(t, "after the refused undo --session", m[0], e.manifest())
	// Redo and a new branch: undo --session goes back over the new session
	// only, then over the first one.
	e.ok("redo")
	e.sh("copy", "echo c > c.txt")
	e.ok("undo", "--session")
	sameManifest(t, "undo --session of the branch", m[1], e.manifest())
	e.ok("undo", "--session")
	sameManifest(t, "undo --session of the first session", m[0], e.manifest())
}

// TestOrphanedSessionChild: a process a session started (it has the
// session's TIMEAGENT_SESSION and TIMEAGENT_ROOT) runs timeagent on that
// root after the session is gone: refused, nothing recovered or moved; the
// same command from the user's shell works.
func TestOrphanedSessionChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.sh("copy", "echo a1 > a.txt")
	post := e.manifest()
	orphan := &env{t: t, home: e.home, root: e.root, scratch: e.scratch,
		extra: []string{"TIMEAGENT_SESSION=1", "TIMEAGENT_ROOT=" + e.root}}
	for _, args := range [][]string{{"undo"}, {"status"}, {"run", "true"}} {
		r := orphan.fails(1, args...)
		oneLine(t, r.Stderr)
		contains(t, strings.Join(args, " ")+" from an orphaned session child", r.Stderr, "session 1", "no longer running")
	}
	sameManifest(t, "after the orphan's commands", post, e.manifest())
	e.ok("undo")
	if e.read("a.txt") != "a0\n" {
		t.Fatal("undo from the user's shell did not restore a.txt")
	}
}
