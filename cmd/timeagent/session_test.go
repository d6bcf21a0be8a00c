package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestControlSocketFromChild: commands run by the child reach the session.
func TestControlSocketFromChild(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("f.txt", "one\n", 0o644)
			e.sh(mode, `set -e
"$TA" status --json > "$SCRATCH/status.json"
echo x > a.txt
"$TA" log --json > "$SCRATCH/log.json"
"$TA" diff --json > "$SCRATCH/diff.json"
"$TA" checkpoint -m second > "$SCRATCH/checkpoint.txt"
echo y > b.txt
"$TA" status --json > "$SCRATCH/status2.json"
if "$TA" run true 2> "$SCRATCH/nested.err"; then exit 99; fi`)
			read := func(name string, v any) {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(e.scratch, name))
				if err != nil {
					t.Fatal(err)
				}
				decodeJSON(t, result{Stdout: string(b)}, v)
			}
			var st statusDoc
			read("status.json", &st)
			if st.State != "active" || st.Session == nil || st.Session.ID != 1 || st.ActiveTask != 1 || st.Mode != mode {
				t.Fatalf("status from inside: %+v", st)
			}
			var l logDoc
			read("log.json", &l)
			if len(l.Tasks) != 1 || l.Tasks[0].Status != "current" {
				t.Fatalf("log from inside: %+v", l)
			}
			var d diffDoc
			read("diff.json", &d)
			if len(d.Changes) != 1 || d.Changes[0].Path != "a.txt" || d.Changes[0].Change != "created" {
				t.Fatalf("diff from inside: %+v", d)
			}
			cp, _ := os.ReadFile(filepath.Join(e.scratch, "checkpoint.txt"))
			contains(t, "checkpoint", string(cp), "task 1 closed, task 2 started")
			read("status2.json", &st)
			if st.ActiveTask != 2 || st.State != "active" {
				t.Fatalf("status after checkpoint: %+v", st)
			}

			nested, _ := os.ReadFile(filepath.Join(e.scratch, "nested.err"))
			oneLine(t, string(nested))
			contains(t, "run inside a session", string(nested), "already running")
			l = e.log()
			if len(l.Tasks) != 2 {
				t.Fatalf("want two tasks: %+v", l.Tasks)
			}
			t1, t2 := l.task(t, 1), l.task(t, 2)
			if t1.Session != 1 || t2.Session != 1 || t2.Parent != 1 || t2.Summary != "second" || t1.Files != 1 || t2.Files != 1 {
				t.Fatalf("tasks of the session: %+v", l.Tasks)
			}
			st = e.status()
			if st.State != "completed" || len(st.Session.Tasks) != 2 {
				t.Fatalf("status after the session: %+v", st)
			}
			e.ok("undo")
			if exists(e.path("b.txt")) || !exists(e.path("a.txt")) {
				t.Fatal("undo of task 2 should remove b.txt only")
			}
		})
	}
}

// TestControlSocketFromAnotherTerminal: while a session runs, status
// reaches it and a second run is refused naming its pid.
func TestControlSocketFromAnotherTerminal(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			marker := filepath.Join(e.scratch, "started")
			bg := e.cmd("run", "--mode", mode, "--", "sh", "-c", `touch a; touch "$SCRATCH/started"; sleep 3`)
			var bgOut bytes.Buffer
			bg.Stdout, bg.Stderr = &bgOut, &bgOut
			if err := bg.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				bg.Process.Kill()
				bg.Wait()
				e.ta("recover") // detach the overlay of a killed fuse session
			})
			waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(marker) })
			st := e.status()
			if st.State != "active" || st.Session == nil || st.Session.Pid != bg.Process.Pid {
				t.Fatalf("status from another terminal (session pid %d): %+v", bg.Process.Pid, st)
			}
			out := e.ok("log").Stdout
			contains(t, "log from another terminal", out, "→")
			r := e.fails(1, "run", "true")
			contains(t, "second run", r.Stderr, fmt.Sprintf("pid %d", bg.Process.Pid), "already running")
			oneLine(t, r.Stderr)
			if mode == "copy" {
				// The child writes into the real tree: history cannot move.
				r = e.fails(1, "undo")
				oneLine(t, r.Stderr)
			} else {
				// The overlay's view moves at once; the real tree follows
				// when the session ends.
				contains(t, "undo inside a fuse session", e.ok("undo").Stdout, "task 1 → task 0")
			}
			if err := bg.Wait(); err != nil {
				t.Fatalf("session: %v\n%s", err, bgOut.String())
			}
			if st := e.status(); st.State != "completed" || len(e.log().Tasks) != 1 {
				t.Fatalf("after the session: %+v", st)
			}
			if want := mode == "copy"; exists(e.path("a")) != want {
				t.Fatalf("after the session, a exists = %v, want %v", !want, want)
			}
		})
	}
}

// TestRunExitStatus: the child's exit status is run's.
func TestRunExitStatus(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			r := e.fails(3, "run", "--mode", mode, "--", "sh", "-c", "echo x > f; exit 3")
			contains(t, "exit 3", r.Stderr, "session 1 ended (exit 3)")
			// Finalised although the child failed.
			st := e.status()
			if st.State != "completed" || st.Session.ExitCode == nil || *st.Session.ExitCode != 3 {
				t.Fatalf("status after exit 3: %+v", st)
			}
			if l := e.log(); len(l.Tasks) != 1 || l.Tasks[0].Files != 1 {
				t.Fatalf("log after exit 3: %+v", l)
			}
			e.ok("undo")
			if exists(e.path("f")) {
				t.Fatal("undo after a failed child did not remove f")
			}
			e.fails(143, "run", "--mode", mode, "--", "sh", "-c", "kill -TERM $$")
			if st := e.status(); st.Session.ExitCode == nil || *st.Session.ExitCode != 143 {
				t.Fatalf("status after kill -TERM: %+v", st)
			}
		})
	}
}

