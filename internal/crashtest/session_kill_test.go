//go:build linux

package crashtest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillSessionEnd: timeagent run --mode fuse is killed with SIGKILL while
// it applies the session's work to the real tree, after its agent exited.
// The agent (churnAgent) changes about 1,900 paths each round: rewrites,
// creations, deletions, a renamed directory of 200 files and a file in .git;
// its last act is its manifest and a marker in the scratch directory. The
// first round is not killed: it measures how long run takes from the marker
// to its exit (the window) and how much of it is the apply after the
// overlay's unmount. Odd rounds kill run at a random moment of the window,
// even rounds at a random moment of the apply (after the unmount shows in
// the mount table). The log counts where the kills landed. Then the next command (status, log, diff, undo --yes or
// recover, in turn) must recover: no mount on the root, the directory
// readable, the tree exactly the agent's final state (or, after undo, the
// tree before the session); then undo --yes gives the tree before the
// session byte for byte and redo --yes the agent's tree. Root and state dir
// are on a tmpfs (a kill -9 keeps the page cache: the crash is the same).
func TestKillSessionEnd(t *testing.T) {
	t.Parallel()
	disk := tmpfs(t, "768m")
	e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
	e.setupMany()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	firsts := [][]string{{"status"}, {"log"}, {"diff"}, {"undo", "--yes"}, {"recover"}}
	const rounds = 10
	prev := e.manifest()
	var window, apply time.Duration
	phases := map[string]int{}
	t0 := time.Now()
	for round := 1; round <= rounds+1; round++ {
		p := e.start("", append([]string{"run", "--mode", "fuse", "--"}, agentArgvEnv("churn", "ROUND="+strconv.Itoa(round))...)...)
		done := e.marker(p, "done", 2*time.Minute)
		var delay time.Duration
		switch {
		case round == 1:
			// Not killed: time the whole window and the apply at its end
			// (from the unmount, which shows the real tree again).
			unmounted := waitUnmount(t, e, p)
			if code := p.wait(t, time.Minute); code != 0 {
				t.Fatalf("the uninterrupted session: exit %d:\n%s", code, p.output())
			}
			window, apply = time.Since(done), time.Since(unmounted)
		case round%2 == 0:
			// Aim at the apply: kill it a random moment after the unmount.
			unmounted := waitUnmount(t, e, p)
			delay = unmounted.Sub(done) + time.Duration(rng.Int63n(int64(apply)*11/10+1))
			time.Sleep(time.Until(done.Add(delay)))
		default:
			delay = time.Duration(rng.Int63n(int64(window)*11/10 + 1))
			time.Sleep(time.Until(done.Add(delay)))
		}
		want := e.scratchFile("final")
		if changedPaths(prev, want) < 1500 {
			t.Fatalf("round %d: the agent changed %d paths, want ≥ 1500", round, changedPaths(prev, want))
		}
		killed := round > 1 && !ended(p) && p.kill9OrEnd(t)
		phase := "ended before the kill"
		switch {
		case !killed:
		case mountedAt(t, e.root):
			phase = "killed before the overlay was unmounted"
		default:
			switch m := e.manifest(); m {
			case prev:
				phase = "killed after the unmount, before the apply wrote"
			case want:
				phase = "killed after the apply"
			default:
				phase = "killed in the middle of the apply"
			}
		}
		phases[phase]++
		if !killed && round > 1 {
			// The first round was slow (a loaded machine): aim shorter.
			window = min(window, p.end.Sub(done))
			apply = min(apply, window)
		}
		first := firsts[round%len(firsts)]
		r := e.taOut(first...)
		if r.Code != 0 {
			t.Fatalf("round %d (%s after %v): %s", round, phase, delay, r)
		}
		if strings.Contains(phase, "before the overlay") || strings.Contains(phase, "middle") || strings.Contains(phase, "before the apply wrote") {
			contains(t, fmt.Sprintf("round %d (%s): %s", round, phase, first[0]), r.Stdout+r.Stderr, "recovered:", "had died")
		}
		if strings.Contains(phase, "before the overlay") {
			contains(t, fmt.Sprintf("round %d (%s): %s", round, phase, first[0]), r.Stdout+r.Stderr, "detached a stale overlay mount")
		}
		e.readable(fmt.Sprintf("round %d (%s), after %s", round, phase, first[0]))
		e.noStaging(fmt.Sprintf("round %d (%s), after %s", round, phase, first[0]))
		what := fmt.Sprintf("round %d (%s after %v of %v), after %s", round, phase, delay, window, first[0])
		if first[0] == "undo" {
			sameManifest(t, what+": the tree before the session", prev, e.manifest())
		} else {
			sameManifest(t, what+": the agent's final tree", want, e.manifest())
			e.ok("undo", "--yes")
			sameManifest(t, what+", then undo --yes", prev, e.manifest())
		}
		e.ok("redo", "--yes")
		sameManifest(t, what+", then redo --yes", want, e.manifest())
		prev = want
	}
	t.Logf("%d rounds in %v; run takes %v from the agent's last act to its exit, %v of it the apply after the unmount; kills: %v",
		rounds, time.Since(t0), window, apply, phases)
	// Since the end of a session commits its last layer and checks the
	// real tree for drift after the unmount, "after the unmount, before the
	// apply wrote" is a phase recovery must finish too.
	if phases["killed in the middle of the apply"]+phases["killed before the overlay was unmounted"]+
		phases["killed after the unmount, before the apply wrote"] == 0 {
		t.Fatal("no kill landed before the session's apply ended: the test proves nothing")
	}
}

