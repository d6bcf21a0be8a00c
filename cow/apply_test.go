//go:build unix

package cow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sourceTree builds the realistic tree plus a read-only directory with
// children and returns its states (content stored in blobs).
func sourceTree(t *testing.T, blobs Blobs) map[string]NodeState {
	t.Helper()
	dir := t.TempDir()
	buildRealisticTree(t, dir)
	write(t, dir, "ro/inner.txt", "inside a 0555 dir\n", 0o644)
	write(t, dir, "ro/sub/x", "x", 0o640)
	mustDo(t, os.Chmod(filepath.Join(dir, "ro/sub"), 0o500))
	mustDo(t, os.Chmod(filepath.Join(dir, "ro"), 0o555))
	write(t, dir, "setuid-bin", "#!/bin/sh\n", 0o755)
	mustDo(t, os.Chmod(filepath.Join(dir, "setuid-bin"), 0o755|os.ModeSetuid))
	return scanStates(t, openRoot(t, dir), blobs)
}

// junkTree puts in dir what the apply must replace or remove.
func junkTree(t *testing.T, dir string) map[string]NodeState {
	t.Helper()
	write(t, dir, "src", "src is a file here", 0o644)             // target: dir
	write(t, dir, "README.md/child", "README.md is a dir", 0o644) // target: file
	write(t, dir, "srclink", "a file, not a link", 0o644)         // target: symlink
	write(t, dir, "dangling", "x", 0o644)
	mustDo(t, os.Remove(filepath.Join(dir, "dangling")))
	mustDo(t, os.Symlink("elsewhere", filepath.Join(dir, "dangling"))) // target: other link
	write(t, dir, "old/dir/file", "to be removed", 0o644)
	write(t, dir, "bin/run.sh", "#!/bin/sh\necho OLD\n", 0o644) // content and mode differ
	write(t, dir, ".env", "SECRET=1\n", 0o644)                  // only mode differs
	write(t, dir, "untouched", "not in the target", 0o644)
	// The removals a plan would list: what is gone in the target.
	return map[string]NodeState{
		"README.md/child": {}, "old": {}, "old/dir": {}, "old/dir/file": {},
	}
}

func applyTarget(src map[string]NodeState, absent map[string]NodeState) map[string]NodeState {
	target := map[string]NodeState{}
	for p, s := range src {
		target[p] = s
	}
	for p := range absent {
		target[p] = NodeState{}
	}
	return target
}

