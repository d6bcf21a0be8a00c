package cow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDrift(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "same.txt", "same", 0o644)
	write(t, dir, "edited.txt", "v1", 0o644)
	write(t, dir, "chmod.sh", "#!/bin/sh", 0o644)
	write(t, dir, "deleted.txt", "bye", 0o644)
	write(t, dir, "became-link", "file", 0o644)
	write(t, dir, "d/inner", "i", 0o644)
	settle(t)
	root := openRoot(t, dir)
	blobs := newMemBlobs()
	cache, _, err := Scan(root, blobs, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expected := states(cache)
	expected["never-existed"] = NodeState{}
	expected["gone-dir/x"] = NodeState{}

	reads := countReads(t)
	drifted, err := Drift(root, blobs, expected, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(drifted) != 0 || reads.Load() != 0 {
		t.Fatalf("unchanged tree: drifted %v, %d reads", drifted, reads.Load())
	}

	write(t, dir, "edited.txt", "v2", 0o644)
	mustDo(t, os.Chmod(filepath.Join(dir, "chmod.sh"), 0o755))
	mustDo(t, os.Remove(filepath.Join(dir, "deleted.txt")))
	mustDo(t, os.Remove(filepath.Join(dir, "became-link")))
	mustDo(t, os.Symlink("same.txt", filepath.Join(dir, "became-link")))
	write(t, dir, "never-existed", "new", 0o600)
	drifted, err = Drift(root, blobs, expected, cache)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range drifted {
		paths = append(paths, d.Path)
	}
	want := []string{"became-link", "chmod.sh", "deleted.txt", "edited.txt", "never-existed"}
	if len(paths) != len(want) {
		t.Fatalf("drifted %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("drifted %v, want %v", paths, want)
		}
	}
	byPath := map[string]Drifted{}
	for _, d := range drifted {
		byPath[d.Path] = d
	}
	if a := byPath["edited.txt"].Actual; string(blobs.bytes(a.Blob)) != "v2" {
		t.Errorf("drifted content not stored: %q", blobs.bytes(a.Blob))
	}
	if a := byPath["became-link"].Actual; a.Kind != symlinkKind || a.Target != "same.txt" {
		t.Errorf("became-link actual = %s", fmtState(a))
	}
	if a := byPath["deleted.txt"].Actual; a.Kind != absentKind {
		t.Errorf("deleted actual = %s", fmtState(a))
	}
	if reads.Load() != 3 {
		t.Errorf("%d reads, want 3 (edited.txt, chmod.sh, never-existed)", reads.Load())
	}
	if _, err := Drift(root, blobs, map[string]NodeState{"../x": {}}, nil); !errors.Is(err, ErrBadPath) {
		t.Errorf("bad path: %v", err)
	}
}