// TestKillIsolated: a run --isolate session is killed while its agent waits
// after its work (closed files, fsync'd root). Either the namespaced
// timeagent (the one that mounted the overlay in its private mount
// namespace) gets SIGKILL, or the outer one (then the namespaced one gets
// SIGTERM from the kernel and ends the session cleanly). Afterwards: the
// real tree was never changed, no timeagent mount is left in any mount
// namespace, recover names the isolated session, `timeagent apply --yes`
// (the README's way to write an isolated session's work) gives the agent's
// tree byte for byte, undo --yes the tree before, redo --yes the agent's.
func TestKillIsolated(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"namespaced", "outer"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			pre := e.manifest()
			p := e.start("", append([]string{"run", "--isolate", "--mode", "fuse", "--"}, agentArgvEnv("isolated")...)...)
			e.marker(p, "done", time.Minute)
			want := e.scratchFile("final")
			if changedPaths(pre, want) < 50 {
				t.Fatalf("the agent changed only %d paths", changedPaths(pre, want))
			}
			sameManifest(t, "the real tree during the isolated session", pre, e.manifest())
			inner := lockPid(t, e)
			if inner == p.pid() {
				t.Fatalf("the lock names the outer timeagent %d: no re-exec into a namespace?", inner)
			}
			// Should the test fail first: no orphan may outlive it (its
			// state dir is removed under it).
			t.Cleanup(func() {
				// Only while the pid is still this test's timeagent.
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", inner)); err == nil && strings.HasPrefix(string(b), binary+"\x00") {
					_ = syscall.Kill(inner, syscall.SIGKILL)
				}
			})
			agent := childOf(t, inner)
			switch who {
			case "namespaced":
				if err := syscall.Kill(inner, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				if code := p.wait(t, 30*time.Second); code != 128+9 {
					t.Fatalf("run after its namespaced half was killed: exit %d, want 137:\n%s", code, p.output())
				}
			case "outer":
				p.kill9(t)
				waitDead(t, "the namespaced timeagent", inner)
			}
			waitDead(t, "the agent", agent)
			waitFor(t, "the isolated mount to disappear with its namespace", 10*time.Second, func() bool {
				return len(timeagentMountsOf(t, e.root)) == 0
			})
			sameManifest(t, "the real tree after the kill", pre, e.manifest())

			r := e.taOut("recover")
			if r.Code != 0 {
				t.Fatalf("recover: %s", r)
			}
			st := decodeStatus(t, e.ta("status", "--json"))
			t.Logf("recover: %s; status: %s, active %d, applied %d", strings.TrimSpace(r.Stdout+r.Stderr), st.State, st.ActiveTask, st.AppliedTask)
			if who == "namespaced" {
				contains(t, "recover after the kill", r.Stdout+r.Stderr, "isolated session 1", "had died", "not changed", "timeagent apply")
				if st.State != "interrupted" {
					t.Fatalf("status after a killed isolated session: %+v", st)
				}
			} else if st.State != "completed" || st.Session == nil || st.Session.ExitCode == nil || *st.Session.ExitCode != 128+15 {
				// The namespaced half gets SIGTERM (its parent-death signal)
				// once for every thread of the dying outer process: the
				// copies must not kill it while it ends the session.
				t.Fatalf("status after the outer timeagent was killed (its namespaced half gets SIGTERM): %+v\n%s", st, p.output())
			}
			if st.ActiveTask != 1 || st.AppliedTask != 0 {
				t.Fatalf("status: active %d, applied %d: want the work as active task 1, the files at the base", st.ActiveTask, st.AppliedTask)
			}
			e.readable("after recover")
			sameManifest(t, "the real tree after recover", pre, e.manifest())
			e.noStaging("after recover")
			e.ok("apply", "--yes")
			sameManifest(t, "after apply --yes", want, e.manifest())
			e.ok("undo", "--yes")
			sameManifest(t, "after undo --yes", pre, e.manifest())
			e.ok("redo", "--yes")
			sameManifest(t, "after redo --yes", want, e.manifest())
		})
	}
}

