//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// taWithin runs timeagent ARGS in dir and fails the test when it has not
// ended within limit (it is killed then).
func (e *env) taWithin(limit time.Duration, dir string, args ...string) result {
	e.t.Helper()
	cmd := e.cmd(args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		select {
		case <-done:
			e.t.Fatalf("timeagent %q did not end within %v\nstdout:\n%s\nstderr:\n%s", args, limit, out.String(), errb.String())
		case <-time.After(5 * time.Second):
			// In uninterruptible sleep on an unserved FUSE request: it
			// ends when the test's cleanup resumes the session.
			e.t.Fatalf("timeagent %q did not end within %v, nor when killed (state %s)", args, limit, procState(cmd.Process.Pid))
		}
	}
	r := result{Args: args, Stdout: out.String(), Stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("timeagent %q: exit %d in %v", args, r.Code, time.Since(start).Round(time.Millisecond))
	if strings.Contains(r.Stderr, "panic:") || strings.Contains(r.Stderr, "goroutine ") {
		e.t.Fatalf("timeagent panicked:\n%s", r)
	}
	return r
}

// procState is the state letter of process pid (/proc/PID/stat).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// startSession starts `timeagent run --mode MODE -- sh -c SCRIPT` in the
// background and waits until SCRIPT has touched $SCRATCH/started. Cleanup
// touches $SCRATCH/stop, resumes, ends and waits for it, and detaches what
// it may have left.
func (e *env) startSession(mode, script string) *exec.Cmd {
	t := e.t
	t.Helper()
	marker := filepath.Join(e.scratch, "started")
	bg := e.cmd("run", "--mode", mode, "--", "sh", "-c", `touch "$SCRATCH/started"; `+script)
	var bgOut bytes.Buffer
	bg.Stdout, bg.Stderr = &bgOut, &bgOut
	bg.WaitDelay = 5 * time.Second
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		writeFile(t, filepath.Join(e.scratch, "stop"), nil, 0o644)
		bg.Process.Signal(syscall.SIGCONT)
		bg.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { bg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			bg.Process.Kill()
			<-done
		}
		t.Logf("session output:\n%s", bgOut.String())
		exec.Command("umount", "-l", e.root).Run()
	})
	waitFor(t, "the child to start", 60*time.Second, func() bool { return exists(marker) })
	return bg
}

// TestStoppedSession: a session stopped with Ctrl-Z (SIGSTOP) keeps its
// root's lock and, in fuse mode, its overlay mounted but unserved. Every
// other command on that root returns within seconds: status says the
// session is stopped and how to resume it, commands that need the journal or
// the tree fail with the same advice. Once resumed, everything works again.
func TestStoppedSession(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("a.txt", "a\n", 0o644)
			bg := e.startSession(mode, `echo b > a.txt; while [ ! -e "$SCRATCH/stop" ]; do sleep 0.2; done`)
			pid := bg.Process.Pid
			if err := bg.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the session to stop", 10*time.Second, func() bool { return procState(pid) == "T" })
			resume := fmt.Sprintf("kill -CONT %d", pid)
			limit := 15 * time.Second
			r := e.taWithin(limit, e.root, "status")
			if r.Code != 0 {
				t.Fatalf("status of a stopped session:\n%s", r)
			}
			contains(t, "status of a stopped session", r.Stdout, "stopped", resume)
			r = e.taWithin(limit, e.root, "status", "--json")
			var st statusDoc
			decodeJSON(t, r, &st)
			if st.State != "stopped" || st.Session == nil || st.Session.Pid != pid {
				t.Fatalf("status --json of a stopped session: %+v", st)
			}
			for _, args := range [][]string{{"log"}, {"diff"}, {"undo"}, {"checkpoint"}} {
				r := e.taWithin(limit, e.root, args...)
				if r.Code == 0 {
					t.Fatalf("%q with a stopped session succeeded:\n%s", args, r)
				}
				oneLine(t, r.Stderr)
				contains(t, fmt.Sprintf("%q with a stopped session", args), r.Stderr, "stopped", resume, "fg")
			}
			r = e.taWithin(limit, e.scratch, "-C", e.root, "run", "true")
			if r.Code == 0 {
				t.Fatalf("run beside a stopped session succeeded:\n%s", r)
			}
			contains(t, "run beside a stopped session", r.Stderr, "stopped", resume)
			// Resumed, the session answers again.
			if err := bg.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the session to resume", 10*time.Second, func() bool { return procState(pid) != "T" })
			if st := e.status(); st.State != "active" {
				t.Fatalf("status after SIGCONT: %+v", st)
			}
		})
	}
}

