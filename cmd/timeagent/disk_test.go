package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallDisk mounts a tmpfs of size (mount's syntax: "2m") and returns its
// path (unmounted at the end).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// TestFullDiskBeforeChild: the state dir's disk cannot hold the starting
// point (a 5 MiB file): run refuses before the child starts, with a one-line
// message naming the fix, and the repository is unchanged.
func TestFullDiskBeforeChild(t *testing.T) {
	t.Parallel()
	e := newRealisticEnv(t)
	e.home = smallDisk(t, "2m")
	pre := e.manifest()
	r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `touch "$SCRATCH/ran"; rm -rf docs`)
	if r.code == 0 {
		t.Fatalf("run on a full disk succeeded:\n%s", r)
	}
	oneLine(t, r.stderr)
	contains(t, "full disk", r.stderr, "no space left on device", "free some disk space")
	if exists(filepath.Join(e.scratch, "ran")) {
		t.Fatal("the child ran although the starting point could not be recorded")
	}
	sameManifest(t, "after run on a full disk", pre, e.manifest())
	// The journal is still usable and holds nothing of the refused run.
	if st := e.status(); st.State != "absent" || len(e.log().Tasks) != 0 {
		t.Fatalf("status after the refused run: %+v", st)
	}
}

// TestFullDiskAfterChild: the child writes 100 MiB that the state dir's
// disk (80 MiB, enough to start) cannot hold. What must hold: run fails, the
// child's work stays in the tree, and once space is freed the session is
// recovered (interrupted) and undo restores the pre-session tree, so
// nothing is lost.
//
// Known bug (journal): badger writes its value log through a memory map, so
// the full disk kills timeagent with SIGBUS ("fatal error: fault", exit 2)
// instead of an ENOSPC error, and while the disk stays full every command
// reports "journal is damaged: badger panicked" instead of "no space left".
// The test logs what it sees and asserts the clear message only when the
// run did not crash.
func TestFullDiskAfterChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.crashOK = true
	e.write("a.txt", "a\n", 0o644)
	e.home = smallDisk(t, "80m")
	pre := e.manifest()
	r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `head -c 104857600 /dev/urandom > big.bin; echo b > a.txt`)
	t.Logf("run: exit %d, stderr: %.200q", r.code, r.stderr)
	if r.code == 0 {
		t.Fatalf("run on a full disk succeeded:\n%s", r)
	}
	if !strings.Contains(r.stderr, "fatal error: fault") {
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		last := lines[len(lines)-1] + "\n"
		oneLine(t, last)
		contains(t, "full disk", last, "no space left on device", "free some disk space")
	}
	// Nothing is lost: the child's work is in the tree.
	if st, err := os.Stat(e.path("big.bin")); err != nil || st.Size() != 100<<20 || e.read("a.txt") != "b\n" {
		t.Fatalf("the child's work is not in the tree: %v", err)
	}
	post := e.manifest()
	r = e.ta("status", "--json")
	t.Logf("status on the full disk: exit %d, stdout: %.600s", r.code, r.stdout)
	if r.code == 0 {
		t.Fatalf("status on the full disk succeeded:\n%s", r)
	}
	sameManifest(t, "status on the full disk", post, e.manifest())
	// Free space: the session is recovered and undo restores the tree.
	if out, err := exec.Command("mount", "-o", "remount,size=400m", e.home).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	e.crashOK = false
	if st := e.status(); st.State != "interrupted" && st.State != "completed" {
		t.Fatalf("status after freeing space: %+v", st)
	}
	e.ok("undo", "--yes")
	sameManifest(t, "undo after freeing space", pre, e.manifest())
	e.ok("redo", "--yes")
	sameManifest(t, "redo after freeing space", post, e.manifest())
}
