//go:build linux

package fs

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Offsets past 4 GiB and sparse files through a real mount, without writing
// gigabytes: a few bytes at 5 GiB leave a hole the upper tree must keep.
const (
	largeOff       = 5 << 30       // far past 4 GiB
	large4G        = 1 << 32       // 4 GiB: where 32-bit offsets wrap
	largeSparseMax = 1 << 20       // allocated bytes allowed for a mostly-hole file
	largeHoles     = 64 << 20      // logical size of a sparse file in the lower tree
	largeBSize     = int64(20000)  // lower/sub/b.bin (fillSample)
	largeAppend    = "tail1tail2!" // O_APPEND writes
)

// fillLarge is fillSample plus a sparse lower file: largeHoles bytes, data
// only in its last 4 KiB.
func fillLarge(root string) {
	fillSample(root)
	f, err := os.Create(filepath.Join(root, "holes.img"))
	if err == nil {
		_, err = f.WriteAt(bytes.Repeat([]byte("h"), 4096), largeHoles-4096)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		panic(err)
	}
}

// largeAllocated is the space a file takes on disk (st_blocks).
func largeAllocated(t *testing.T, p string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// largeReadAt reads n bytes at off, failing the test on a short read.
func largeReadAt(t *testing.T, f *os.File, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if k, err := f.ReadAt(b, off); k != n {
		t.Fatalf("read %d bytes at %d of %s: got %d: %v", n, off, f.Name(), k, err)
	}
	return b
}

// largeWantSize checks a file's size through the mount, by stat and fstat.
func largeWantSize(t *testing.T, f *os.File, size int64) {
	t.Helper()
	if fi, err := os.Stat(f.Name()); err != nil || fi.Size() != size {
		t.Fatalf("stat %s: size %v, want %d (%v)", f.Name(), fi.Size(), size, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		t.Fatalf("fstat %s: size %v, want %d (%v)", f.Name(), fi.Size(), size, err)
	}
}

// largeSHA is the sha256 of a file's content.
func largeSHA(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// TestLargeSparse writes at 5 GiB into a new file and a copied-up lower file,
// across the 4 GiB boundary and with O_APPEND, truncates down and fsyncs, all
// through the mount; the upper tree keeps the holes of files written sparse
// (and a sparse lower file keeps its holes in copy-up); undo (SetView to the
// layer's before states) gives the lower tree back byte for byte, and redo
// the recorded after states.
func TestLargeSparse(t *testing.T) {
	o := mountTest(t, fillLarge)
	lowerB := largeSHA(t, filepath.Join(o.root, "lower/sub/b.bin"))
	zero := make([]byte, 4096)

	// A new file with 5 bytes at 5 GiB: a hole before them, in the view and
	// in the upper tree.
	newP := filepath.Join(o.root, "new.bin")
	nf, err := os.OpenFile(newP, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	if _, err := nf.WriteAt([]byte("hello"), largeOff); err != nil {
		t.Fatal(err)
	}
	largeWantSize(t, nf, largeOff+5)
	if got := largeReadAt(t, nf, largeOff-4096, 4096+5); !bytes.Equal(got[:4096], zero) || string(got[4096:]) != "hello" {
		t.Fatalf("new.bin at 5 GiB: %q…%q", got[:8], got[4096:])
	}
	if a := largeAllocated(t, o.upperPath("new.bin")); a > largeSparseMax {
		t.Fatalf("new.bin takes %d bytes in the upper tree: not sparse", a)
	}
	if a := largeAllocated(t, newP); a > largeSparseMax {
		t.Fatalf("new.bin reports %d bytes allocated through the mount", a)
	}
	// Cut it down before anything records it: recording reads every byte
	// (measured once below, on b.bin).
	if err := nf.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if err := nf.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "new.bin"); c.After.Size != 3 || c.Before.Kind != journal.Absent {
		t.Fatalf("new.bin recorded %+v", c)
	}

	// A lower file copied up and written at 5 GiB.
	bP := filepath.Join(o.root, "lower/sub/b.bin")
	bf, err := os.OpenFile(bP, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	if _, err := bf.WriteAt([]byte("world"), largeOff); err != nil {
		t.Fatal(err)
	}
	largeWantSize(t, bf, largeOff+5)
	if got := largeReadAt(t, bf, 0, int(largeBSize)); sha256.Sum256(got) != lowerB {
		t.Fatal("b.bin: lower content changed by a write at 5 GiB")
	}
	if got := largeReadAt(t, bf, largeBSize, 4096); !bytes.Equal(got, zero) {
		t.Fatalf("b.bin after the lower content: %q, want zeroes", got[:16])
	}
	if got := largeReadAt(t, bf, largeOff-4096, 4096+5); !bytes.Equal(got[:4096], zero) || string(got[4096:]) != "world" {
		t.Fatalf("b.bin at 5 GiB: %q", got[4096:])
	}
	if a := largeAllocated(t, o.upperPath("lower/sub/b.bin")); a > largeSparseMax {
		t.Fatalf("b.bin takes %d bytes in the upper tree: not sparse", a)
	}

	// 6 bytes across the 4 GiB boundary, then appends.
	if _, err := bf.WriteAt([]byte("ABCDEF"), large4G-3); err != nil {
		t.Fatal(err)
	}
	if got := largeReadAt(t, bf, large4G-4, 8); string(got) != "\x00ABCDEF\x00" {
		t.Fatalf("across 4 GiB: %q", got)
	}
	af, err := os.OpenFile(bP, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{largeAppend[:5], largeAppend[5:]} {
		if _, err := af.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	// Closing and fsyncing the 5 GiB sparse file records it: the journal
	// reads 5 GiB, nearly all of it holes. Meanwhile, lookups of new names
	// (which take the overlay's lock) measure how long the mount stalls.
	stop, stall := make(chan struct{}), make(chan time.Duration)
	go func() {
		var worst time.Duration
		for i := 0; ; i++ {
			select {
			case <-stop:
				stall <- worst
				return
			default:
			}
			s := time.Now()
			os.Lstat(filepath.Join(o.root, fmt.Sprintf("lookup-%d", i)))
			worst = max(worst, time.Since(s))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	if err := af.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bf.Sync(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	t.Logf("close + fsync of a 5 GiB sparse file (the journal records it): %v; slowest lookup in the mount meanwhile: %v", took, <-stall)
	largeWantSize(t, bf, largeOff+5+int64(len(largeAppend)))
	if got := largeReadAt(t, bf, largeOff, 5+len(largeAppend)); string(got) != "world"+largeAppend {
		t.Fatalf("after appends: %q", got)
	}
	if c := change(t, o, 1, "lower/sub/b.bin"); c.After.Size != largeOff+5+int64(len(largeAppend)) || c.Before.Size != largeBSize {
		t.Fatalf("b.bin recorded %+v", c)
	}

	// Truncate down to just past 4 GiB, then below the lower size.
	if err := bf.Truncate(large4G + 1); err != nil {
		t.Fatal(err)
	}
	largeWantSize(t, bf, large4G+1)
	if got := largeReadAt(t, bf, large4G-3, 4); string(got) != "ABCD" {
		t.Fatalf("after truncate to 4 GiB+1: %q", got)
	}
	if k, err := bf.ReadAt(make([]byte, 8), large4G+1); k != 0 || err != io.EOF {
		t.Fatalf("read past the new end: %d %v", k, err)
	}
	if err := bf.Truncate(largeBSize / 2); err != nil {
		t.Fatal(err)
	}
	if err := bf.Sync(); err != nil {
		t.Fatal(err)
	}
	largeWantSize(t, bf, largeBSize/2)
	if c := change(t, o, 1, "lower/sub/b.bin"); c.After.Size != largeBSize/2 {
		t.Fatalf("b.bin after truncate recorded %+v", c)
	}

	// A sparse lower file copied up by a write keeps its holes.
	hP := filepath.Join(o.root, "holes.img")
	lowerHoles := largeSHA(t, hP)
	hf, err := os.OpenFile(hP, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hf.WriteAt([]byte("H"), 0); err != nil {
		t.Fatal(err)
	}
	if err := hf.Close(); err != nil {
		t.Fatal(err)
	}
	if a := largeAllocated(t, o.upperPath("holes.img")); a > largeSparseMax {
		t.Fatalf("copy-up of a sparse %d MiB lower file allocates %d MiB in the upper tree (holes not kept)", largeHoles>>20, a>>20)
	}

	// Undo (the view of the layer's before states) gives the lower tree
	// back byte for byte.
	nf.Close()
	bf.Close()
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	layer, err := o.j.Layer(1)
	if err != nil {
		t.Fatal(err)
	}
	before, after := map[string]journal.NodeState{}, map[string]journal.NodeState{}
	for _, c := range layer {
		before[c.Path], after[c.Path] = c.Before, c.After
	}
	if err := o.SetView(before, tasks.ID(2)); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(o.base, snapshot(t, o.root)); d != "" {
		t.Fatalf("after undo the view differs from the lower tree:\n%s", d)
	}
	if largeSHA(t, bP) != lowerB || largeSHA(t, hP) != lowerHoles {
		t.Fatal("undo: content differs")
	}
	// Redo: the small after states come back.
	if err := o.SetView(after, tasks.ID(3)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bP); err != nil || fi.Size() != largeBSize/2 {
		t.Fatalf("redo: b.bin %v %v", fi, err)
	}
	if readFile(t, newP) != "\x00\x00\x00" {
		t.Fatal("redo: new.bin")
	}
}