// TestStateDirDeletedDuringSession: the state directory removed while the
// agent runs makes run end within a bound (badger's close would retry its
// flush forever) with a clear error naming the directory, and no mount is
// left behind.
func TestStateDirDeletedDuringSession(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("a.txt", "a\n", 0o644)
			r := e.taWithin(60*time.Second, e.root, "run", "--mode", mode, "--", "sh", "-c", `rm -rf "$TIMEAGENT_HOME"; echo b > a.txt`)
			if r.Code == 0 {
				t.Fatalf("run whose state dir was deleted succeeded:\n%s", r)
			}
			lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			contains(t, "run whose state dir was deleted", last, "state directory", e.home, "deleted")
			if strings.Contains(r.Stderr, "timeagent undo") {
				t.Fatalf("run offers undo without a history:\n%s", r)
			}
			if out, _ := exec.Command("sh", "-c", "grep -F ' "+e.root+" ' /proc/self/mountinfo").Output(); len(out) > 0 {
				t.Fatalf("a mount was left on the root: %s", out)
			}
		})
	}
}

// TestSessionLog: what the overlay logs goes to the session log in the
// state dir, and run and status name it. The agent leaves a process behind
// in the root, so the overlay cannot be unmounted at once and says so in
// its log (the same log holds the cause of any EIO it answers).
func TestSessionLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	// The process must outlive the end's wait for processes in the root.
	e.extra = append(e.extra, "TIMEAGENT_END_WAIT=0.2")
	r := e.taWithin(120*time.Second, e.root, "run", "--mode", "fuse", "--", "sh", "-c", `echo b > a.txt; (sleep 3 </dev/null >/dev/null 2>&1 &)`)
	t.Logf("run:\n%s", r)
	t.Cleanup(func() { time.Sleep(3 * time.Second) }) // the sleep leaves the detached mount
	logs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "session.log"))
	if len(logs) != 1 {
		t.Fatalf("want one session log in %s, got %q", e.home, logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "session log", string(b), "session 1: started in fuse mode", "device or resource busy", "session 1: ended (exit 0)")
	contains(t, "run's output", r.Stderr, logs[0], "device or resource busy")
	r = e.taWithin(60*time.Second, e.root, "status")
	contains(t, "status", r.Stdout, "log:", logs[0])
}

// TestApplyCannotFinish: while a fuse session runs, its real file a.txt is
// made immutable (chattr +i, through a descriptor of the real root taken
// before the overlay covered it), so the apply at the session's end cannot
// replace it. Run fails naming the file; status, log and diff still work
// and say what to do; undo --session goes back past the session and leaves
// the tree as it was before it.
func TestApplyCannotFinish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	e.write("b.txt", "b\n", 0o644)
	if out, err := exec.Command("chattr", "+i", e.path("b.txt")).CombinedOutput(); err != nil {
		t.Skipf("chattr +i does not work here: %v %s", err, out)
	}
	exec.Command("chattr", "-i", e.path("b.txt")).Run()
	pre := e.manifest()
	real, err := os.Open(e.root)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	realA := fmt.Sprintf("/proc/%d/fd/%d/a.txt", os.Getpid(), real.Fd())
	t.Cleanup(func() { exec.Command("chattr", "-i", e.path("a.txt")).Run() })
	bg := e.cmd("run", "--mode", "fuse", "--", "sh", "-c",
		`echo A > a.txt; echo B > b.txt; echo c > c.txt; touch "$SCRATCH/written"; while [ ! -e "$SCRATCH/go" ]; do sleep 0.1; done`)
	var bgOut bytes.Buffer
	bg.Stdout, bg.Stderr = &bgOut, &bgOut
	bg.WaitDelay = 5 * time.Second
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bg.Wait() }()
	t.Cleanup(func() {
		writeFile(t, filepath.Join(e.scratch, "go"), nil, 0o644)
		bg.Process.Kill()
		<-done
		exec.Command("umount", "-l", e.root).Run()
	})
	waitFor(t, "the agent's writes", 60*time.Second, func() bool { return exists(filepath.Join(e.scratch, "written")) })
	if out, err := exec.Command("chattr", "+i", realA).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i %s: %v %s", realA, err, out)
	}
	writeFile(t, filepath.Join(e.scratch, "go"), nil, 0o644)
	select {
	case err := <-done:
		done <- err
		if err == nil {
			t.Fatalf("run succeeded although a.txt could not be replaced:\n%s", bgOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("run did not end:\n%s", bgOut.String())
	}
	t.Logf("run:\n%s", bgOut.String())
	contains(t, "run's error", bgOut.String(), "a.txt", "chattr -i", "timeagent undo --session")
	limit := 30 * time.Second
	for _, args := range [][]string{{"status"}, {"log"}, {"diff"}} {
		r := e.taWithin(limit, e.root, args...)
		if r.Code != 0 {
			t.Fatalf("%q after an apply that cannot finish:\n%s", args, r)
		}
		contains(t, fmt.Sprintf("%q after an apply that cannot finish", args), r.Stderr, "a.txt", "chattr -i", "timeagent undo --session")
		if args[0] == "status" {
			contains(t, "status's next step", r.Stdout, "next:         an apply to task 1 could not finish", "timeagent recover", "timeagent verify")
		}
	}
	r := e.taWithin(limit, e.root, "undo", "--session", "--yes")
	if r.Code != 0 {
		t.Fatalf("undo --session past an apply that cannot finish:\n%s", r)
	}
	sameManifest(t, "after undo --session", pre, e.manifest())
	r = e.taWithin(limit, e.root, "status")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("status after undo --session:\n%s", r)
	}
}
