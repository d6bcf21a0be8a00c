package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/session"
)

// session in the background whose child writes its control address to
// $SCRATCH/control and runs until the test creates $SCRATCH/go.
type bgSession struct {
	e    *env
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{} // closed when run has exited
	err  error         // run's exit, once done is closed
	addr string
}

func startBgSession(t *testing.T, e *env, mode, script string) *bgSession {
	t.Helper()
	b := &bgSession{e: e, done: make(chan struct{})}
	b.cmd = e.cmd("run", "--mode", mode, "--", "sh", "-c",
		`printf %s "$TIMEAGENT_CONTROL" > "$SCRATCH/control.tmp"; mv "$SCRATCH/control.tmp" "$SCRATCH/control"; `+script+
			`; while [ ! -e "$SCRATCH/go" ]; do sleep 0.05; done`)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		writeFile(t, filepath.Join(e.scratch, "go"), nil, 0o644)
		select {
		case <-b.done:
		case <-time.After(30 * time.Second):
			b.cmd.Process.Kill()
			<-b.done
		}
		e.ta("recover")
	})
	ctl := filepath.Join(e.scratch, "control")
	waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(ctl) })
	a, err := os.ReadFile(ctl)
	if err != nil {
		t.Fatal(err)
	}
	b.addr = string(a)
	return b
}

// end lets the child exit and returns how long run took to end after that.
func (b *bgSession) end(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	writeFile(t, filepath.Join(b.e.scratch, "go"), nil, 0o644)
	select {
	case <-b.done:
		if b.err != nil {
			t.Fatalf("session: %v\n%s", b.err, b.out.String())
		}
		return time.Since(start)
	case <-time.After(60 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
		t.Fatalf("run did not end 60 s after its child exited\n%s", b.out.String())
		return 0
	}
}

// TestControlAllowlist: a client that writes to the control socket itself
// can run only the documented commands; the hidden __proxy (which would run
// git with the client's arguments in the session process) and anything else
// is refused and runs nothing.
func TestControlAllowlist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := startBgSession(t, e, "copy", "true")
	marker := filepath.Join(e.scratch, "pwned")
	refused := [][]string{
		{"__proxy", "git", "-c", "alias.pwn=!touch " + marker, "pwn"},
		{"-C", "/", "__proxy", "git", "-c", "alias.pwn=!touch " + marker, "pwn"},
		{"run", "--", "touch", marker},
		{"apply"},
		{"recover"},
		{"version"},
		{"help"},
		{"completion", "bash"},
		{"no-such-command"},
		{"--version"},
		{},
	}
	for _, argv := range refused {
		resp, err := session.Call(b.addr, session.Request{Argv: argv, Cwd: e.root}, 10*time.Second)
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		if resp.Code != 2 || resp.Stdout != "" || !strings.Contains(resp.Stderr, "not accepted over the control socket") {
			t.Fatalf("%q: want refused with exit 2, got %+v", argv, resp)
		}
		oneLine(t, resp.Stderr)
		if exists(marker) {
			t.Fatalf("%q ran in the session process", argv)
		}
	}
	// The CLI does not send them: it says to wait for the end.
	for _, cmd := range []string{"verify", "apply"} {
		r := e.fails(1, cmd)
		oneLine(t, r.Stderr)
		contains(t, cmd+" during a session", r.Stderr, "run `timeagent "+cmd+"` when it has ended")
	}
	for _, argv := range [][]string{{"status", "--json"}, {"-C", e.root, "log"}, {"diff"}, {"actions"}, {"checkpoint", "-m", "two"}} {
		resp, err := session.Call(b.addr, session.Request{Argv: argv, Cwd: e.root}, 10*time.Second)
		if err != nil || resp.Code != 0 {
			t.Fatalf("%q: %v %+v", argv, err, resp)
		}
	}
	b.end(t)
	if l := e.log(); len(l.Tasks) != 2 {
		t.Fatalf("want the checkpoint's two tasks: %+v", l.Tasks)
	}
}

// TestControlIdleClient: a client that connects and never sends a request
// (or sends half of one) does not hold the end of the session.
func TestControlIdleClient(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			b := startBgSession(t, e, mode, "true")
			checkPrivateSocket(t, b.addr)
			idle, err := session.Dial(b.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			half, err := session.Dial(b.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer half.Close()
			if _, err := half.Write([]byte(`{"argv":["sta`)); err != nil {
				t.Fatal(err)
			}
			// Commands still get through beside them.
			contains(t, "status beside idle clients", e.ok("status").Stdout, "active")
			d := b.end(t)
			t.Logf("run ended %v after its child, beside two idle clients", d)
			if d > 5*time.Second {
				t.Fatalf("run ended %v after its child, want a few seconds at most", d)
			}
		})
	}
}

// TestControlChannelCannotStart: a session whose control channel cannot
// start still runs the agent and records its work, with a warning; commands
// from inside say why they cannot reach it.
func TestControlChannelCannotStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("status")
	dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*"))
	if len(dirs) != 1 {
		t.Fatalf("state dirs: %q", dirs)
	}
	// Where the socket would go, something that is not ours to replace.
	writeFile(t, filepath.Join(dirs[0], "control"), []byte("not a directory\n"), 0o644)
	writeFile(t, filepath.Join(dirs[0], "control.sock", "keep"), nil, 0o644)
	r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `echo x > a.txt; "$TA" status 2> "$SCRATCH/status.err"; echo $? > "$SCRATCH/status.code"`)
	if r.Code != 0 {
		t.Fatalf("run without a control channel: %s", r)
	}
	contains(t, "run's warning", r.Stderr, "timeagent commands cannot reach this session until it ends", "control")
	b, _ := os.ReadFile(filepath.Join(e.scratch, "status.err"))
	oneLine(t, string(b))
	contains(t, "status from inside", string(b), "without a control channel")
	if b, _ := os.ReadFile(filepath.Join(e.scratch, "status.code")); string(b) != "1\n" {
		t.Fatalf("status from inside exited %q, want 1", b)
	}
	if l := e.log(); len(l.Tasks) != 1 || l.Tasks[0].Files != 1 {
		t.Fatalf("the session's task: %+v", l.Tasks)
	}
}

// checkPrivateSocket fails unless addr is a socket in a directory of this
// user that only this user can enter (Unix) or a named pipe (Windows).
func checkPrivateSocket(t *testing.T, addr string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		if !strings.HasPrefix(addr, `\\.\pipe\timeagent-`) {
			t.Fatalf("control address %q is not a timeagent pipe", addr)
		}
		return
	}
	if !filepath.IsAbs(addr) {
		t.Fatalf("control address %q is not a path", addr)
	}
	fi, err := os.Lstat(filepath.Dir(addr))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %s: %v, want a 0700 directory", filepath.Dir(addr), fi.Mode())
	}
	if fi, err := os.Lstat(addr); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("control socket %s: %v %v", addr, fi, err)
	}
}
