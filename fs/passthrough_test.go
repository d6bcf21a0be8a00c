//go:build linux

package fs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
)

// kernelAtLeast reports whether the running kernel is major.minor or newer.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	f := strings.FieldsFunc(rel, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		return false
	}
	a, _ := strconv.Atoi(f[0])
	b, _ := strconv.Atoi(f[1])
	return a > major || a == major && b >= minor
}

// waitUncached waits until the file node at the path segs has no cached
// handle left (the kernel's releases are asynchronous).
func waitUncached(t *testing.T, o *testOverlay, segs ...string) {
	t.Helper()
	in := o.Overlay.root.EmbeddedInode()
	for _, s := range segs {
		if in = in.GetChild(s); in == nil {
			t.Fatalf("no node %s", strings.Join(segs, "/"))
		}
	}
	n := in.Operations().(*node)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.fmu.Lock()
		cached := n.cached
		n.fmu.Unlock()
		if cached == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has %d cached handle(s) 10 s after its last close", strings.Join(segs, "/"), cached)
		}
		time.Sleep(time.Millisecond)
	}
}

// Files in the upper tree are passed through: the kernel reads and writes
// them without the overlay, and what they hold is still recorded at close,
// seen by every reader, and kept apart from untouched lower files.
func TestPassthrough(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		o, cleanup := setupOverlay(t, fillSample)
		defer cleanup()
		if !o.passthrough.Load() {
			if os.Geteuid() == 0 && kernelAtLeast(6, 9) {
				t.Fatal("passthrough not negotiated, as root on Linux 6.9 or later")
			}
			t.Skip("not run: FUSE passthrough needs root and Linux 6.9")
		}
		// A new file written in many small writes: none reaches the overlay,
		// and the content is in the journal when close returns.
		if n := writeChunked(t, o, "new.bin"); n != 0 {
			t.Fatalf("%d writes of a passed-through file reached the overlay", n)
		}

		// A lower file read through the page cache, then rewritten with
		// passthrough: later readers see the new content, not old pages.
		a := filepath.Join(o.root, "lower/a.txt")
		if got := readFile(t, a); got != "hello lower\n" {
			t.Fatalf("lower a.txt: %q", got)
		}
		// The kernel sends the reader's release after its close returns:
		// until it arrives, a writer is not passed through (cached > 0).
		waitUncached(t, o, "lower", "a.txt")
		before := o.writes.Load()
		if err := os.WriteFile(a, []byte("rewritten\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if n := o.writes.Load() - before; n != 0 {
			t.Fatalf("%d writes reached the overlay", n)
		}
		if got := readFile(t, a); got != "rewritten\n" {
			t.Fatalf("a.txt after a passthrough write reads %q", got)
		}
		if c := change(t, o, 1, "lower/a.txt"); blob(t, o.j, c.Before) != "hello lower\n" || blob(t, o.j, c.After) != "rewritten\n" {
			t.Fatalf("a.txt change: %+v", c)
		}

		// A reader of an untouched lower file holds it open (cached): a
		// writer opened meanwhile goes through the overlay, so the reader
		// sees the new content at once.
		b := filepath.Join(o.root, "lower/sub/b.bin")
		r, err := os.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		before = o.writes.Load()
		if err := os.WriteFile(b, []byte("via the overlay"), 0o644); err != nil {
			t.Fatal(err)
		}
		if o.writes.Load() == before {
			t.Fatal("a writer beside a cached reader was passed through")
		}
		buf := make([]byte, 64)
		k, _ := r.ReadAt(buf, 0)
		if string(buf[:k]) != "via the overlay" {
			t.Fatalf("the open reader sees %q", buf[:k])
		}

		// mmap writes through a passed-through file, after its close: the
		// last release records them.
		m := filepath.Join(o.root, "mapped.bin")
		if err := os.WriteFile(m, bytes.Repeat([]byte("."), 8192), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `import mmap, os, sys
f = os.open(sys.argv[1], os.O_RDWR)
mm = mmap.mmap(f, 0)
os.close(f)
mm[0:6] = b"MAPPED"
mm.flush()
mm.close()
`
		if out, err := exec.Command("python3", "-c", script, m).CombinedOutput(); err != nil {
			t.Fatalf("mmap writer: %v %s", err, out)
		}
		if err := o.Flush(); err != nil {
			t.Fatal(err)
		}
		c, ok, err := o.j.LayerChange(1, "mapped.bin")
		if err != nil || !ok || !strings.HasPrefix(blob(t, o.j, c.After), "MAPPED..") {
			t.Fatalf("mmap write recorded: ok=%v err=%v", ok, err)
		}
		if c.After.Kind != journal.File || c.After.Size != 8192 {
			t.Fatalf("mapped.bin after: %+v", c.After)
		}
	})
}

// Where the kernel declines passthrough (before Linux 6.9, or not root),
// every write of an upper file reaches the overlay, and the file is still
// recorded at close, at fsync and when a checkpoint splits its writes.
func TestNoPassthrough(t *testing.T) {
	noPassthrough = true
	defer func() { noPassthrough = false }()
	o, cleanup := setupOverlay(t, fillSample)
	defer cleanup()
	if o.passthrough.Load() {
		t.Fatal("passthrough used though the kernel declined it")
	}
	if n := writeChunked(t, o, "new.bin"); n < 64 {
		t.Fatalf("%d of 64 writes reached the overlay", n)
	}

	// A lower file rewritten: copied up, written through the overlay,
	// recorded with its lower content as before.
	a := filepath.Join(o.root, "lower/a.txt")
	before := o.writes.Load()
	if err := os.WriteFile(a, []byte("rewritten\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o.writes.Load() == before {
		t.Fatal("the write of a.txt did not reach the overlay")
	}
	if c := change(t, o, 1, "lower/a.txt"); blob(t, o.j, c.Before) != "hello lower\n" || blob(t, o.j, c.After) != "rewritten\n" {
		t.Fatalf("a.txt change: %+v", c)
	}

	// An open writer across a checkpoint: what it wrote before goes to
	// task 1, what it writes after to task 2, recorded at fsync.
	w, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	if err := o.Checkpoint(2); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "lower/a.txt"); blob(t, o.j, c.After) != "rewritten\none\n" {
		t.Fatalf("task 1 after: %q", blob(t, o.j, c.After))
	}
	if c := change(t, o, 2, "lower/a.txt"); blob(t, o.j, c.Before) != "rewritten\none\n" || blob(t, o.j, c.After) != "rewritten\none\ntwo\n" {
		t.Fatalf("task 2: before %q after %q", blob(t, o.j, c.Before), blob(t, o.j, c.After))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeChunked creates rel and writes 64 blocks of 4 KiB to it, one write
// each; a reader opened beside the open writer must see them, and the
// journal must hold them when close returns. It returns how many WRITE
// requests reached the overlay meanwhile.
func writeChunked(t *testing.T, o *testOverlay, rel string) int64 {
	t.Helper()
	p := filepath.Join(o.root, rel)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want bytes.Buffer
	before := o.writes.Load()
	for i := 0; i < 64; i++ {
		chunk := bytes.Repeat([]byte{byte(i)}, 4096)
		want.Write(chunk)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	writes := o.writes.Load() - before
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("reader beside the writer: %d bytes, err %v", len(got), err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c, ok, err := o.j.LayerChange(1, rel)
	if err != nil || !ok || blob(t, o.j, c.After) != want.String() {
		t.Fatalf("recorded at close: ok=%v err=%v", ok, err)
	}
	return writes
}
