package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun runs timeagent ARGS on a pseudo-terminal, answers the first
// "[y/N]" prompt with answer and returns the terminal output and exit code.
func (e *env) ptyRun(answer string, args ...string) (string, int) {
	e.t.Helper()
	cmd := e.cmd(args...)
	f, err := pty.Start(cmd)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	text := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	waitFor(e.t, "the [y/N] prompt", 20*time.Second, func() bool { return strings.Contains(text(), "[y/N]") })
	if _, err := f.Write([]byte(answer)); err != nil {
		e.t.Fatal(err)
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	f.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return text(), code
}

// TestDriftPrompt answers the drift question on a terminal: No changes
// nothing, Yes applies; the edit is kept as a task either way.
func TestDriftPrompt(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("f.txt", "one\n", 0o644)
			pre := e.manifest()
			e.sh(mode, "echo agent > f.txt")
			e.write("f.txt", "by hand\n", 0o644)
			drifted := e.manifest()

			for _, answer := range []string{"n\n", "\n", "what\n"} {
				out, code := e.ptyRun(answer, "undo")
				if code != 1 {
					t.Fatalf("answer %q: exit %d, want 1:\n%s", answer, code, out)
				}
				contains(t, "prompt", out, "f.txt", "[y/N]")
				sameManifest(t, fmt.Sprintf("after answering %q", answer), drifted, e.manifest())
			}

			out, code := e.ptyRun("y\n", "undo")
			if code != 0 {
				t.Fatalf("answer y: exit %d, want 0:\n%s", code, out)
			}
			sameManifest(t, "after answering y", pre, e.manifest())
			var outside []uint64
			for _, x := range e.log().Tasks {
				if x.Kind == "outside" {
					outside = append(outside, x.ID)
				}
			}
			if len(outside) == 0 {
				t.Fatal("no outside task recorded")
			}
			// Every outside task holds the edit.
			for _, id := range outside {
				e.ok("switch", "--yes", fmt.Sprint(id))
				sameManifest(t, fmt.Sprintf("switch to outside task %d", id), drifted, e.manifest())
			}
		})
	}
}

// TestCrashSafeApply kills `undo` with SIGKILL at random moments; the next
// command finishes the apply, so the tree is exactly the pre-session tree
// (or, when the kill came before the intent, still the post-session tree).
func TestCrashSafeApply(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("keep.txt", "keep\n", 0o644)
			pre := e.manifest()
			e.sh(mode, `mkdir d1 d2 d3; i=0; while [ $i -lt 1000 ]; do echo "one $i" > d1/f$i; echo "two $i" > d2/f$i; echo "three $i" > d3/f$i; i=$((i+1)); done; echo changed > keep.txt`)
			post := e.manifest()
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			var delays []time.Duration
			midApply := 0
			// Alternate: kill an undo (toward pre), then a redo (toward post).
			want := map[uint64]string{0: pre, 1: post}
			for i := 0; i < 5; i++ {
				action, target, from := "undo", uint64(0), uint64(1)
				if i%2 == 1 {
					action, target, from = "redo", 1, 0
				}
				d := time.Duration(150+rng.Intn(300)+i*350) * time.Millisecond
				delays = append(delays, d)
				cmd := e.cmd(action, "--yes")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(d)
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				r := e.ok("status")
				if strings.Contains(r.Stderr, "recovered") {
					midApply++
				}
				st := e.status()
				got := e.manifest()
				if st.ActiveTask != target && st.ActiveTask != from {
					t.Fatalf("active task %d after a killed %s", st.ActiveTask, action)
				}
				sameManifest(t, fmt.Sprintf("%s killed after %v, then status (active task %d)", action, d, st.ActiveTask), want[st.ActiveTask], got)
				if st.ActiveTask != target {
					e.ok(action, "--yes") // killed before it began: do it now
					sameManifest(t, action, want[target], e.manifest())
				}
			}
			t.Logf("delays %v: %d of 5 kills interrupted an apply", delays, midApply)
			if midApply == 0 {
				t.Error("no kill interrupted an apply: the test proved nothing")
			}
		})
	}
}
