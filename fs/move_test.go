//go:build linux

package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// damagedStore is the journal with one blob that cannot be read back
// intact: its reads fail as the journal fails on a flipped byte, after
// writing part of the content (a damaged chunk in the middle of a blob).
type damagedStore struct {
	*journal.Journal
	bad journal.BlobRef
}

func (s damagedStore) WriteBlob(ref journal.BlobRef, w io.Writer) error {
	if ref != s.bad {
		return s.Journal.WriteBlob(ref, w)
	}
	b, err := s.ReadBlob(ref)
	if err != nil {
		return err
	}
	if _, err := w.Write(b[:len(b)/2]); err != nil {
		return err
	}
	return fmt.Errorf("read blob %s: %w: content hash 0000000000000000", ref, journal.ErrCorrupt)
}

// failedMove checks what a view change that failed must leave: the view as
// before, later writes recorded in the task that was active (1), and
// nothing in the task the move would have started.
func failedMove(t *testing.T, o *testOverlay, before map[string]string, err error, next tasks.ID) {
	t.Helper()
	if err == nil {
		t.Fatal("the view change succeeded")
	}
	if d := diffSnapshots(before, snapshot(t, o.root)); d != "" {
		t.Fatalf("a failed view change (%v) changed the view:\n%s", err, d)
	}
	p := filepath.Join(o.root, "top.txt")
	if err := os.WriteFile(p, []byte("written after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "top.txt"); blob(t, o.j, c.After) != "written after\n" {
		t.Fatalf("a write after the failed view change is not in task 1: %+v", c)
	}
	if layer, err := o.j.Layer(next); err != nil || len(layer) != 0 {
		t.Fatalf("task %d (never started) has records: %v %v", next, layer, err)
	}
}

// TestMoveDamagedBlob: a view change that needs a blob the journal cannot
// read back changes nothing (neither the paths before nor after the damaged
// one in its order), says which path, and the overlay goes on recording
// into the task that was active.
func TestMoveDamagedBlob(t *testing.T) {
	var st damagedStore
	o, cleanup := setupOverlayStore(t, fillSample, func(j *journal.Journal) store {
		st.Journal = j
		return &st
	})
	defer cleanup()
	// A first change in task 1, so the view has an upper tree.
	if err := os.WriteFile(filepath.Join(o.root, "lower/a.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, err := o.j.PutBytes([]byte("good content\n"))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := o.j.PutBytes(bytes.Repeat([]byte("damaged "), 4096))
	if err != nil {
		t.Fatal(err)
	}
	st.bad = bad
	before := snapshot(t, o.root)
	target := map[string]journal.NodeState{
		"lower/a.txt":      {Kind: journal.File, Mode: 0o644, Size: good.Size, Blob: good},
		"lower/m/new.txt":  {Kind: journal.File, Mode: 0o644, Size: bad.Size, Blob: bad},
		"lower/m":          {Kind: journal.Dir, Mode: 0o755},
		"lower/sub":        {Kind: journal.Absent},
		"lower/z-last.txt": {Kind: journal.File, Mode: 0o644, Size: good.Size, Blob: good},
		"top.txt":          {Kind: journal.Symlink, Target: "lower/a.txt"},
	}
	err = o.SetView(target, 7)
	if err != nil && !strings.Contains(err.Error(), "lower/m/new.txt") {
		t.Fatalf("the error does not name the path: %v", err)
	}
	failedMove(t, o, before, err, 7)
	if left, _ := os.ReadDir(o.tmp); len(left) != 0 {
		t.Fatalf("staging files left: %v", left)
	}
	// The same change without the damaged blob goes through.
	delete(target, "lower/m/new.txt")
	if err := o.SetView(target, 8); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(o.root, "lower/z-last.txt")); got != "good content\n" {
		t.Fatalf("z-last.txt reads %q", got)
	}
}

// TestMoveThroughSymlink: a target path whose parent directory is a symlink
// in the view (a directory replaced by a symlink outside the session) is
// refused before anything changes, and nothing is written where the
// symlink points.
func TestMoveThroughSymlink(t *testing.T) {
	elsewhere := t.TempDir()
	o := mountTest(t, func(root string) {
		fillSample(root)
		if err := os.Symlink(elsewhere, filepath.Join(root, "lower/d")); err != nil {
			panic(err)
		}
	})
	ref, err := o.j.PutBytes([]byte("content\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, o.root)
	target := map[string]journal.NodeState{
		"lower/a.txt": {Kind: journal.Absent},
		"lower/d/x":   {Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref},
	}
	err = o.SetView(target, 7)
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Fatalf("the view change wrote through the symlink: %v", left)
	}
	if err != nil && !strings.Contains(err.Error(), "lower/d") {
		t.Fatalf("the error does not name the symlink: %v", err)
	}
	failedMove(t, o, before, err, 7)
}

// TestMoveNoSpace: a view change whose content does not fit in the staging
// file system beside the journal's reserve changes nothing and says so.
func TestMoveNoSpace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	o := mountTest(t, fillSample)
	staging := filepath.Dir(o.upper)
	// Move the staging dir onto a tmpfs with 12 MiB beyond the reserve: the
	// upper tree (empty so far) and the tmp dir are made again there.
	size := fmt.Sprintf("size=%dk", (spaceReserve+12<<20)>>10)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", size, "tmpfs", staging).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", staging).Run() })
	for _, d := range []string{o.upper, o.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(o.root, "lower/a.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 20<<20)
	for i := range big {
		big[i] = byte(i*31 + i>>9)
	}
	ref, err := o.j.PutBytes(big)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, o.root)
	target := map[string]journal.NodeState{
		"lower/a.txt": {Kind: journal.Absent},
		"lower/big":   {Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref},
	}
	err = o.SetView(target, 7)
	if err != nil && !strings.Contains(err.Error(), "no space") {
		t.Fatalf("the error does not say the staging file system is full: %v", err)
	}
	failedMove(t, o, before, err, 7)
}

