//go:build linux

package fs

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// testOverlay is a mounted overlay over a lower tree with content.
type testOverlay struct {
	*Overlay
	root string
	j    *journal.Journal
	base map[string]string // the lower tree before the mount
}

// tb is what the helpers need from testing.T and rapid.T alike.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// setupOverlay fills a fresh root, opens a real journal and mounts. The
// returned cleanup unmounts and removes everything.
func setupOverlay(t tb, fill func(root string)) (*testOverlay, func()) {
	t.Helper()
	return setupOverlayStore(t, fill, nil)
}

// setupOverlayStore is setupOverlay with the overlay writing to wrap(j)
// instead of the journal itself, when wrap is not nil.
func setupOverlayStore(t tb, fill func(root string), wrap func(*journal.Journal) store) (*testOverlay, func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fs-test-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	root := filepath.Join(dir, "root")
	staging := filepath.Join(dir, "staging")
	for _, d := range []string{root, staging} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("%v", err)
		}
	}
	if fill != nil {
		fill(root)
	}
	base := snapshot(t, root)
	j, err := journal.Open(filepath.Join(dir, "journal"), root)
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	var st store = j
	if wrap != nil {
		st = wrap(j)
	}
	o, err := mount(Options{RootPath: root, StagingDir: staging, Journal: j, Task: 1, Logf: t.Logf}, st)
	if err != nil {
		j.Close()
		t.Fatalf("mount: %v", err)
	}
	to := &testOverlay{Overlay: o, root: root, j: j, base: base}
	return to, func() {
		if err := o.Unmount(); err != nil {
			t.Logf("unmount: %v", err)
		}
		j.Close()
		os.RemoveAll(dir)
	}
}

// mountTest mounts an overlay for the duration of a test.
func mountTest(t *testing.T, fill func(root string)) *testOverlay {
	t.Helper()
	o, cleanup := setupOverlay(t, fill)
	t.Cleanup(cleanup)
	return o
}

// snapshot describes every path under dir: kind, permission bits, content
// hash or symlink target.
func snapshot(t tb, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		case mode.IsDir():
			out[rel] = fmt.Sprintf("dir %v", mode.Perm()|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		case mode&fs.ModeNamedPipe != 0:
			out[rel] = fmt.Sprintf("fifo %v", mode.Perm())
		case mode&(fs.ModeSocket|fs.ModeDevice) != 0:
			out[rel] = fmt.Sprintf("special %v", mode)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %x", mode.Perm()|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), sha256.Sum256(b))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// diffSnapshots returns a readable difference, or "" when equal.
func diffSnapshots(want, got map[string]string) string {
	var keys []string
	seen := map[string]bool{}
	for k := range want {
		keys, seen[k] = append(keys, k), true
	}
	for k := range got {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if want[k] != got[k] {
			s += fmt.Sprintf("  %s: want %q got %q\n", k, want[k], got[k])
		}
	}
	return s
}

// replay copies the lower tree to a new directory and applies the layers of
// ids in order (after states) or in reverse (before states) with cow.Apply.
func replay(t tb, j *journal.Journal, lower string, ids []tasks.ID, forward bool, into string) {
	t.Helper()
	if into == "" {
		t.Fatalf("replay: no target dir")
	}
	if lower != "" {
		if out, err := exec.Command("cp", "-a", lower+"/.", into).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	r, err := os.OpenRoot(into)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer r.Close()
	order := append([]tasks.ID(nil), ids...)
	if !forward {
		for i, k := 0, len(order)-1; i < k; i, k = i+1, k-1 {
			order[i], order[k] = order[k], order[i]
		}
	}
	for _, id := range order {
		layer, err := j.Layer(id)
		if err != nil {
			t.Fatalf("layer %d: %v", id, err)
		}
		target := map[string]journal.NodeState{}
		for _, c := range layer {
			if forward {
				target[c.Path] = c.After
			} else {
				target[c.Path] = c.Before
			}
		}
		if _, err := cow.Apply(r, j, target, nil); err != nil {
			var dump string
			for _, c := range layer {
				dump += fmt.Sprintf("  %s: %v -> %v\n", c.Path, c.Before.Kind, c.After.Kind)
			}
			t.Fatalf("apply layer %d: %v\nlayer:\n%s\ntree: %v", id, err, dump, snapshot(t, into))
		}
	}
}

func writeFile(t tb, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatalf("%v", err)
	}
}

// fillSample makes a small realistic lower tree.
func fillSample(root string) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "lower/sub/deep"), 0o755))
	must(os.WriteFile(filepath.Join(root, "lower/a.txt"), []byte("hello lower\n"), 0o644))
	b := make([]byte, 20000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	must(os.WriteFile(filepath.Join(root, "lower/sub/b.bin"), b, 0o600))
	must(os.WriteFile(filepath.Join(root, "lower/sub/deep/c.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.Symlink("a.txt", filepath.Join(root, "lower/link")))
	must(os.WriteFile(filepath.Join(root, "top.txt"), []byte("top\n"), 0o644))
}