// TestKillInSessionMove: timeagent is killed with SIGKILL while an undo, a
// switch or a checkpoint issued by the agent itself (over the control
// socket) runs inside a fuse session (moverAgent). The first round is killed
// only after the move returned (and measures how long it takes from the
// agent's marker, and how much of that is the client starting); the others
// at random moments of that window, odd rounds aimed after the client's
// start. The log counts the outcomes. The design
// allows exactly two outcomes, told apart by the active task recovery
// leaves, and the tree must be that task's state byte for byte:
//
//   - undo of task A: active A (the undo was not recorded) and the tree is
//     the agent's state before the undo, or active = the base (recorded)
//     and the tree is the tree before the session.
//   - switch from task B (a branch from the base written after an undo) to
//     A: active B and B's tree, or active A and A's tree.
//   - checkpoint after A: active A, or active = the new empty task (a child
//     of A); the tree is A's either way.
//
// Then switch 0 gives the tree before the session byte for byte, and
// switching to each of the session's tasks gives the agent's trees back.
func TestKillInSessionMove(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		move   string
		rounds int
		files  int // set A: the undo and switch windows grow with it
	}{{"undo", 5, 1000}, {"switch", 4, 1000}, {"checkpoint", 6, 300}} {
		t.Run(tc.move, func(t *testing.T) {
			t.Parallel()
			disk := tmpfs(t, "512m")
			e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
			e.setupMany()
			pre := e.manifest()
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewSource(seed))
			var window, overhead time.Duration
			var inWindow int
			outcomes := map[string]int{}
			t0 := time.Now()
			for round := 0; round <= tc.rounds; round++ {
				p := e.start("", append([]string{"run", "--mode", "fuse", "--"}, agentArgvEnv("mover", "MOVE="+tc.move, "MOVER_FILES="+strconv.Itoa(tc.files))...)...)
				goAt := e.marker(p, "go", 2*time.Minute)
				m1 := e.scratchFile("m1")
				m2 := ""
				if tc.move == "switch" {
					m2 = e.scratchFile("m2")
				}
				var delay time.Duration
				switch {
				case round == 0:
					window = e.marker(p, "returned", time.Minute).Sub(goAt)
					os.WriteFile(filepath.Join(e.scratch, "returned"), nil, 0o644)
					// A command forwarded to the session that does nothing:
					// how much of the window is the client starting.
					start := time.Now()
					e.ok("status")
					overhead = min(time.Since(start), window)
				case round%2 == 1:
					// Aim at the move itself, after the client started.
					delay = overhead*8/10 + time.Duration(rng.Int63n(int64(window-overhead*8/10)*11/10+1))
				default:
					delay = time.Duration(rng.Int63n(int64(window)*12/10 + 1))
				}
				if round > 0 {
					if delay >= overhead && delay <= window {
						inWindow++
					}
					time.Sleep(time.Until(goAt.Add(delay)))
				}
				if !p.kill9OrEnd(t) {
					t.Fatalf("round %d: the session ended by itself:\n%s", round, p.output())
				}
				returned := e.hasMarker("returned")
				what := fmt.Sprintf("round %d (%s killed %v after the agent's marker; the move takes %v)", round, tc.move, delay, window)

				r := e.taOut("recover")
				if r.Code != 0 {
					t.Fatalf("%s: recover: %s", what, r)
				}
				contains(t, what+": recover", r.Stdout, "had died")
				e.readable(what)
				e.noStaging(what)
				st := decodeStatus(t, e.ta("status", "--json"))
				if st.State != "interrupted" || st.Session == nil || len(st.Session.Tasks) == 0 {
					t.Fatalf("%s: status after recover: %+v", what, st)
				}
				a := st.Session.Tasks[0] // the agent's first task (set A)
				trees := map[uint64]string{a: m1}
				var moved, stayed uint64 // the active task if the move was recorded, if not
				switch tc.move {
				case "undo":
					moved, stayed = parentOf(t, e, a), a
					trees[moved] = pre
				case "switch":
					if len(st.Session.Tasks) != 2 {
						t.Fatalf("%s: the session's tasks %v: want set A and the branch B (B's work lost?)", what, st.Session.Tasks)
					}
					b := st.Session.Tasks[1]
					trees[b] = m2
					moved, stayed = a, b
				case "checkpoint":
					moved, stayed = a, a
					if len(st.Session.Tasks) == 2 {
						moved = st.Session.Tasks[1]
						if parentOf(t, e, moved) != a {
							t.Fatalf("%s: the checkpoint's task %d is not a child of %d", what, moved, a)
						}
						trees[moved] = m1
					}
				}
				recorded := st.ActiveTask == moved && moved != stayed
				outcome := "not recorded"
				switch {
				case st.ActiveTask != moved && st.ActiveTask != stayed:
					t.Fatalf("%s: active task %d after recover; the design allows %d (move not recorded) or %d (recorded)\n%s",
						what, st.ActiveTask, stayed, moved, r.Stdout)
				case tc.move == "checkpoint" && len(st.Session.Tasks) == 2 && !recorded:
					t.Fatalf("%s: the checkpoint's task %d exists but the active task is %d", what, moved, st.ActiveTask)
				case recorded && returned:
					outcome = "recorded and answered"
				case recorded:
					outcome = "recorded, not answered"
				case returned:
					t.Fatalf("%s: the agent saw the %s succeed, but recovery left active task %d", what, tc.move, st.ActiveTask)
				}
				outcomes[outcome]++
				sameManifest(t, fmt.Sprintf("%s: %s; the tree of active task %d", what, outcome, st.ActiveTask), trees[st.ActiveTask], e.manifest())
				e.ok("switch", "0", "--yes")
				sameManifest(t, what+": switch 0 (the base)", pre, e.manifest())
				ids := make([]uint64, 0, len(trees))
				for id := range trees {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
				for _, id := range ids {
					if id == 0 {
						continue
					}
					e.ok("switch", strconv.FormatUint(id, 10), "--yes")
					sameManifest(t, fmt.Sprintf("%s: switch %d", what, id), trees[id], e.manifest())
				}
				e.ok("switch", "0", "--yes")
			}
			t.Logf("%d rounds in %v; the %s takes %v from the agent's marker to its answer, %v of it the client starting; %d of %d kills landed after the client started and before the answer; outcomes: %v",
				tc.rounds+1, time.Since(t0), tc.move, window, overhead, inWindow, tc.rounds, outcomes)
		})
	}
}

