package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readScratch returns a file the child wrote into the scratch dir.
func (e *env) readScratch(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.scratch, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// outsideTask returns the first outside task of the log: the one the
// in-session move recorded. The end of the session may find the same
// lower-tree edit again (its apply checks the real tree against the
// session's base) and keep it a second time, under the base.
func (e *env) outsideTask() logTask {
	e.t.Helper()
	var found []logTask
	for _, x := range e.log().Tasks {
		if x.Kind == "outside" {
			found = append(found, x)
		}
	}
	if len(found) == 0 {
		e.t.Fatalf("want an outside task: %+v", e.log().Tasks)
	}
	return found[0]
}

// TestInSessionDrift: an undo inside a fuse session over a file that was
// edited after the task that wrote it follows the drift rule of every
// other move: the edited content is first kept as an outside task, the
// move is refused without --yes (the view unchanged), and with --yes the
// view moves and the edit stays reachable with switch.
func TestInSessionDrift(t *testing.T) {
	t.Run("agent", func(t *testing.T) {
		// The user edits f.txt between two sessions; the agent of the
		// second undoes across the task that wrote it.
		t.Parallel()
		e := newEnv(t)
		e.write("f.txt", "base\n", 0o644)
		e.sh("fuse", `echo agent > f.txt; mkdir d; echo in > d/a`)
		e.write("f.txt", "user\n", 0o644)
		e.write("d/extra", "extra\n", 0o644) // unknown to history, in a directory undo removes
		e.sh("fuse", `set -e
echo two > g.txt
if "$TA" undo 2 > "$SCRATCH/undo1.out" 2> "$SCRATCH/undo1.err"; then exit 90; fi
cat f.txt > "$SCRATCH/view1"
"$TA" undo --yes 2 > "$SCRATCH/undo2.out" 2> "$SCRATCH/undo2.err"
cat f.txt > "$SCRATCH/view2"`)
		contains(t, "refused undo", e.readScratch("undo1.err"), "f.txt", "task 3", "--yes")
		if got := e.readScratch("view1"); got != "user\n" {
			t.Fatalf("after the refused undo the agent sees %q", got)
		}
		if got := e.readScratch("view2"); got != "base\n" {
			t.Fatalf("after undo --yes the agent sees %q", got)
		}
		if got := e.read("f.txt"); got != "base\n" || exists(e.path("d")) {
			t.Fatalf("after the session f.txt is %q, d exists = %v", got, exists(e.path("d")))
		}
		out := e.outsideTask()
		if out.ID != 3 || out.Parent != 2 {
			t.Fatalf("outside task: %+v", out)
		}
		e.ok("switch", "3")
		if got := e.read("f.txt"); got != "user\n" {
			t.Fatalf("switch to the outside task: f.txt is %q", got)
		}
		if got := e.read("g.txt"); got != "two\n" {
			t.Fatalf("switch to the outside task: g.txt is %q", got)
		}
		if got := e.read("d/extra"); got != "extra\n" {
			t.Fatalf("switch to the outside task: d/extra is %q", got)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		// During a session, the user edits f.txt (written by an earlier
		// session) from a shell whose directory was in the root before
		// the mount, and edits g.txt through the mount after the task
		// that wrote it; then undoes from another terminal.
		t.Parallel()
		e := newEnv(t)
		e.write("f.txt", "base\n", 0o644)
		e.sh("fuse", `echo agent > f.txt`)
		lower, err := os.OpenRoot(e.root)
		if err != nil {
			t.Fatal(err)
		}
		defer lower.Close()
		bg := e.cmd("run", "--mode", "fuse", "--", "sh", "-c", `set -e
echo two > g.txt
"$TA" checkpoint -m three > /dev/null
touch "$SCRATCH/started"
while [ ! -e "$SCRATCH/stop" ]; do sleep 0.1; done
cat f.txt > "$SCRATCH/view"`)
		var bgOut bytes.Buffer
		bg.Stdout, bg.Stderr = &bgOut, &bgOut
		if err := bg.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if bg.ProcessState == nil {
				bg.Process.Kill()
				bg.Wait()
				rec := e.cmd("--root", e.root, "recover") // detach the dead overlay
				rec.Dir = e.scratch
				runCmd(t, rec, []string{"recover"})
			}
		})
		waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "started")) })
		if err := lower.WriteFile("f.txt", []byte("user\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.write("g.txt", "user g\n", 0o644) // through the mount
		r := e.fails(1, "undo", "3")
		contains(t, "refused undo", r.Stderr, "f.txt", "--yes")
		contains(t, "undo --yes", e.ok("undo", "--yes", "3").Stdout, "task 0")
		if err := os.WriteFile(filepath.Join(e.scratch, "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := bg.Wait(); err != nil {
			t.Fatalf("session: %v\n%s", err, bgOut.String())
		}
		if got := e.readScratch("view"); got != "base\n" {
			t.Fatalf("after undo --yes the agent sees %q", got)
		}
		out := e.outsideTask()
		e.ok("switch", "--yes", strconv.FormatUint(out.ID, 10))
		if got := e.read("f.txt"); got != "user\n" {
			t.Fatalf("switch to the outside task: f.txt is %q", got)
		}
		if got := e.read("g.txt"); got != "user g\n" {
			t.Fatalf("switch to the outside task: g.txt is %q", got)
		}
	})
}