// TestRunMissingCommand: exit 127, a one-line message, nothing recorded.
func TestRunMissingCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pre := e.manifest()
	r := e.fails(127, "run", "--mode", "copy", "--", "no-such-command-xyz", "arg")
	if want := "timeagent: failed to start \"no-such-command-xyz\": command not found\n"; r.Stderr != want {
		t.Fatalf("stderr %q, want %q", r.Stderr, want)
	}
	// session is TimeAgent 0.2's object even without one: id 0.
	if st := e.status(); st.State != "absent" || st.Session == nil || st.Session.ID != 0 {
		t.Fatalf("status: %+v", st)
	}
	if l := e.log(); len(l.Tasks) != 0 {
		t.Fatalf("tasks recorded: %+v", l.Tasks)
	}
	sameManifest(t, "after a missing command", pre, e.manifest())
	// A path that exists but cannot be executed.
	e.write("notexec", "data\n", 0o644)
	r = e.ta("run", "--", "./notexec")
	if r.Code != 127 && r.Code != 126 {
		t.Fatalf("non-executable command: %s", r)
	}
	if l := e.log(); len(l.Tasks) != 0 {
		t.Fatalf("tasks recorded for a command that did not start: %+v", l.Tasks)
	}
}

// TestRunArgvUnchanged: argv reaches the child exactly as given.
func TestRunArgvUnchanged(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			args := []string{"a b", `"quoted"`, "'single'", "x; rm -rf /", "$HOME", "", "ünïcødé ✓", "-m", "--mode", "*", "\\n", "a\nb", "--"}
			out := filepath.Join(e.scratch, "argv")
			argv := append([]string{"sh", "-c", `printf '%s\0' "$@" > "$SCRATCH/argv"`, "sh"}, args...)
			r := e.run(mode, argv...)
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join(args, "\x00") + "\x00"
			if string(got) != want {
				t.Fatalf("argv:\n got %q\nwant %q", got, want)
			}
			if r.Stdout != "" {
				t.Fatalf("stdout is not the child's: %q", r.Stdout)
			}
			st := e.status()
			if fmt.Sprint(st.Session.Argv) != fmt.Sprint(argv) || len(st.Session.Argv) != len(argv) {
				t.Fatalf("status argv %q, want %q", st.Session.Argv, argv)
			}
		})
	}
}

// TestRunStdoutClean: the child's stdout is run's stdout; the change
// summary goes to stderr.
func TestRunStdoutClean(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.sh("copy", "echo hello; echo err >&2; echo x > f.txt")
	if r.Stdout != "hello\n" {
		t.Fatalf("stdout %q, want the child's only", r.Stdout)
	}
	contains(t, "stderr", r.Stderr, "err\n", "session 1 ended (exit 0), copy mode, task 1: 1 created, 0 modified, 0 deleted", "+ f.txt")
}

// TestRunForwardsSignals: SIGTERM, SIGINT and SIGHUP sent to timeagent
// reach the child and the session is still finalised.
func TestRunForwardsSignals(t *testing.T) {
	for _, mode := range modes {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			t.Run(mode+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				cmd := e.cmd("run", "--mode", mode, "--", "sh", "-c",
					`trap 'echo got-it > "$SCRATCH/sig"; echo late > late.txt; exit 7' TERM INT HUP; echo early > early.txt; touch "$SCRATCH/started"; while :; do sleep 0.05; done`)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "started")) })
				cmd.Process.Signal(sig)
				err := cmd.Wait()
				if cmd.ProcessState.ExitCode() != 7 {
					t.Fatalf("run after %v: %v, want exit 7 (the child's)\n%s", sig, err, out.String())
				}
				if b, _ := os.ReadFile(filepath.Join(e.scratch, "sig")); string(b) != "got-it\n" {
					t.Fatalf("the child did not get %v", sig)
				}
				st := e.status()
				if st.State != "completed" || *st.Session.ExitCode != 7 {
					t.Fatalf("status: %+v", st)
				}
				var d diffDoc
				e.jsonOf(&d, "diff", "--json")
				if len(d.Changes) != 2 || d.Changes[0].Path != "early.txt" || d.Changes[1].Path != "late.txt" {
					t.Fatalf("diff: %+v", d)
				}
			})
		}
	}
}

// TestRunDirAndEnv: the child runs in the caller's directory (-C too) with
// the session's environment.
func TestRunDirAndEnv(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("sub/keep", "", 0o644)
	r := e.ok("-C", "sub", "run", "--", "sh", "-c", `pwd; echo "$TIMEAGENT_ROOT|$TIMEAGENT_SESSION"; test -n "$TIMEAGENT_CONTROL"`)
	if want := e.path("sub") + "\n" + e.root + "|1\n"; r.Stdout != want {
		t.Fatalf("stdout %q, want %q", r.Stdout, want)
	}
	var st map[string]any
	e.jsonOf(&st, "-C", "sub", "status", "--json")
	if b, _ := json.Marshal(st["root"]); string(b) != fmt.Sprintf("%q", e.root) {
		t.Fatalf("root %s", b)
	}
}
