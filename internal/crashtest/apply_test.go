//go:build linux

package crashtest

import (
	"fmt"
	"github.com/timeagent-dev/timeagent/internal/testrepo"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillApply: an undo or redo of 3,000 changed files is killed with
// SIGKILL at a random moment, 20 times in a row. Each time the next command
// (status) finishes the apply, and the tree must be byte for byte the state
// of the task status names: the pre-session tree at the base, the agent's
// tree at task 1. Undo and redo alternate, so every round has work; every
// fourth round the status finishing the apply is killed as well. The root
// and state dir are on a tmpfs to keep the 20 rounds within about a minute.
func TestKillApply(t *testing.T) {
	t.Parallel()
	// On a tmpfs: every file an apply writes is fsync'd, which costs ~1 ms
	// per file on this machine's disk and nothing in memory; a kill -9
	// does not lose the page cache, so the crash is the same.
	disk := tmpfs(t, "512m")
	e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	seed := rng.Int63()
	t.Logf("seed %d", seed)
	t0 := time.Now()
	rng = rand.New(rand.NewSource(seed))
	// 1,500 files before the session; the agent modifies 1,000, deletes
	// 500 and creates 1,500: 3,000 changed paths (manyAgent).
	for i := 0; i < dirs*perDir; i++ {
		b := make([]byte, rng.Intn(3000))
		rng.Read(b)
		writeFile(t, e.path(fmt.Sprintf("many/d%d/f%d", i/perDir, i)), b, 0o644)
	}
	pre := e.manifest()
	if r := e.ta(append([]string{"run", "--mode", "copy", "--"}, agentArgv("many")...)...); r.Code != 0 {
		t.Fatalf("the session: %s", r)
	}
	post := e.manifest()
	if n := changedPaths(pre, post); n < 3000 {
		t.Fatalf("the session changed %d manifest lines, want ≥ 3000", n)
	}
	want := map[uint64]string{0: pre, 1: post}
	t.Logf("set-up (1,500 files, a session changing 3,000): %v", time.Since(t0))

	// One undo and one redo uninterrupted: how long an apply takes.
	start := time.Now()
	e.ok("undo")
	full := time.Since(start)
	sameManifest(t, "after a whole undo", pre, e.manifest())
	e.ok("redo")
	sameManifest(t, "after a whole redo", post, e.manifest())
	start = time.Now()
	e.ok("status")
	lead := time.Since(start) * 7 / 10
	if lead >= full {
		lead = 0
	}
	t.Logf("an undo of 3,000 paths takes %v, a status %v (process start included)", full, lead*10/7)

	active := uint64(1)
	var midApply, before, after, killedTwice int
	for round := 0; round < 20; round++ {
		action := "undo"
		if active == 0 {
			action = "redo"
		}
		// Most of a short apply is the process starting and opening the
		// journal: aim the kills at the rest.
		delay := lead + time.Duration(rng.Int63n(int64(full-lead)*11/10+1))
		snap := sentinels(e)
		p := e.start("", action)
		if round%2 == 1 {
			// Every other round: wait until the apply has begun writing,
			// then kill it a little later, so many kills land inside it.
			delay = time.Duration(rng.Int63n(int64(full)/8 + 1))
			for sentinels(e) == snap && !ended(p) {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(delay)
		select {
		case <-p.done:
			after++ // it finished before the kill: still a valid round
		default:
			if !p.kill9OrEnd(t) {
				after++
			}
		}
		if round%4 == 3 {
			// The command finishing the apply is killed too.
			q := e.start("", "status")
			time.Sleep(lead + time.Duration(rng.Int63n(int64(full)/2+1)))
			if !ended(q) && q.kill9OrEnd(t) {
				killedTwice++
			}
		}
		// One plain status per round: it finishes the apply, says so on
		// stderr, and names the active task.
		r := e.ta("status")
		if r.Code != 0 {
			t.Fatalf("round %d: status after a killed %s:\n%s", round, action, r)
		}
		if strings.Contains(r.Stderr, "finished an interrupted") {
			midApply++
		}
		m := activeRE.FindStringSubmatch(r.Stdout)
		if m == nil {
			t.Fatalf("round %d: no active task in status:\n%s", round, r)
		}
		now, _ := strconv.ParseUint(m[1], 10, 64)
		if now != 0 && now != 1 {
			t.Fatalf("round %d: status after a killed %s:\n%s", round, action, r)
		}
		if now == active {
			before++ // killed before its intent was written: nothing moved
		}
		if d := manifestDiff(want[now], e.manifest()); d != "" {
			t.Fatalf("round %d (%s killed after %v): the tree is not task %d's:\n%s", round, action, delay, now, d)
		}
		active = now
	}
	t.Logf("20 killed applies: %d finished by the next command, %d killed before they moved, %d ended before the kill, %d killed after their apply; %d times the status finishing it was killed too",
		midApply, before, after, 20-midApply-before-after, killedTwice)
	if midApply == 0 {
		t.Fatal("no kill landed inside an apply: the test proves nothing")
	}
}

// changedPaths counts the paths whose manifest lines differ.
func changedPaths(a, b string) int {
	al, bl := testrepo.LineSet(a), testrepo.LineSet(b)
	paths := map[string]bool{}
	for l := range al {
		if !bl[l] {
			paths[strings.SplitN(l, "\t", 2)[0]] = true
		}
	}
	for l := range bl {
		if !al[l] {
			paths[strings.SplitN(l, "\t", 2)[0]] = true
		}
	}
	return len(paths)
}

const dirs, perDir = 15, 100

// activeRE finds the active task in the human status.
var activeRE = regexp.MustCompile(`(?m)^active task:\s+(\d+)`)

// manyAgent changes 3,000 paths: it appends to many/*/f0..f999, deletes
// many/*/f1000..f1499 and creates new/*/f0..f1499.
func manyAgent() error {
	for i := 0; i < dirs*perDir; i++ {
		d := i / perDir
		old := filepath.Join("many", fmt.Sprintf("d%d", d), fmt.Sprintf("f%d", i))
		if i < 1000 {
			f, err := os.OpenFile(old, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "changed %d\n", i)
			if err := f.Close(); err != nil {
				return err
			}
		} else if err := os.Remove(old); err != nil {
			return err
		}
		p := filepath.Join("new", fmt.Sprintf("d%d", d), fmt.Sprintf("f%d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("new %d\n", i)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sentinels describes a few paths every apply of TestKillApply changes, so a
// change shows that the apply has begun writing.
func sentinels(e *env) string {
	var b strings.Builder
	for _, p := range []string{"many/d0/f0", "many/d7/f700", "many/d14/f1499", "new/d0/f0", "new/d7/f750", "new/d14/f1499"} {
		fi, err := os.Lstat(e.path(p))
		if err != nil {
			b.WriteString("-,")
			continue
		}
		fmt.Fprintf(&b, "%d,", fi.Size())
	}
	return b.String()
}

func ended(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
