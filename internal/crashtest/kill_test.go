//go:build linux

package crashtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var modes = []string{"copy", "fuse"}

// agentWork checks the agent's three changes (agentScript) in the tree.
func (e *env) agentWork(what string) {
	e.t.Helper()
	if a, b := e.read("a"), e.read("b"); a != "x\n" || b != "y\n" {
		e.t.Fatalf("%s: a=%q b=%q, want the agent's x and y", what, a, b)
	}
	if exists(e.path("c")) {
		e.t.Fatalf("%s: c exists, the agent deleted it", what)
	}
}

// onlyAgentPaths fails unless pre and post differ exactly in a, b and c.
func onlyAgentPaths(t *testing.T, pre, post string) {
	t.Helper()
	touched := map[string]bool{}
	for _, l := range strings.Split(manifestDiff(pre, post), "\n") {
		if len(l) > 2 {
			touched[strings.SplitN(l[2:], "\t", 2)[0]] = true
		}
	}
	if len(touched) != 3 || !touched["a"] || !touched["b"] || !touched["c"] {
		t.Fatalf("the session changed %v, want exactly a, b and c:\n%s", touched, manifestDiff(pre, post))
	}
}

// TestKillSession: timeagent is killed with SIGKILL while its agent sleeps
// after three changes. The agent gets SIGTERM (parent death signal), the
// next command finds the session interrupted and the root readable (no
// stale mount), undo without a terminal is refused until --yes, undo gives
// the pre-session tree byte for byte and redo the agent's work.
func TestKillSession(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			pre := e.manifest()
			p := e.start("", "run", "--mode", mode, "--", "sh", "-c", agentScript)
			child := e.childPid(p)
			if mode == "copy" {
				e.agentWork("during the copy-mode session")
			}
			p.kill9(t)
			if sig := waitDead(t, "the agent", child); sig != 0 && sig != int(syscall.SIGTERM) {
				t.Fatalf("the agent died of signal %d, want SIGTERM", sig)
			} else {
				t.Logf("agent %d died after kill -9 of timeagent (signal %d as the kernel reports it)", child, sig)
			}
			// The root's own path may be a dead mount: reach it with --root.
			r := e.taOut("status", "--json")
			st := decodeStatus(t, r)
			if st.State != "interrupted" || st.Session == nil || st.Session.Pid != p.pid() {
				t.Fatalf("status after kill -9: %+v\n%s", st, r)
			}
			e.readable("after status")
			e.noStaging("after recovery")
			post := e.manifest()
			e.agentWork("after recovery")
			onlyAgentPaths(t, pre, post)

			r = e.ta("undo")
			if r.Code != 1 {
				t.Fatalf("undo of an interrupted session without a terminal and without --yes: want exit 1:\n%s", r)
			}
			contains(t, "refused undo", r.Stderr, "interrupted", "--yes")
			sameManifest(t, "after the refused undo", post, e.manifest())

			e.ok("undo", "--yes")
			sameManifest(t, "after undo --yes", pre, e.manifest())
			e.ok("redo", "--yes")
			sameManifest(t, "after redo --yes", post, e.manifest())
		})
	}
}