func TestApplyRoundTrip(t *testing.T) {
	blobs := newMemBlobs()
	src := sourceTree(t, blobs)
	dst := t.TempDir()
	absent := junkTree(t, dst)
	target := applyTarget(src, absent)
	root := openRoot(t, dst)
	m, err := Apply(root, blobs, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := scanStates(t, root, blobs)
	want := withoutAbsent(target)
	want["untouched"] = got["untouched"]
	if d := diffStates(want, got); d != "" {
		t.Errorf("tree after apply differs from the target:\n%s", d)
	}
	if d := diffStates(withoutAbsent(target), states(m)); d != "" {
		t.Errorf("returned manifest differs from the target:\n%s", d)
	}
	if got["ro"].Mode != 0o555 || got["setuid-bin"].Mode != 0o755|os.ModeSetuid || got["shared"].Mode != 0o775|os.ModeSetgid {
		t.Errorf("modes: ro %v, setuid-bin %v, shared %v", got["ro"].Mode, got["setuid-bin"].Mode, got["shared"].Mode)
	}
	if l, err := os.Readlink(filepath.Join(dst, "src/readme-up")); err != nil || l != "../README.md" {
		t.Errorf("symlink target = %q, %v", l, err)
	}
}

// TestApplyWithFsyncs runs a round trip with per-file (concurrent) fsyncs,
// the way used where there is no syncfs.
func TestApplyWithFsyncs(t *testing.T) {
	useSyncFS = false
	defer func() { useSyncFS = canSyncFS }()
	TestApplyRoundTrip(t)
}

func TestApplyIdempotent(t *testing.T) {
	blobs := newMemBlobs()
	src := sourceTree(t, blobs)
	dst := t.TempDir()
	target := applyTarget(src, junkTree(t, dst))
	root := openRoot(t, dst)
	if _, err := Apply(root, blobs, target, nil); err != nil {
		t.Fatal(err)
	}
	var ops []string
	applyHook = func(op, p string) error { ops = append(ops, op+" "+p); return nil }
	defer func() { applyHook = nil }()
	if _, err := Apply(root, blobs, target, nil); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 0 {
		t.Errorf("a second apply changed the tree: %v", ops)
	}
}

// TestApplyAfterCrash stops an apply after k changes, for every k, and checks
// that the next apply finishes the job exactly.
func TestApplyAfterCrash(t *testing.T) {
	blobs := newMemBlobs()
	src := sourceTree(t, blobs)
	// Count the changes of a full apply.
	n := 0
	{
		dst := t.TempDir()
		target := applyTarget(src, junkTree(t, dst))
		applyHook = func(string, string) error { n++; return nil }
		_, err := Apply(openRoot(t, dst), blobs, target, nil)
		applyHook = nil
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 20 {
		t.Fatalf("only %d changes in a full apply", n)
	}
	for k := 0; k < n; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			dst := t.TempDir()
			target := applyTarget(src, junkTree(t, dst))
			root := openRoot(t, dst)
			count := 0
			applyHook = func(op, p string) error {
				if count == k {
					return fmt.Errorf("%s %s: %w", op, p, errCrash)
				}
				count++
				return nil
			}
			_, err := Apply(root, blobs, target, nil)
			applyHook = nil
			if !errors.Is(err, errCrash) {
				t.Fatalf("apply with a crash at change %d: %v", k, err)
			}
			if _, err := Apply(root, blobs, target, nil); err != nil {
				t.Fatalf("apply after the crash: %v", err)
			}
			got := scanStates(t, root, blobs)
			want := withoutAbsent(target)
			want["untouched"] = got["untouched"]
			if d := diffStates(want, got); d != "" {
				t.Errorf("tree differs after crash at %d and re-apply:\n%s", k, d)
			}
			for p := range got {
				if strings.Contains(p, StagingPrefix) {
					t.Errorf("staging file left: %s", p)
				}
			}
		})
	}
}

func TestApplyRejectsBadPath(t *testing.T) {
	root := openRoot(t, t.TempDir())
	for _, p := range []string{"../escape", "/abs", "a/../../b", ""} {
		_, err := Apply(root, newMemBlobs(), map[string]NodeState{p: fileState("x", 0o644)}, nil)
		if !errors.Is(err, ErrBadPath) {
			t.Errorf("Apply(%q) err = %v, want ErrBadPath", p, err)
		}
	}
}

func TestCleanStaging(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/"+StagingPrefix+"123", "partial", 0o600)
	write(t, dir, "a/keep", "k", 0o644)
	root := openRoot(t, dir)
	if err := CleanStaging(root, []string{"a", "missing", "a/keep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a", StagingPrefix+"123")); !os.IsNotExist(err) {
		t.Errorf("staging file still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a/keep")); err != nil {
		t.Error(err)
	}
}

func TestCheckCwd(t *testing.T) {
	target := map[string]NodeState{"gone": {}, "gone/deeper": {}, "kept": dirState(0o755), "file-now": fileState("x", 0o644)}
	tests := []struct {
		cwd  string
		fail bool
	}{
		{"/repo", false},
		{"/elsewhere", false},
		{"/repo/kept", false},
		{"/repo/kept/sub", false},
		{"/repo/gone", true},
		{"/repo/gone/deeper/x", true},
		{"/repo/file-now", true},
		{"/repository/gone", false},
	}
	for _, tt := range tests {
		err := CheckCwd("/repo", tt.cwd, target)
		if (err != nil) != tt.fail || (err != nil && !errors.Is(err, ErrCwdRemoved)) {
			t.Errorf("CheckCwd(%s) = %v, want failure %v", tt.cwd, err, tt.fail)
		}
	}
	err := CheckCwd("/repo", "/repo/gone/deeper", target)
	if err == nil || !strings.Contains(err.Error(), "cd /repo`") || !strings.Contains(err.Error(), "/repo/gone ") {
		t.Errorf("message = %v; want it to name /repo/gone and `cd /repo`", err)
	}
}

