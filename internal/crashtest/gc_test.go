//go:build linux

package crashtest

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyTree replaces dst's content by src's (cp -a), so a round can start
// again from the same history at the same paths.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v %s", src, dst, err, out)
	}
}

// TestKillGC: a gc of a history of 12 sessions (3,600 files), keeping a
// tagged task and the active one, is killed with SIGKILL at a random
// moment, 12 times, each time from the same history. Right after the kill,
// verify passes (it runs no recovery); the next command finishes the gc;
// then the tagged and the active task's trees are byte for byte what they
// were, and the dropped tasks are gone.
func TestKillGC(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	const sessions, files = 12, 300
	for s := 1; s <= sessions; s++ {
		script := fmt.Sprintf(`set -e; mkdir -p gen/s%d; i=0; while [ $i -lt %d ]; do head -c 2000 /dev/urandom > gen/s%d/f$i; i=$((i+1)); done; echo %d >> a`, s, files, s, s)
		if r := e.ta("run", "--mode", "copy", "--", "sh", "-c", script); r.Code != 0 {
			t.Fatalf("session %d: %s", s, r)
		}
	}
	e.ok("tag", "kept", "3")
	e.ok("switch", "3")
	m3 := e.manifest()
	e.ok("switch", "12")
	m12 := e.manifest()

	backup := t.TempDir()
	for _, d := range []string{"root", "home"} {
		if err := os.Mkdir(filepath.Join(backup, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, e.root, filepath.Join(backup, "root"))
	copyTree(t, e.home, filepath.Join(backup, "home"))
	start := time.Now()
	r := e.ok("gc", "--keep", "0s")
	full := time.Since(start)
	if !strings.Contains(r.Stdout, "dropped 10 task(s)") {
		t.Fatalf("gc did not drop the 10 untagged old tasks:\n%s", r)
	}
	t.Logf("a whole gc took %v", full)

	var mid, before int
	for round := 0; round < 12; round++ {
		copyTree(t, filepath.Join(backup, "root"), e.root)
		copyTree(t, filepath.Join(backup, "home"), e.home)
		p := e.start("", "gc", "--keep", "0s")
		// Start-up and planning take the first part of a gc, giving the
		// space back the last: aim at the middle, where its phases run.
		time.Sleep(full*2/10 + time.Duration(rng.Int63n(int64(full)*45/100+1)))
		select {
		case <-p.done:
		default:
			p.kill9OrEnd(t)
		}
		if r := e.ta("verify"); r.Code != 0 {
			t.Fatalf("round %d: verify right after a killed gc:\n%s", round, r)
		}
		r := e.ok("status")
		if strings.Contains(r.Stderr, "finished an interrupted gc") {
			mid++
		}
		e.ok("switch", "kept")
		if d := manifestDiff(m3, e.manifest()); d != "" {
			t.Fatalf("round %d: the tagged task's tree changed:\n%s", round, d)
		}
		e.ok("switch", "12")
		if d := manifestDiff(m12, e.manifest()); d != "" {
			t.Fatalf("round %d: the active task's tree changed:\n%s", round, d)
		}
		if r := e.ta("verify"); r.Code != 0 {
			t.Fatalf("round %d: verify after recovery:\n%s", round, r)
		}
		// The gc is finished (a new one has nothing left to drop), or the
		// kill came before its plan was stored and nothing was dropped.
		r = e.ok("gc", "--keep", "0s", "--dry-run")
		switch {
		case strings.Contains(r.Stdout, "every task is kept (2)"):
		case strings.Contains(r.Stdout, "would drop 10 task(s)"):
			before++
		default:
			t.Fatalf("round %d: the interrupted gc was not finished:\n%s", round, r)
		}
	}
	t.Logf("of 12 kills, %d landed inside the gc, %d before its plan was stored", mid, before)
	if mid == 0 {
		t.Errorf("no kill landed inside the gc (seed %d)", seed)
	}
}
