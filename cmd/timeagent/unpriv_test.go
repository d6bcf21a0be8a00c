//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noticeLines returns the lines of s that contain sub.
func noticeLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// TestAutoFallsBackWhenMountFails: when the overlay cannot be mounted (here
// the state directory lies inside the root, so the overlay's staging
// directory would be under its own mount), auto mode runs the session in
// copy mode with one line saying why, and --mode fuse fails without leaving
// a session behind (before: exit 1 and a fake "session had died").
func TestAutoFallsBackWhenMountFails(t *testing.T) {
	e := newEnv(t)
	e.home = e.path(".timeagent-state")
	e.write("base.txt", "base\n", 0o644)
	r := e.ok("run", "--", "sh", "-c", "echo agent > made.txt")
	lines := noticeLines(r.Stderr, "copy mode:")
	if len(lines) != 1 || !strings.Contains(lines[0], "staging") {
		t.Fatalf("want one line saying why the session runs in copy mode:\n%s", r)
	}
	if got := e.read("made.txt"); got != "agent\n" {
		t.Fatalf("made.txt: %q", got)
	}
	if st := e.status(); st.State != "completed" || st.Mode != "copy" || st.Session == nil || st.Session.ID != 1 {
		t.Fatalf("status after the copy-mode session: %+v", st)
	}
	e.ok("undo", "--yes")
	if exists(e.path("made.txt")) {
		t.Fatal("undo left made.txt")
	}
	e.ok("redo", "--yes")
	if got := e.read("made.txt"); got != "agent\n" {
		t.Fatalf("made.txt after redo: %q", got)
	}
	before := e.log()

	r = e.fails(1, "run", "--mode", "fuse", "--", "sh", "-c", "echo agent > never.txt")
	contains(t, "--mode fuse", r.Stderr, "fuse mode is not available", "staging dir is inside the root")
	if strings.Contains(r.Stderr, "TIMEAGENT_HOME") {
		t.Fatalf("a mount failure hints at the state directory:\n%s", r)
	}
	if exists(e.path("never.txt")) {
		t.Fatal("the agent ran although its session did not start")
	}
	st := e.ok("status")
	for _, bad := range []string{"died", "interrupted", "recovered"} {
		if strings.Contains(st.Stdout+st.Stderr, bad) {
			t.Fatalf("a session that never started left a trace (%q):\n%s", bad, st)
		}
	}
	if after := e.log(); len(after.Tasks) != len(before.Tasks) || after.ActiveTask != before.ActiveTask {
		t.Fatalf("log changed by a session that never started:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestNoFuseDevice: a user who cannot open /dev/fuse is told what to change
// (never to move the state directory), and auto mode says so in one line
// and runs in copy mode. The unprivileged lane (scripts/test-user.sh) runs
// it with /dev/fuse 0600; elsewhere it is skipped.
func TestNoFuseDevice(t *testing.T) {
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("/dev/fuse can be opened here")
	}
	e := newEnv(t)
	e.write("base.txt", "base\n", 0o644)
	r := e.fails(1, "run", "--mode", "fuse", "--", "true")
	contains(t, "--mode fuse without /dev/fuse", r.Stderr, "/dev/fuse", "chmod 0666 /dev/fuse")
	if strings.Contains(r.Stderr, "TIMEAGENT_HOME") {
		t.Fatalf("a /dev/fuse error hints at the state directory:\n%s", r)
	}
	r = e.ok("run", "--", "sh", "-c", "echo agent > made.txt")
	if lines := noticeLines(r.Stderr, "copy mode:"); len(lines) != 1 || !strings.Contains(lines[0], "/dev/fuse") {
		t.Fatalf("want one line saying why the session runs in copy mode:\n%s", r)
	}
	e.ok("undo", "--yes")
	if exists(e.path("made.txt")) {
		t.Fatal("undo left made.txt")
	}
}

// TestFuseAsNormalUser: as a normal user, fuse mode mounts the overlay
// through fusermount3, without allow_other (which /etc/fuse.conf would
// have to permit), and takes it away at the end. Skipped as root; the
// unprivileged lane runs it.
func TestFuseAsNormalUser(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as a normal user (make test-user)")
	}
	e := newEnv(t)
	e.write("base.txt", "base\n", 0o644)
	seen := filepath.Join(e.scratch, "mountinfo")
	e.sh("fuse", `grep fuse.timeagent /proc/self/mountinfo > "`+seen+`"; echo agent > made.txt`)
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " "+e.root+" ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("the agent did not run on the overlay:\n%s", b)
	}
	if strings.Contains(line, "allow_other") {
		t.Fatalf("mounted with allow_other: %s", line)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), " "+e.root+" ") {
		t.Fatalf("the overlay is still mounted after the session:\n%s", mi)
	}
	if got := e.read("made.txt"); got != "agent\n" {
		t.Fatalf("made.txt after the session: %q", got)
	}
	e.ok("undo", "--yes")
	if exists(e.path("made.txt")) {
		t.Fatal("undo left made.txt")
	}
}

// TestIsolateAsNormalUser: run --isolate as a normal user runs in a user
// namespace of its own, the agent without any capability there (it cannot
// unmount the overlay and write into the real tree), and apply writes the
// work afterwards. Skipped as root; the unprivileged lane runs it.
func TestIsolateAsNormalUser(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as a normal user (make test-user)")
	}
	e := newEnv(t)
	e.write("base.txt", "base\n", 0o644)
	caps := filepath.Join(e.scratch, "caps")
	e.ok("run", "--mode", "fuse", "--isolate", "--", "sh", "-c",
		`grep CapEff /proc/self/status > "`+caps+`"; umount -l "$TIMEAGENT_ROOT" 2>/dev/null; echo agent > made.txt`)
	b, err := os.ReadFile(caps)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) != 2 || strings.Trim(f[1], "0") != "" {
		t.Fatalf("the isolated agent has capabilities: %s", b)
	}
	if exists(e.path("made.txt")) {
		t.Fatal("the isolated agent wrote into the real tree")
	}
	e.ok("apply", "--yes")
	if got := e.read("made.txt"); got != "agent\n" {
		t.Fatalf("made.txt after apply: %q", got)
	}
}
