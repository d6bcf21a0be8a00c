//go:build !windows

package main

import (
	"syscall"
	"testing"
	"time"
)

// TestControlStoppedSession: a command forwarded to a session that stopped
// answering (Ctrl-Z, SIGSTOP) gives up within seconds and says why.
func TestControlStoppedSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := startBgSession(t, e, "copy", "true")
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer b.cmd.Process.Signal(syscall.SIGCONT)
	start := time.Now()
	r := e.fails(1, "status")
	d := time.Since(start)
	t.Logf("status gave up on the stopped session after %v", d)
	if d > 20*time.Second {
		t.Fatalf("status took %v", d)
	}
	oneLine(t, r.stderr)
	contains(t, "status of a stopped session", r.stderr, "stopped answering", "Ctrl-Z")
	b.cmd.Process.Signal(syscall.SIGCONT)
	contains(t, "status once the session goes on", e.ok("status").stdout, "active")
	b.end(t)
}
