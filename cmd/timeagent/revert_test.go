package main

import (
	"strings"
	"testing"
)

// TestRevertClean reverts an early task under a later one: its
// modification, deletion and created files are undone, the later task's
// work stays, the revert is a new task, and undo gives back the state
// before the revert byte for byte.
func TestRevertClean(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.write("b.txt", "b0\n", 0o600)
	e.write("gone/g.txt", "g0\n", 0o644)
	m0 := e.manifest()
	e.sh("copy", "echo a1 > a.txt; rm b.txt; rm -r gone; mkdir -p new/sub; echo n > new/sub/n.txt; ln -s a.txt lnk")
	e.sh("copy", "echo c > c.txt")
	m2 := e.manifest()

	r := e.ok("revert", "1")
	contains(t, "revert", r.Stdout, "revert", "task 3")
	if got := e.read("a.txt"); got != "a0\n" {
		t.Fatalf("a.txt = %q", got)
	}
	if got := e.read("b.txt"); got != "b0\n" {
		t.Fatalf("b.txt = %q", got)
	}
	if got := e.read("gone/g.txt"); got != "g0\n" {
		t.Fatalf("gone/g.txt = %q", got)
	}
	for _, p := range []string{"new", "lnk"} {
		if exists(e.path(p)) {
			t.Fatalf("%s survived the revert", p)
		}
	}
	if got := e.read("c.txt"); got != "c\n" {
		t.Fatalf("the later task's c.txt = %q", got)
	}
	// Everything but c.txt is as before task 1.
	e.ok("tag", "reverted")
	l := e.log()
	rt := l.task(t, 3)
	if rt.Parent != 2 || !strings.HasPrefix(rt.Summary, "revert 1: ") || l.ActiveTask != 3 {
		t.Fatalf("revert task: %+v (active %d)", rt, l.ActiveTask)
	}
	e.ok("undo")
	sameManifest(t, "undo after revert", m2, e.manifest())
	e.ok("switch", "reverted")
	e.ok("switch", "0")
	sameManifest(t, "base", m0, e.manifest())
	e.ok("verify")
}

// TestRevertConflict: a path a later task changed is a conflict; the
// revert is refused as a whole (tree and history unchanged) unless
// --force, which skips it and says so.
func TestRevertConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.write("b.txt", "b0\n", 0o644)
	e.sh("copy", "echo a1 > a.txt; echo b1 > b.txt")
	e.ok("tag", "one")
	e.sh("copy", "echo a2 > a.txt")
	m2 := e.manifest()

	r := e.fails(1, "revert", "one")
	contains(t, "refused revert", r.Stderr, "a.txt", "conflict", "--force")
	sameManifest(t, "after a refused revert", m2, e.manifest())
	if l := e.log(); l.CurrentTask != 2 || l.ActiveTask != 2 {
		t.Fatalf("a refused revert changed history: %+v", l)
	}

	r = e.ok("revert", "--force", "1")
	contains(t, "forced revert", r.Stdout+r.Stderr, "skipped", "a.txt")
	if got := e.read("a.txt"); got != "a2\n" {
		t.Fatalf("a.txt = %q, want the later content kept", got)
	}
	if got := e.read("b.txt"); got != "b0\n" {
		t.Fatalf("b.txt = %q", got)
	}
	e.ok("undo")
	sameManifest(t, "undo after forced revert", m2, e.manifest())
}

// TestRevertDrift: content changed outside a session on a path the revert
// writes is kept as an outside task first, and is a conflict.
func TestRevertDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.sh("copy", "echo a1 > a.txt")
	e.write("a.txt", "edited by hand\n", 0o644)
	m := e.manifest()
	r := e.fails(1, "revert", "1")
	contains(t, "revert over drift", r.Stderr, "a.txt", "conflict")
	sameManifest(t, "after a refused revert over drift", m, e.manifest())
	l := e.log()
	found := false
	for _, x := range l.Tasks {
		found = found || x.Kind == "outside"
	}
	if !found {
		t.Fatalf("the drifted content was not kept as an outside task: %+v", l.Tasks)
	}
	// Usage errors.
	e.fails(2, "revert")
	e.fails(1, "revert", "0")
	e.fails(1, "revert", "77")
}

// TestRevertCreatedDeleted reverts a task that created a file and one
// that deleted files a previous task created.
func TestRevertCreatedDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keep.txt", "k\n", 0o644)
	e.sh("copy", "mkdir d; echo x > d/x.txt; echo y > y.txt")
	m1 := e.manifest()
	e.sh("copy", "rm -r d y.txt")
	var doc struct {
		Reverted uint64   `json:"reverted"`
		Task     uint64   `json:"task"`
		From     uint64   `json:"from"`
		Written  int      `json:"written"`
		Skipped  []string `json:"skipped"`
	}
	e.jsonOf(&doc, "revert", "--json", "2")
	if doc.Reverted != 2 || doc.Task != 3 || doc.From != 2 || doc.Written != 3 || doc.Skipped == nil || len(doc.Skipped) != 0 {
		t.Fatalf("revert --json: %+v", doc)
	}
	sameManifest(t, "revert of the deleting task", m1, e.manifest())
	e.ok("revert", "1") // the first task's files: present as it left them
	for _, p := range []string{"d", "y.txt"} {
		if exists(e.path(p)) {
			t.Fatalf("%s survived the revert of the task that created it", p)
		}
	}
	if got := e.read("keep.txt"); got != "k\n" {
		t.Fatalf("keep.txt = %q", got)
	}
	e.ok("verify")
}

// TestRevertDuringSession: revert is refused while a session runs (it is
// not forwarded to the session), and tag is answered by the session.
func TestRevertDuringSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.sh("copy", "echo a1 > a.txt")
	e.sh("copy", `"$TA" revert 1 > "$SCRATCH/revert" 2>&1; echo $? > "$SCRATCH/code"
"$TA" tag during 1 > "$SCRATCH/tag" 2>&1; echo $? >> "$SCRATCH/code"`)
	if got := e.readScratch("code"); got != "1\n0\n" {
		t.Fatalf("exit codes of revert and tag in a session: %q\nrevert: %s\ntag: %s", got, e.readScratch("revert"), e.readScratch("tag"))
	}
	contains(t, "revert in a session", e.readScratch("revert"), "session is running", "timeagent revert")
	if got := e.read("a.txt"); got != "a1\n" {
		t.Fatalf("a.txt = %q after a refused revert", got)
	}
	contains(t, "tag list", e.ok("tag").Stdout, "during")
}

// TestRevertDirConflict: a directory the reverted task created is a
// conflict when a later task put something in it; --force removes only
// what the task created and keeps the directory with the later content.
// A path whose directory conflicts conflicts too.
func TestRevertDirConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("f", "was a file\n", 0o644)
	e.sh("copy", "mkdir d; echo x > d/x.txt; rm f; mkdir f; echo in > f/in.txt")
	e.sh("copy", "echo y > d/y.txt; rm -r f; echo again > f")
	m := e.manifest()
	r := e.fails(1, "revert", "1")
	contains(t, "refused", r.Stderr, "d  (it holds d/y.txt", "f  (")
	sameManifest(t, "after a refused revert", m, e.manifest())
	r = e.ok("revert", "--force", "1")
	contains(t, "forced", r.Stdout, "skipped")
	if exists(e.path("d/x.txt")) || e.read("d/y.txt") != "y\n" || e.read("f") != "again\n" {
		t.Fatalf("after revert --force:\n%s", e.manifest())
	}
	e.ok("undo")
	sameManifest(t, "undo", m, e.manifest())
	e.ok("verify")
}
