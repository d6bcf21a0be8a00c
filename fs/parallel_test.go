//go:build linux

package fs

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// Operations in parallel (each goroutine in its own directory, checkpoints
// from another goroutine) leave the same tree as on a plain directory, and
// the journal's layers rebuild it from the lower tree and undo it back.
func TestParallel(t *testing.T) {
	const workers = 6
	fill := func(root string) {
		for w := 0; w < workers; w++ {
			fillProp(filepath.Join(root, fmt.Sprintf("g%d", w)))
		}
	}
	o, cleanup := setupOverlay(t, fill)
	defer cleanup()
	model := t.TempDir()
	fill(model)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			g := fmt.Sprintf("g%d", w)
			kinds := []string{"write", "write", "truncate", "rename", "unlink", "mkdir", "rmdir", "symlink", "chmod"}
			for i := 0; i < 300; i++ {
				x := op{kind: kinds[rng.Intn(len(kinds))], p: filepath.Join(g, propNames[rng.Intn(len(propNames))]),
					q: filepath.Join(g, propNames[rng.Intn(len(propNames))]), off: int64(rng.Intn(3000)),
					data: []byte(fmt.Sprintf("w%d-%d", w, i)), mode: 0o640, target: "a"}
				em, eo := errnoOf(x.apply(model)), errnoOf(x.apply(o.root))
				if fmt.Sprint(em) != fmt.Sprint(eo) {
					errs <- fmt.Errorf("%v: plain dir: %v, mount: %v", x, em, eo)
					return
				}
			}
		}(w)
	}
	ids := []tasks.ID{1}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(2 * time.Millisecond):
			next := ids[len(ids)-1] + 1
			if err := o.Checkpoint(next); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, next)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := snapshot(t, model)
	if d := diffSnapshots(final, snapshot(t, o.root)); d != "" {
		t.Fatalf("trees differ:\n%s", d)
	}
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	fwd := t.TempDir()
	replay(t, o.j, o.root, ids, true, fwd)
	if d := diffSnapshots(final, snapshot(t, fwd)); d != "" {
		t.Fatalf("after states do not rebuild the mounted tree:\n%s", d)
	}
	replay(t, o.j, "", ids, false, fwd)
	if d := diffSnapshots(o.base, snapshot(t, fwd)); d != "" {
		t.Fatalf("before states do not rebuild the lower tree:\n%s", d)
	}
	t.Logf("%d tasks", len(ids))
}

// Files created and written through passthrough while checkpoints come as
// fast as they can: a checkpoint that runs between the overlay's answer to
// a create and go-fuse's linking of the new node still carries the file's
// state into the next task, so the first (unseen) write after it is
// recorded there, and the after states rebuild the mounted tree.
func TestCheckpointBesideCreate(t *testing.T) {
	o, cleanup := setupOverlay(t, nil)
	defer cleanup()
	const workers, files = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < files; i++ {
				p := filepath.Join(o.root, fmt.Sprintf("w%d-%d", w, i))
				if err := os.WriteFile(p, []byte(fmt.Sprintf("content of %d/%d\n", w, i)), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	ids := []tasks.ID{1}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			next := ids[len(ids)-1] + 1
			if err := o.Checkpoint(next); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, next)
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := snapshot(t, o.root)
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	fwd := t.TempDir()
	replay(t, o.j, o.root, ids, true, fwd)
	if d := diffSnapshots(final, snapshot(t, fwd)); d != "" {
		t.Fatalf("after states do not rebuild the mounted tree (%d tasks):\n%s", len(ids), d)
	}
	t.Logf("%d files in %d tasks", workers*files, len(ids))
}
