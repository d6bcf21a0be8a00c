//go:build linux

package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// copyDir copies dir to a new temporary directory.
func copyDir(t tb, dir string) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fs-copy-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if out, err := exec.Command("cp", "-a", dir+"/.", d).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return d
}

// propNames is the small name pool random operations draw from, so that they
// hit each other's paths and the lower tree's.
var propNames = []string{"a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "b/a"}

func fillProp(root string) {
	writeFile(nopTB{}, filepath.Join(root, "a"), []byte("lower a\n"), 0o644)
	writeFile(nopTB{}, filepath.Join(root, "d/a"), []byte("lower d/a content\n"), 0o600)
	writeFile(nopTB{}, filepath.Join(root, "d/e/a"), []byte("deep"), 0o755)
	// Symlink targets are relative without "..": wherever a link is moved,
	// writing through it stays inside the tree.
	os.Symlink("a", filepath.Join(root, "d/b"))
}

type nopTB struct{}

func (nopTB) Helper()                      {}
func (nopTB) Fatalf(f string, a ...any)    { panic(fmt.Sprintf(f, a...)) }
func (nopTB) Logf(format string, a ...any) {}

// op is one random file operation, applied to a directory.
type op struct {
	kind   string
	p, q   string
	off    int64
	data   []byte
	mode   os.FileMode
	target string
}

func (x op) String() string {
	return fmt.Sprintf("%s %s %s off=%d len=%d mode=%o %s", x.kind, x.p, x.q, x.off, len(x.data), x.mode, x.target)
}

func (x op) apply(dir string) error {
	p, q := filepath.Join(dir, x.p), filepath.Join(dir, x.q)
	switch x.kind {
	case "write":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(x.data, x.off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case "truncate":
		return os.Truncate(p, x.off)
	case "rename":
		return os.Rename(p, q)
	case "unlink":
		return syscall.Unlink(p)
	case "mkdir":
		return os.Mkdir(p, 0o755)
	case "rmdir":
		return syscall.Rmdir(p)
	case "symlink":
		return os.Symlink(x.target, p)
	case "chmod":
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(p, x.mode)
	}
	return nil
}

func errnoOf(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return err
}

func genOp(t *rapid.T) op {
	name := rapid.SampledFrom(propNames)
	kind := rapid.SampledFrom([]string{"write", "write", "write", "truncate", "rename", "unlink",
		"mkdir", "rmdir", "symlink", "chmod", "checkpoint", "undo"}).Draw(t, "kind")
	x := op{kind: kind, p: name.Draw(t, "p")}
	switch kind {
	case "write":
		x.off = rapid.Int64Range(0, 3000).Draw(t, "off")
		x.data = rapid.SliceOfN(rapid.Byte(), 1, 200).Draw(t, "data")
	case "truncate":
		x.off = rapid.Int64Range(0, 5000).Draw(t, "size")
	case "rename":
		x.q = name.Draw(t, "q")
	case "symlink":
		// Never a target outside the tree: writes follow symlinks.
		x.target = rapid.SampledFrom([]string{"a", "x", "e/a", "a/b"}).Draw(t, "target")
	case "chmod":
		x.mode = os.FileMode(rapid.SampledFrom([]int{0o600, 0o755, 0o644, 0o700, 0o444}).Draw(t, "mode"))
	}
	return x
}

// TestDifferential applies random operations through the mount and to a
// plain directory; the trees must match after every operation, and after
// unmounting, the layers' after states rebuild the mounted tree from the
// lower tree, and their before states rebuild the lower tree byte for byte.
func TestDifferential(t *testing.T) {
	forEachServing(t, testDifferential)
}

func testDifferential(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		o, cleanup := setupOverlay(rt, fillProp)
		defer cleanup()
		model, err := os.MkdirTemp("", "fs-model-")
		if err != nil {
			rt.Fatalf("%v", err)
		}
		defer func() { os.RemoveAll(model) }()
		fillProp(model)
		// Every task remembers its parent and a copy of the model at its start,
		// so undo can restore the model.
		cur, next := tasks.ID(1), tasks.ID(2)
		parent := map[tasks.ID]tasks.ID{1: 0}
		starts := map[tasks.ID]string{1: copyDir(rt, model)}
		defer func() {
			for _, d := range starts {
				os.RemoveAll(d)
			}
		}()
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		for i := 0; i < n; i++ {
			x := genOp(rt)
			switch x.kind {
			case "checkpoint":
				if err := o.Checkpoint(next); err != nil {
					rt.Fatalf("checkpoint: %v", err)
				}
				parent[next], starts[next] = cur, copyDir(rt, model)
				cur, next = next, next+1
				continue
			case "undo":
				// Undo the active task: show its before states and record
				// later changes in a new task on a branch from its parent.
				if err := o.Flush(); err != nil {
					rt.Fatalf("flush: %v", err)
				}
				layer, err := o.j.Layer(cur)
				if err != nil {
					rt.Fatalf("layer: %v", err)
				}
				target := map[string]journal.NodeState{}
				for _, c := range layer {
					target[c.Path] = c.Before
				}
				if err := o.SetView(target, next); err != nil {
					rt.Fatalf("set view: %v", err)
				}
				os.RemoveAll(model)
				model = copyDir(rt, starts[cur])
				parent[next], starts[next] = parent[cur], copyDir(rt, model)
				cur, next = next, next+1
			default:
				em, eo := errnoOf(x.apply(model)), errnoOf(x.apply(o.root))
				if fmt.Sprint(em) != fmt.Sprint(eo) {
					rt.Fatalf("%v: plain dir: %v, mount: %v", x, em, eo)
				}
			}
			if d := diffSnapshots(snapshot(rt, model), snapshot(rt, o.root)); d != "" {
				rt.Fatalf("after %v the trees differ:\n%s", x, d)
			}
		}
		var ids []tasks.ID
		for id := cur; id != 0; id = parent[id] {
			ids = append([]tasks.ID{id}, ids...)
		}
		final := snapshot(rt, model)
		if err := o.Unmount(); err != nil {
			rt.Fatalf("unmount: %v", err)
		}
		if d := diffSnapshots(o.base, snapshot(rt, o.root)); d != "" {
			rt.Fatalf("lower tree changed:\n%s", d)
		}
		fwd, err := os.MkdirTemp("", "fs-replay-")
		if err != nil {
			rt.Fatalf("%v", err)
		}
		defer os.RemoveAll(fwd)
		replay(rt, o.j, o.root, ids, true, fwd)
		if d := diffSnapshots(final, snapshot(rt, fwd)); d != "" {
			rt.Fatalf("after states do not rebuild the mounted tree:\n%s", d)
		}
		replay(rt, o.j, "", ids, false, fwd)
		if d := diffSnapshots(o.base, snapshot(rt, fwd)); d != "" {
			rt.Fatalf("before states do not rebuild the lower tree:\n%s", d)
		}
	})
}
