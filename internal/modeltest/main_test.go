//go:build unix

package modeltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// bin is the timeagent the histories run (TIMEAGENT_TEST_BIN, or built by
// TestMain).
var bin string

// fuseOK says whether fuse sessions can run here; without it the histories
// use copy mode only, and TestMain says why.
var fuseOK bool

func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	if bin, cleanup, err = testrepo.Binary("timeagent-modeltest-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var why string
	fuseOK, why = fuseUsable()
	if !fuseOK {
		fmt.Fprintln(os.Stderr, "modeltest: fuse sessions left out of the histories:", why)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func fuseUsable() (bool, string) {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return false, err.Error()
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return false, "not root and no fusermount3"
		}
	}
	return true, ""
}

// workers is how many histories run side by side; each runs rapid's
// -rapid.checks histories (100 by default): 5 × 100 = 500 in make test,
// more with TIMEAGENT_MODEL_WORKERS or -rapid.checks in make soak.
func workers() int {
	if n, err := strconv.Atoi(os.Getenv("TIMEAGENT_MODEL_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// TestHistories runs whole user histories against the real binary: sessions
// of both modes, isolated sessions and apply, checkpoints and undo from the
// agent, and from another terminal during a session: undo, writes through
// the mount, writes through a descriptor on the real tree opened before the
// mount; a process that outlives the agent and writes in the end wait;
// edits outside sessions, undo, redo, switch; kill -9 of a session while
// its agent waits or a random moment into its end, and of a switch a
// random moment after its start. After every step the tree, the task tree
// and the position equal the model's; at the end every task is visited and
// shows the model's tree, and every content the user or the agent had when
// a command ran is kept.
func TestHistories(t *testing.T) {
	for w := 0; w < workers(); w++ {
		t.Run(fmt.Sprintf("worker%d", w), func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(rt *rapid.T) { runHistory(t, rt) })
		})
	}
}

func runHistory(tt *testing.T, rt *rapid.T) {
	dir, err := os.MkdirTemp("", "timeagent-history-")
	if err != nil {
		rt.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h := &history{t: rt, tt: tt, bin: bin, home: filepath.Join(dir, "home"), root: filepath.Join(dir, "root"),
		marks: dir}
	start := tree{"a": "a0\n", "b": "b0\n", "d/e": "e0\n"}
	if err := os.MkdirAll(filepath.Join(h.root, "d"), 0o755); err != nil {
		rt.Fatal(err)
	}
	for p, c := range start {
		if err := os.WriteFile(filepath.Join(h.root, p), []byte(c), 0o644); err != nil {
			rt.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", h.root).CombinedOutput(); err != nil {
		rt.Fatalf("git init: %v\n%s", err, out)
	}
	h.m = newModel(start)
	defer h.cleanup()
	steps := rapid.IntRange(1, 6).Draw(rt, "steps")
	for i := 0; i < steps; i++ {
		h.step(i)
	}
	// Every task shows the model's tree.
	ids := make([]uint64, 0, len(h.m.tasks))
	for id := range h.m.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	order := rapid.Permutation(ids).Draw(rt, "visit order")
	for _, id := range order {
		h.ta("switch", strconv.FormatUint(id, 10), "--yes")
		h.m.move(id)
		h.check(fmt.Sprintf("final switch %d", id))
	}
	if lost := h.m.lost(); len(lost) > 0 {
		rt.Fatalf("contents kept by no task: %q", lost)
	}
}

// cleanup unmounts anything a failed history left on its root.
func (h *history) cleanup() {
	_ = exec.Command("umount", "-l", h.root).Run()
}
