//go:build linux

package crashtest

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillRevert: a revert of a task of 3,000 changed paths under a later
// task is killed with SIGKILL at a random moment, 10 times. The next
// command (status) finishes or drops it, and the tree is byte for byte
// either the later task's (the revert had not started its apply) or the
// reverted state (it had): never a mix. The revert goes through the apply
// of every move, so this is that apply's crash safety seen from revert.
func TestKillRevert(t *testing.T) {
	t.Parallel()
	disk := tmpfs(t, "512m")
	e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < dirs*perDir; i++ {
		b := make([]byte, rng.Intn(3000))
		rng.Read(b)
		writeFile(t, e.path(fmt.Sprintf("many/d%d/f%d", i/perDir, i)), b, 0o644)
	}
	if r := e.ta(append([]string{"run", "--mode", "copy", "--"}, agentArgv("many")...)...); r.Code != 0 {
		t.Fatalf("the first session: %s", r)
	}
	if r := e.ta("run", "--mode", "copy", "--", "sh", "-c", "echo two > two.txt"); r.Code != 0 {
		t.Fatalf("the second session: %s", r)
	}
	later := e.manifest()
	start := time.Now()
	e.ok("revert", "1")
	full := time.Since(start)
	reverted := e.manifest()
	if changedPaths(later, reverted) < 3000 {
		t.Fatal("the revert changed too little")
	}
	e.ok("switch", "2")
	sameManifest(t, "switch back to task 2", later, e.manifest())

	var mid, none int
	for round := 0; round < 10; round++ {
		snap := sentinels(e)
		p := e.start("", "revert", "1")
		if round%2 == 1 {
			for sentinels(e) == snap && !ended(p) {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(time.Duration(rng.Int63n(int64(full) + 1)))
		select {
		case <-p.done:
		default:
			p.kill9OrEnd(t)
		}
		r := e.ta("status")
		if r.Code != 0 {
			t.Fatalf("round %d: status after a killed revert:\n%s", round, r)
		}
		if strings.Contains(r.Stderr, "finished an interrupted") {
			mid++
		}
		m := activeRE.FindStringSubmatch(r.Stdout)
		if m == nil {
			t.Fatalf("round %d: no active task in status:\n%s", round, r)
		}
		now, _ := strconv.ParseUint(m[1], 10, 64)
		want := reverted
		if now == 2 {
			want, none = later, none+1
		}
		if d := manifestDiff(want, e.manifest()); d != "" {
			t.Fatalf("round %d: the tree is not task %d's:\n%s", round, now, d)
		}
		if now != 2 {
			e.ok("switch", "2")
		}
		if r := e.ta("verify"); r.Code != 0 {
			t.Fatalf("round %d: verify:\n%s", round, r)
		}
	}
	t.Logf("10 killed reverts: %d finished by the next command, %d left the tree at task 2", mid, none)
}
