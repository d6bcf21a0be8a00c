//go:build unix

package cow

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"
	"pgregory.net/rapid"
)

// propNames is the small namespace the random file operations work in, so
// that they often collide (replace, remove parents, change kinds).
var propNames = []string{"a", "b", "d", "d/x", "d/y", "d/e", "d/e/z", "g", "g/h", ".git", ".git/HEAD"}

// randomOp does one random file operation in dir; operations that do not
// apply to the current tree fail and are ignored, as an agent's would.
func randomOp(t *rapid.T, dir string) {
	name := rapid.SampledFrom(propNames).Draw(t, "name")
	p := filepath.Join(dir, filepath.FromSlash(name))
	switch op := rapid.SampledFrom([]string{"create", "write", "truncate", "rename", "unlink", "mkdir", "rmdir", "symlink", "chmod", "mkfifo", "link"}).Draw(t, "op"); op {
	case "create", "write":
		content := rapid.SampledFrom([]string{"", "x", "hello\n", "hello\nworld\n", "y"}).Draw(t, "content")
		if rapid.IntRange(0, 9).Draw(t, "big") == 0 {
			content = fmt.Sprintf("%0*d", 3<<20, len(name)) // a 3 MiB file now and then
		}
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		// O_NONBLOCK: opening a fifo fails (ENXIO) instead of waiting for a reader.
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC | syscall.O_NONBLOCK
		if op == "write" {
			flags = os.O_WRONLY | os.O_CREATE | syscall.O_NONBLOCK
		}
		if f, err := os.OpenFile(p, flags, 0o644); err == nil {
			_, _ = f.WriteString(content)
			_ = f.Close()
		}
	case "truncate":
		_ = os.Truncate(p, int64(rapid.IntRange(0, 3).Draw(t, "size")))
	case "rename":
		to := rapid.SampledFrom(propNames).Draw(t, "to")
		_ = os.Rename(p, filepath.Join(dir, filepath.FromSlash(to)))
	case "unlink":
		_ = os.Remove(p)
	case "mkdir":
		_ = os.Mkdir(p, rapid.SampledFrom([]os.FileMode{0o755, 0o700, 0o555}).Draw(t, "dirmode"))
	case "rmdir":
		// When Remove fails, RemoveAll opens the parent: if that is a fifo
		// (mkfifo above), the open waits for a writer forever.
		if fi, err := os.Lstat(filepath.Dir(p)); err == nil && fi.IsDir() {
			_ = os.RemoveAll(p)
		}
	case "symlink":
		_ = os.Symlink(rapid.SampledFrom([]string{"a", "../up", "d/x", "missing", "/abs/target"}).Draw(t, "target"), p)
	case "mkfifo":
		_ = syscall.Mkfifo(p, 0o640)
	case "link": // hard links come back as separate files
		to := rapid.SampledFrom(propNames).Draw(t, "linkname")
		_ = os.Link(p, filepath.Join(dir, filepath.FromSlash(to)))
	case "chmod":
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			_ = os.Chmod(p, rapid.SampledFrom([]os.FileMode{0o644, 0o755, 0o600, 0o700, 0o555, 0o4755}).Draw(t, "mode"))
		}
	}
}

// TestPropertySessionsAndTransitions runs random sessions (random file
// operations recorded as tasks) interleaved with undo, redo and switch, and
// after every transition compares the whole real tree with the model's tree
// of the active task.
func TestPropertySessionsAndTransitions(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := tempDir(rt)
		write(rt, dir, "a", "initial a\n", 0o644)
		write(rt, dir, "d/x", "initial x\n", 0o600)
		write(rt, dir, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
		root := openRoot(rt, dir)
		j := openJournal(rt, dir)
		// The model: the full tree of every task, and the active task.
		trees := map[tasks.ID]map[string]NodeState{0: scanStates(rt, root, j)}
		var active tasks.ID
		moveTo := func(to tasks.ID) {
			mustTransition(rt, j, root, to, TransitionOptions{Yes: true, Reason: "switch"})
			active = to
			assertTree(rt, root, j, trees[to])
			assertState(rt, j, to, to)
		}
		steps := rapid.IntRange(1, 10).Draw(rt, "steps")
		for range steps {
			tree, err := j.Tree()
			if err != nil {
				rt.Fatal(err)
			}
			switch rapid.SampledFrom([]string{"session", "session", "undo", "redo", "switch"}).Draw(rt, "action") {
			case "session":
				n := rapid.IntRange(1, 6).Draw(rt, "ops")
				id, after := runSession(rt, j, root, func() {
					for range n {
						randomOp(rt, dir)
					}
				})
				if got, _ := tree.Get(active); tree.Has(active) && id <= got.ID {
					rt.Fatalf("new task %d is not newer than %d", id, got.ID)
				}
				trees[id] = after
				active = id
			case "undo":
				if active != tasks.Base {
					moveTo(tree.Parent(active))
				}
			case "redo":
				if next, err := tree.Redo(active, 1); err == nil {
					moveTo(next)
				}
			case "switch":
				ids := make([]tasks.ID, 0, len(trees))
				for id := range trees {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(i, k int) bool { return ids[i] < ids[k] })
				moveTo(rapid.SampledFrom(ids).Draw(rt, "to"))
			}
		}
	})
}