// TestInSessionMoveDamagedBlob: an undo inside a fuse session that needs
// content the journal cannot read back fails with a message naming the
// path, leaves the agent's view as it was, and everything the agent writes
// afterwards is recorded and applied when the session ends.
func TestInSessionMoveDamagedBlob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := randomBytes(7, 64<<10)
	writeFile(t, e.path("big.bin"), old, 0o644)
	e.sh("fuse", `echo more >> big.bin`)
	e.damageInJournal(old)
	want := append(append([]byte(nil), old...), "more\n"...)
	e.sh("fuse", `set -e
if "$TA" undo 2 > "$SCRATCH/undo.out" 2> "$SCRATCH/undo.err"; then exit 90; fi
cat big.bin > "$SCRATCH/view"
echo after > after.txt`)
	contains(t, "failed undo", e.readScratch("undo.err"), "big.bin")
	if got := e.readScratch("view"); got != string(want) {
		t.Fatalf("after the failed undo the agent sees %d bytes, want the task's %d", len(got), len(want))
	}
	if got := e.read("after.txt"); got != "after\n" {
		t.Fatalf("after.txt after the session: %q", got)
	}
	if b, _ := os.ReadFile(e.path("big.bin")); !bytes.Equal(b, want) {
		t.Fatal("big.bin changed")
	}
	if t2 := e.log().task(t, 2); t2.Files != 1 {
		t.Fatalf("task 2 should hold after.txt: %+v", t2)
	}
	e.ok("undo")
	if exists(e.path("after.txt")) {
		t.Fatal("undo of task 2 left after.txt")
	}
}

// TestInSessionMoveSymlinkParent: an undo inside a fuse session that would
// write below a directory the user replaced by a symlink since (a symlink
// to a directory outside the root) fails and says why; nothing is written
// where the symlink points, the view is unchanged and the agent's later
// writes are recorded.
func TestInSessionMoveSymlinkParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	elsewhere := t.TempDir()
	e.sh("fuse", `set -e
mkdir d
echo one > d/x
"$TA" checkpoint -m two > /dev/null
echo two > d/x`)
	if err := os.RemoveAll(e.path("d")); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, e.path("d"))
	e.sh("fuse", `set -e
if "$TA" undo --yes 2 > "$SCRATCH/undo.out" 2> "$SCRATCH/undo.err"; then exit 90; fi
readlink d > "$SCRATCH/view"
echo after > after.txt`)
	contains(t, "failed undo", e.readScratch("undo.err"), "d/x", "not a directory")
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Fatalf("the undo wrote through the symlink: %v", left)
	}
	if got := strings.TrimSpace(e.readScratch("view")); got != elsewhere {
		t.Fatalf("after the failed undo d reads as %q", got)
	}
	if got := e.read("after.txt"); got != "after\n" {
		t.Fatalf("after.txt after the session: %q", got)
	}
	if t3 := e.log().task(t, 3); t3.Files != 1 {
		t.Fatalf("task 3 should hold after.txt: %+v", t3)
	}
}
