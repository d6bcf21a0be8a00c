package cow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
)

func TestDirCache(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/b/c/file", "x", 0o644)
	write(t, dir, "outside/secret", "s", 0o644)
	mustDo(t, os.Symlink("../outside", filepath.Join(dir, "a/link")))
	c := newDirCache(openRoot(t, dir))
	defer c.close()

	tests := []struct {
		rel     string
		missing bool
	}{
		{".", false},
		{"a", false},
		{"a/b/c", false},
		{"a/link", true},      // a symlink is never followed
		{"a/link/x", true},    // nor in the middle of a path
		{"a/b/c/file", true},  // not a directory
		{"a/nothing/c", true}, // missing on the way
	}
	for _, tc := range tests {
		d, err := c.get(tc.rel)
		if tc.missing {
			if err == nil || !isNotExist(err) {
				t.Errorf("get(%q) err = %v, want a not-exist error", tc.rel, err)
			}
			if d != nil {
				c.release(d)
			}
			continue
		}
		if err != nil {
			t.Errorf("get(%q): %v", tc.rel, err)
			continue
		}
		if d.rel != tc.rel {
			t.Errorf("get(%q).rel = %q", tc.rel, d.rel)
		}
		c.release(d)
	}
	d1, _ := c.get("a/b")
	d2, _ := c.get("a/b")
	if d1 != d2 {
		t.Error("a directory was opened twice")
	}
	c.release(d2)

	// A removed directory is forgotten, even while in use; what is there
	// afterwards is opened anew.
	mustDo(t, os.RemoveAll(filepath.Join(dir, "a/b")))
	c.forget("a/b")
	if _, err := c.get("a/b/c"); !isNotExist(err) {
		t.Errorf("get after forget: %v", err)
	}
	if _, err := d1.lstat("c"); !isNotExist(err) {
		t.Errorf("the pinned handle of a forgotten directory: lstat = %v, want not-exist (not a closed handle)", err)
	}
	c.release(d1)
	write(t, dir, "a/b/new", "n", 0o644)
	if st, err := c.lstat("a/b/new"); err != nil || st.kind != fileKind {
		t.Errorf("lstat of a recreated directory's file: %v %v", st.kind, err)
	}
	if !c.isDir("a/b") || c.isDir("a/link") || c.isDir("a/b/new") {
		t.Error("isDir is wrong")
	}
}

// TestDirCacheEviction opens more directories than the cache keeps: handles
// in use stay valid, the others are closed and reopened on demand.
func TestDirCacheEviction(t *testing.T) {
	dir := t.TempDir()
	n := 300
	for i := range n {
		write(t, dir, fmt.Sprintf("d/%04d/f", i), "x", 0o644)
	}
	c := newDirCache(openRoot(t, dir))
	c.max = 64
	defer c.close()
	pinned, err := c.get("d/0000")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range n {
			st, err := c.lstat(fmt.Sprintf("d/%04d/f", i))
			if err != nil || st.kind != fileKind {
				t.Fatalf("round %d: lstat %d: %v", round, i, err)
			}
		}
	}
	if len(c.dirs) > c.max {
		t.Errorf("%d directories open, at most %d wanted", len(c.dirs), c.max)
	}
	if _, err := pinned.lstat("f"); err != nil {
		t.Errorf("pinned handle after evictions: %v", err)
	}
	c.release(pinned)
}

// TestApplyManyDirs applies a target spread over more directories than the
// directory cache keeps open (a small limit for the test).
func TestApplyManyDirs(t *testing.T) {
	blobs := newMemBlobs()
	target := map[string]NodeState{}
	for i := range 300 {
		p := fmt.Sprintf("top/%03d/sub/f.txt", i)
		ref, err := blobs.PutBlob(strings.NewReader(p))
		mustDo(t, err)
		target[p] = NodeState{Kind: fileKind, Mode: 0o640, Size: ref.Size, Blob: ref}
		target[fmt.Sprintf("top/%03d/sub", i)] = NodeState{Kind: dirKind, Mode: 0o750}
		target[fmt.Sprintf("top/%03d", i)] = NodeState{Kind: dirKind, Mode: 0o755}
	}
	target["top"] = NodeState{Kind: dirKind, Mode: 0o755}
	root := openRoot(t, t.TempDir())
	old := testDirLimit
	testDirLimit = 32
	defer func() { testDirLimit = old }()
	if _, err := Apply(root, blobs, target, nil); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(target, scanStates(t, root, blobs)); d != "" {
		t.Fatalf("tree differs after the apply:\n%s", d)
	}
}

// TestApplyStagingFailure: when one staged file cannot be filled (its blob
// is missing), the apply fails before any rename and leaves no staging file.
func TestApplyStagingFailure(t *testing.T) {
	dir := t.TempDir()
	blobs := newMemBlobs()
	target := map[string]NodeState{}
	for i := range 300 {
		p := fmt.Sprintf("d%d/f%03d", i%3, i)
		write(t, dir, p, "old", 0o644)
		ref, err := blobs.PutBlob(strings.NewReader("new " + p))
		mustDo(t, err)
		target[p] = NodeState{Kind: fileKind, Mode: 0o644, Size: ref.Size, Blob: ref}
	}
	target["d1/f250"] = NodeState{Kind: fileKind, Mode: 0o644, Size: 5, Blob: BlobRef{Hash: 42, Size: 5}}
	root := openRoot(t, dir)
	_, err := Apply(root, blobs, target, nil)
	if !errors.Is(err, journal.ErrNotFound) || !strings.Contains(err.Error(), "d1/f250") {
		t.Fatalf("err = %v, want the missing blob of d1/f250", err)
	}
	for p, s := range scanStates(t, root, blobs) {
		if strings.Contains(p, StagingPrefix) {
			t.Errorf("staging file left: %s", p)
		}
		if s.Kind == fileKind && string(blobs.bytes(s.Blob)) != "old" {
			t.Errorf("%s was renamed over before every file was staged", p)
		}
	}
}