// TestKillReservedTask: after an undo inside a fuse session the agent writes
// (set B: closed files, fsync'd root) into the task the undo reserved, and
// timeagent is killed before anything else happens. Closed files are in the
// journal, so recovery must keep set B as a task (a child of the base) and
// apply it: the tree is the agent's; switch 0 gives the tree before the
// session, and switching to set A's task gives set A.
func TestKillReservedTask(t *testing.T) {
	t.Parallel()
	disk := tmpfs(t, "256m")
	e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
	e.setupMany()
	pre := e.manifest()
	p := e.start("", append([]string{"run", "--mode", "fuse", "--"}, agentArgvEnv("mover", "MOVE=reserved")...)...)
	e.marker(p, "go", 2*time.Minute)
	m1, m2 := e.scratchFile("m1"), e.scratchFile("m2")
	p.kill9(t)
	r := e.taOut("recover")
	if r.Code != 0 {
		t.Fatalf("recover: %s", r)
	}
	t.Logf("recover: %s", strings.TrimSpace(r.Stdout))
	e.readable("after recover")
	st := decodeStatus(t, e.ta("status", "--json"))
	if st.Session == nil || len(st.Session.Tasks) != 2 || st.ActiveTask != st.Session.Tasks[1] {
		t.Fatalf("status after recover: %+v: want set B recorded as the session's second task, active", st)
	}
	sameManifest(t, "after recover: set B, written after the undo", m2, e.manifest())
	e.ok("switch", "0", "--yes")
	sameManifest(t, "switch 0", pre, e.manifest())
	e.ok("switch", strconv.FormatUint(st.Session.Tasks[0], 10), "--yes")
	sameManifest(t, "switch to set A", m1, e.manifest())
	e.ok("switch", strconv.FormatUint(st.Session.Tasks[1], 10), "--yes")
	sameManifest(t, "switch to set B", m2, e.manifest())
}