// TestMoveRollback: a view change that fails part way through its second
// phase (a state of a kind this version does not know, from a damaged or
// newer journal) puts back everything it had changed: removed lower and
// upper objects, replaced files, new symlinks.
func TestMoveRollback(t *testing.T) {
	o := mountTest(t, fillSample)
	if err := os.WriteFile(filepath.Join(o.root, "lower/a.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(o.root, "made"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.root, "made/new.txt"), []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := o.j.PutBytes([]byte("from the journal\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, o.root)
	target := map[string]journal.NodeState{
		"top.txt":          {Kind: journal.Symlink, Target: "lower/a.txt"},
		"made":             {Kind: journal.Absent},
		"lower/sub":        {Kind: journal.Absent},
		"lower/a.txt":      {Kind: journal.File, Mode: 0o600, Size: ref.Size, Blob: ref},
		"lower/b-dir":      {Kind: journal.Dir, Mode: 0o700},
		"lower/b-dir/f":    {Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref},
		"lower/zz.unknown": {Kind: journal.NodeKind(42)},
	}
	err = o.SetView(target, 7)
	if err != nil && !strings.Contains(err.Error(), "lower/zz.unknown") {
		t.Fatalf("the error does not name the path: %v", err)
	}
	failedMove(t, o, before, err, 7)
	if got := readFile(t, filepath.Join(o.root, "made/new.txt")); got != "new\n" {
		t.Fatalf("made/new.txt reads %q", got)
	}
	if left, _ := os.ReadDir(o.tmp); len(left) != 0 {
		t.Fatalf("staging or trash left: %v", left)
	}
}

// TestViewStatesStatCache: a move reads the view's lower files unless the
// stat cache's entry matches their lstat, and reads again a lower file
// that changed since a previous move read it.
func TestViewStatesStatCache(t *testing.T) {
	var st unix.Stat_t
	o := mountTest(t, func(root string) {
		fillSample(root)
		if err := unix.Lstat(filepath.Join(root, "lower/a.txt"), &st); err != nil {
			panic(err)
		}
	})
	vouched := journal.BlobRef{Hash: 42, Size: st.Size}
	entry := journal.StatEntry{Kind: journal.File, Size: st.Size, MtimeNs: statMtimeNs(&st), CtimeNs: statCtimeNs(&st),
		Ino: uint64(st.Ino), Mode: 0o644, Blob: vouched}
	read := func(cache map[string]journal.StatEntry) journal.NodeState {
		t.Helper()
		var got journal.NodeState
		_, err := o.Move(func(view ViewReader) (map[string]journal.NodeState, tasks.ID, error) {
			states, err := view.States([]string{"lower/a.txt"}, cache)
			got = states["lower/a.txt"]
			return nil, 0, errors.Join(err, errors.New("only looking"))
		})
		if err == nil || !strings.Contains(err.Error(), "only looking") {
			t.Fatalf("move: %v", err)
		}
		return got
	}
	if got := read(map[string]journal.StatEntry{"lower/a.txt": entry}); got.Blob != vouched {
		t.Fatalf("a matching stat cache entry is not used: %+v", got)
	}
	stale := entry
	stale.MtimeNs++
	if got := read(map[string]journal.StatEntry{"lower/a.txt": stale}); blob(t, o.j, got) != "hello lower\n" {
		t.Fatalf("a stale stat cache entry is used: %+v", got)
	}
	// The lower tree changes under the mount (a shell whose directory was
	// in the root before the mount).
	f, err := o.lower.root.OpenFile("lower/a.txt", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("changed below\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := read(nil); blob(t, o.j, got) != "changed below\n" {
		t.Fatalf("the lower file is not read again: %q", blob(t, o.j, got))
	}
}