// TestStaleMount: a fuse session's timeagent is killed; its mount stays on
// the root and answers ENOTCONN (ECONNABORTED over io_uring). `timeagent recover`, typed in a shell that
// was already in the repository (the user's terminal), detaches it, says so
// and leaves the directory readable with the agent's work applied.
func TestStaleMount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pre := e.manifest()
	// The user's terminal: in the root before the session mounts over it.
	term := exec.Command("sh", "-c", `read line; exec "$TA" recover`)
	term.Dir, term.Env = e.root, e.environ()
	in, err := term.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(e.scratch, "term.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	term.Stdout, term.Stderr = out, out
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Process.Kill(); term.Wait() })

	p := e.start("", "run", "--mode", "fuse", "--", "sh", "-c", agentScript)
	child := e.childPid(p)
	if !mountedAt(t, e.root) {
		t.Fatal("no mount on the root during a fuse session")
	}
	p.kill9(t)
	waitDead(t, "the agent", child)

	// lstat and even a listing may still be answered from the kernel's
	// caches; statfs always asks the (dead) server.
	_, err = os.Lstat(e.root)
	t.Logf("lstat of the root after kill -9: %v", err)
	_, err = os.ReadDir(e.root)
	t.Logf("readdir of the root after kill -9: %v", err)
	var sfs syscall.Statfs_t
	err = syscall.Statfs(e.root, &sfs)
	// ENOTCONN; ECONNABORTED when the connection used io_uring.
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Fatalf("statfs of the root with a dead mount: %v, want ENOTCONN or ECONNABORTED", err)
	}
	if !mountedAt(t, e.root) {
		t.Fatal("the dead session's mount is gone before any timeagent command")
	}

	fmt.Fprintln(in)
	done := make(chan error, 1)
	go func() { done <- term.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("recover does not end")
	}
	b, _ := os.ReadFile(out.Name())
	if err != nil {
		t.Fatalf("timeagent recover in the user's terminal: %v\n%s", err, b)
	}
	noCrash(t, result{Args: []string{"recover"}, Stdout: string(b)})
	contains(t, "recover's explanation", string(b), "stale", e.root, "had died")
	e.readable("after recover")
	e.agentWork("after recover")
	st := decodeStatus(t, e.ta("status", "--json"))
	if st.State != "interrupted" {
		t.Fatalf("status after recover: %+v", st)
	}
	e.ok("undo", "--yes")
	sameManifest(t, "after undo --yes", pre, e.manifest())
}

// TestKillChild: the agent is killed while timeagent lives: the session is
// finalised normally and run exits 128+9.
func TestKillChild(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			pre := e.manifest()
			p := e.start("", "run", "--mode", mode, "--", "sh", "-c", agentScript)
			child := e.childPid(p)
			if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 30*time.Second); code != 128+9 {
				t.Fatalf("run after its child was killed: exit %d, want 137:\n%s", code, p.output())
			}
			contains(t, "run's summary", p.output(), "session 1 ended (exit 137)")
			e.readable("after the session")
			st := decodeStatus(t, e.ta("status", "--json"))
			if st.State != "completed" || st.Session == nil || st.Session.ExitCode == nil || *st.Session.ExitCode != 137 {
				t.Fatalf("status: %+v", st)
			}
			post := e.manifest()
			e.agentWork("after the session")
			onlyAgentPaths(t, pre, post)
			e.ok("undo")
			sameManifest(t, "after undo", pre, e.manifest())
			e.ok("redo")
			sameManifest(t, "after redo", post, e.manifest())
		})
	}
}

// TestSignalToTimeagent: SIGINT, SIGTERM and SIGHUP sent to timeagent (a
// closed terminal, a kill) are forwarded to the agent, and the session is
// finalised cleanly: completed, its task recorded, run's exit status the
// agent's. stdin is not a terminal here, so SIGINT is forwarded too.
func TestSignalToTimeagent(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		for _, mode := range modes {
			if mode == "copy" && sig != syscall.SIGHUP {
				continue // copy mode: SIGTERM is covered in cmd/timeagent; one signal here
			}
			t.Run(fmt.Sprintf("%s/%v", mode, strings.ToUpper(sig.String())), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				pre := e.manifest()
				p := e.start("", "run", "--mode", mode, "--", "sh", "-c", agentScript)
				child := e.childPid(p)
				if err := syscall.Kill(p.pid(), sig); err != nil {
					t.Fatal(err)
				}
				want := 128 + int(sig)
				if code := p.wait(t, 30*time.Second); code != want {
					t.Fatalf("run after %v: exit %d, want %d:\n%s", sig, code, want, p.output())
				}
				waitDead(t, "the agent", child)
				contains(t, "run's summary", p.output(), fmt.Sprintf("session 1 ended (exit %d)", want))
				e.readable("after the session")
				st := decodeStatus(t, e.ta("status", "--json"))
				if st.State != "completed" || st.Session == nil || st.Session.ExitCode == nil || *st.Session.ExitCode != want ||
					len(st.Session.Tasks) != 1 || st.ActiveTask != st.Session.Tasks[0] || st.AppliedTask != st.ActiveTask {
					t.Fatalf("status: %+v", st)
				}
				post := e.manifest()
				e.agentWork("after the session")
				onlyAgentPaths(t, pre, post)
				e.ok("undo")
				sameManifest(t, "after undo", pre, e.manifest())
			})
		}
	}
}