// waitUnmount waits (polling the mount table) until the session's overlay
// is gone from the root or the session ended, and returns when.
func waitUnmount(t *testing.T, e *env, p *proc) time.Time {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for mountedAt(t, e.root) && !ended(p) {
		if time.Now().After(deadline) {
			t.Fatalf("the overlay is still mounted a minute after the agent's last act:\n%s", p.output())
		}
		time.Sleep(200 * time.Microsecond)
	}
	return time.Now()
}

// parentOf returns a task's parent from log --json.
func parentOf(t *testing.T, e *env, id uint64) uint64 {
	t.Helper()
	r := e.ta("log", "--json")
	var doc struct {
		Tasks []struct {
			ID     uint64 `json:"id"`
			Parent uint64 `json:"parent"`
		} `json:"tasks"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &doc) != nil {
		t.Fatalf("log --json: %s", r)
	}
	for _, task := range doc.Tasks {
		if task.ID == id {
			return task.Parent
		}
	}
	t.Fatalf("task %d not in log --json:\n%s", id, r.Stdout)
	return 0
}

var lockPidRE = regexp.MustCompile(`"pid":(\d+)`)

// lockPid returns the pid the root's lock file names.
func lockPid(t *testing.T, e *env) int {
	t.Helper()
	locks, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files: %v", locks)
	}
	b, err := os.ReadFile(locks[0])
	if err != nil {
		t.Fatal(err)
	}
	m := lockPidRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("lock file %s: %q", locks[0], b)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	return pid
}

// childOf returns the only child process of pid (forked by any of its
// threads: timeagent starts its agent from a locked OS thread).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		t.Fatalf("children of %d: %q", pid, kids)
	}
	c, _ := strconv.Atoi(kids[0])
	return c
}

// timeagentMountsOf lists the processes in whose mount namespace a
// timeagent overlay is mounted on root (every process's mountinfo is read).
func timeagentMountsOf(t *testing.T, root string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process is gone
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 4 && strings.ReplaceAll(f[4], `\040`, " ") == root && strings.Contains(l, " - fuse.timeagent ") {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestKillCopySessionEnd: timeagent run --mode copy is killed with SIGKILL
// a random moment after its agent (churnAgent, about 1,900 paths a round)
// exited, while it scans the tree, seals the last task and saves the scan
// as its stat cache. The first round is not killed and times that window.
// The next command must find the session's work whole: the task holds every
// change (undo gives the tree before the session byte for byte, redo the
// agent's), whether the kill came before the task was sealed or between
// its seal and the saving of the scan (there, recording the task again
// against the older cache would have replaced its changes with nothing).
func TestKillCopySessionEnd(t *testing.T) {
	t.Parallel()
	disk := tmpfs(t, "768m")
	e := newEnvAt(t, mkdirs(t, disk, "root"), mkdirs(t, disk, "home"))
	e.setupMany()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	const rounds = 8
	prev := e.manifest()
	var window time.Duration
	killed := 0
	for round := 1; round <= rounds+1; round++ {
		p := e.start("", append([]string{"run", "--mode", "copy", "--"}, agentArgvEnv("churn", "ROUND="+strconv.Itoa(round))...)...)
		done := e.marker(p, "done", 2*time.Minute)
		want := e.scratchFile("final")
		var delay time.Duration
		if round == 1 {
			if code := p.wait(t, time.Minute); code != 0 {
				t.Fatalf("the uninterrupted session: exit %d:\n%s", code, p.output())
			}
			window = time.Since(done)
		} else {
			delay = time.Duration(rng.Int63n(int64(window)*11/10 + 1))
			time.Sleep(time.Until(done.Add(delay)))
			if !ended(p) && p.kill9OrEnd(t) {
				killed++
			}
		}
		what := fmt.Sprintf("round %d (kill %v after the agent's end, window %v)", round, delay, window)
		if r := e.taOut("status"); r.Code != 0 {
			t.Fatalf("%s: status: %s", what, r)
		}
		sameManifest(t, what+": the agent's final tree", want, e.manifest())
		e.ok("undo", "--yes")
		sameManifest(t, what+", then undo --yes", prev, e.manifest())
		e.ok("redo", "--yes")
		sameManifest(t, what+", then redo --yes", want, e.manifest())
		prev = want
	}
	t.Logf("%d rounds, %d killed before run's exit; the window from the agent's end to run's exit: %v", rounds, killed, window)
	if killed == 0 {
		t.Fatal("no kill landed before run's exit: the test proves nothing")
	}
}
