package cow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
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

// mapView is a StateReader over a map of states (a view that is not a real
// tree, as a fuse session's mounted view is to cow).
type mapView map[string]NodeState

func (v mapView) States(paths []string, _ map[string]journal.StatEntry) (map[string]NodeState, error) {
	out := map[string]NodeState{}
	for _, p := range paths {
		out[p] = v[p]
	}
	return out, nil
}

func (v mapView) Below(dir string, known map[string]NodeState) (map[string]NodeState, error) {
	out := map[string]NodeState{}
	for p, s := range v {
		if _, ok := known[p]; !ok && len(p) > len(dir) && p[:len(dir)+1] == dir+"/" {
			out[p] = s
		}
	}
	return out, nil
}

// TestDriftFrom: drift against states read elsewhere than a real tree:
// changed paths, and unknown entries below directories the plan removes
// (each once, also below nested removed directories).
func TestDriftFrom(t *testing.T) {
	file := func(n int64) NodeState { return NodeState{Kind: fileKind, Mode: 0o644, Size: n} }
	dir := NodeState{Kind: dirKind, Mode: 0o755}
	plan := Plan{
		Expected: map[string]NodeState{"a": file(1), "b": file(2), "d": dir, "d/e": dir, "d/e/x": file(3), "keep": dir},
		Target:   map[string]NodeState{"a": file(9), "b": {}, "d": {}, "d/e": {}, "d/e/x": {}, "keep": dir},
	}
	view := mapView{"a": file(1), "b": file(5), "d": dir, "d/e": dir, "d/e/x": file(3), "d/e/new": file(4), "keep": dir, "keep/other": file(6)}
	got, err := DriftFrom(view, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range got {
		paths = append(paths, d.Path)
	}
	if len(got) != 2 || got[0].Path != "b" || !got[0].Actual.Equal(file(5)) || got[1].Path != "d/e/new" || got[1].Expected.Kind != absentKind {
		t.Fatalf("drift: %v", paths)
	}
	if _, err := DriftFrom(view, Plan{Expected: map[string]NodeState{"../x": {}}, Target: map[string]NodeState{"../x": {}}}, nil); !errors.Is(err, ErrBadPath) {
		t.Fatalf("bad path: %v", err)
	}
}