// TestSecondRun: a second run on a root with a live session is refused
// naming the first's pid and changes nothing; once the first is killed, its
// lock file (still naming the dead pid) is taken over by the next run, which
// records the dead session first.
func TestSecondRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pre := e.manifest()
	p := e.start("", "run", "--mode", "copy", "--", "sh", "-c", agentScript)
	child := e.childPid(p)
	post := e.manifest()

	r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `echo second > second`)
	if r.Code != 1 {
		t.Fatalf("second run: want exit 1:\n%s", r)
	}
	oneLine(t, "second run", r.Stderr)
	contains(t, "second run", r.Stderr, "pid "+strconv.Itoa(p.pid()))
	sameManifest(t, "after the refused run", post, e.manifest())

	p.kill9(t)
	waitDead(t, "the agent", child)
	locks, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files: %v", locks)
	}
	b, _ := os.ReadFile(locks[0])
	if !strings.Contains(string(b), `"pid":`+strconv.Itoa(p.pid())) {
		t.Fatalf("the dead session's lock file: %q, want its pid %d", b, p.pid())
	}

	r = e.ta("run", "--mode", "copy", "--", "sh", "-c", `echo third > third`)
	if r.Code != 0 {
		t.Fatalf("run after the stale lock: want exit 0:\n%s", r)
	}
	contains(t, "run after a dead session", r.Stderr, "recovered", "had died")
	if got := e.read("third"); got != "third\n" {
		t.Fatalf("third = %q", got)
	}
	st := decodeStatus(t, e.ta("status", "--json"))
	if st.State != "completed" || st.Session.ID != 2 {
		t.Fatalf("status: %+v", st)
	}
	e.ok("undo", "--yes", "2")
	sameManifest(t, "after undo 2", pre, e.manifest())
}

// TestFirstCommandAfterKill: whichever command comes first after a fuse
// session's timeagent was killed recovers it (stale mount detached, session
// interrupted, work applied) before doing its own job.
func TestFirstCommandAfterKill(t *testing.T) {
	t.Parallel()
	for _, first := range [][]string{{"log"}, {"diff"}, {"undo", "--yes"}, {"-C", "", "status"}} {
		name := first[0]
		if name == "-C" {
			name = "C"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			pre := e.manifest()
			p := e.start("", "run", "--mode", "fuse", "--", "sh", "-c", agentScript)
			e.childPid(p)
			p.kill9(t)
			var r result
			if name == "C" {
				r = e.taIn(e.scratch, "-C", e.root, "status")
			} else {
				r = e.taOut(first...)
			}
			if r.Code != 0 {
				t.Fatalf("first command after kill -9:\n%s", r)
			}
			contains(t, name+" after kill -9", r.Stderr, "recovered: detached a stale overlay mount", "had died")
			e.readable("after " + name)
			if first[0] == "undo" {
				sameManifest(t, "after undo --yes", pre, e.manifest())
				e.ok("redo", "--yes")
			}
			e.agentWork("after " + name)
			if st := decodeStatus(t, e.ta("status", "--json")); st.State != "interrupted" {
				t.Fatalf("status: %+v", st)
			}
		})
	}
}