// TestApplyNeverWritesThroughSymlinks: a directory replaced by a symlink
// (inside or outside the root) is replaced back, and nothing is written
// through the link.
func TestApplyNeverWritesThroughSymlinks(t *testing.T) {
	blobs := newMemBlobs()
	ref, _ := blobs.PutBlob(strings.NewReader("x"))
	for _, link := range []string{"/abs/target", "other", "../outside"} {
		t.Run(link, func(t *testing.T) {
			dir := t.TempDir()
			mustDo(t, os.Mkdir(filepath.Join(dir, "other"), 0o755))
			mustDo(t, os.Symlink(link, filepath.Join(dir, "d")))
			target := map[string]NodeState{
				"d":   dirState(0o755),
				"d/x": {Kind: fileKind, Mode: 0o644, Size: 1, Blob: ref},
			}
			root := openRoot(t, dir)
			if _, err := Apply(root, blobs, target, nil); err != nil {
				t.Fatal(err)
			}
			got := scanStates(t, root, blobs)
			if d := diffStates(map[string]NodeState{"d": target["d"], "d/x": target["d/x"], "other": dirState(0o755)}, got); d != "" {
				t.Error(d)
			}
		})
	}
	// A parent outside the target that is a symlink is refused, not followed.
	dir := t.TempDir()
	mustDo(t, os.Mkdir(filepath.Join(dir, "other"), 0o755))
	mustDo(t, os.Symlink("other", filepath.Join(dir, "d")))
	_, err := Apply(openRoot(t, dir), blobs, map[string]NodeState{"d/x": {Kind: fileKind, Mode: 0o644, Size: 1, Blob: ref}}, nil)
	if err == nil {
		t.Error("apply wrote through a symlinked parent")
	}
	if _, err := os.Lstat(filepath.Join(dir, "other/x")); !os.IsNotExist(err) {
		t.Errorf("other/x exists: %v", err)
	}
}

// TestApplyReplacesReadOnlyDir: a read-only directory whose children the
// apply removes is opened up for that; when the target replaces the
// directory itself (by a file, a symlink, or nothing), the directory's old
// mode must not land on what takes its place, nor through a symlink on the
// link's target.
func TestApplyReplacesReadOnlyDir(t *testing.T) {
	blobs := newMemBlobs()
	ref, _ := blobs.PutBlob(strings.NewReader("file now"))
	for _, tc := range []struct {
		name string
		d    NodeState
	}{
		{"file", NodeState{Kind: fileKind, Mode: 0o644, Size: 8, Blob: ref}},
		{"symlink", linkState("other")},
		{"removed", NodeState{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "d/x", "child", 0o644)
			write(t, dir, "other", "link target", 0o600)
			mustDo(t, os.Chmod(filepath.Join(dir, "d"), 0o555))
			target := map[string]NodeState{"d": tc.d, "d/x": {}}
			root := openRoot(t, dir)
			if _, err := Apply(root, blobs, target, nil); err != nil {
				t.Fatal(err)
			}
			want := map[string]NodeState{"other": fileState("link target", 0o600)}
			if tc.d.Kind != absentKind {
				want["d"] = tc.d
			}
			if d := diffStates(want, scanStates(t, root, blobs)); d != "" {
				t.Errorf("tree after apply differs from the target:\n%s", d)
			}
		})
	}
}
