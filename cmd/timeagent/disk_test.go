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
	if r.Code == 0 {
		t.Fatalf("run on a full disk succeeded:\n%s", r)
	}
	oneLine(t, r.Stderr)
	contains(t, "full disk", r.Stderr, "no space left on device", "free some disk space")
	if exists(filepath.Join(e.scratch, "ran")) {
		t.Fatal("the child ran although the starting point could not be recorded")
	}
	sameManifest(t, "after run on a full disk", pre, e.manifest())
	// Status either shows nothing recorded or refuses with the same clear
	// message (the journal keeps some space free for itself).
	r = e.ta("status", "--json")
	if r.Code == 0 {
		var st statusDoc
		decodeJSON(t, r, &st)
		if st.State != "absent" {
			t.Fatalf("status after the refused run: %+v", st)
		}
	} else {
		var doc struct {
			Error string `json:"error"`
		}
		decodeJSON(t, result{Stdout: r.Stderr}, &doc)
		contains(t, "status on a full disk", doc.Error, "no space left on device", "free some disk space")
	}
}

// TestFullDiskAfterChild: the child writes 100 MiB that the state dir's
// disk (80 MiB, enough to start) cannot hold. Run fails with a clear
// message, the child's work stays in the tree, and once space is freed the
// session is recovered and undo restores the pre-session tree: nothing is
// lost.
func TestFullDiskAfterChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	e.home = smallDisk(t, "80m")
	pre := e.manifest()
	r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `head -c 104857600 /dev/urandom > big.bin; echo b > a.txt`)
	t.Logf("run: exit %d, stderr: %s", r.Code, r.Stderr)
	if r.Code == 0 {
		t.Fatalf("run on a full disk succeeded:\n%s", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	last := lines[len(lines)-1] + "\n"
	oneLine(t, last)
	contains(t, "full disk", last, "no space left on device", "free some disk space")
	// Nothing is lost: the child's work is in the tree.
	if st, err := os.Stat(e.path("big.bin")); err != nil || st.Size() != 100<<20 || e.read("a.txt") != "b\n" {
		t.Fatalf("the child's work is not in the tree: %v", err)
	}
	post := e.manifest()
	r = e.ta("status")
	t.Logf("status on the full disk: exit %d, stdout: %sstderr: %s", r.Code, r.Stdout, r.Stderr)
	sameManifest(t, "status on the full disk", post, e.manifest())
	// Free space: the session is recovered and undo restores the tree.
	if out, err := exec.Command("mount", "-o", "remount,size=400m", e.home).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	if st := e.status(); st.State != "interrupted" && st.State != "completed" {
		t.Fatalf("status after freeing space: %+v", st)
	}
	e.ok("undo", "--yes")
	sameManifest(t, "undo after freeing space", pre, e.manifest())
	e.ok("redo", "--yes")
	sameManifest(t, "redo after freeing space", post, e.manifest())
}
