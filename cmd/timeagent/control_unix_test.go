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
	r := e.fails(1, "log")
	d := time.Since(start)
	t.Logf("log gave up on the stopped session after %v", d)
	if d > 20*time.Second {
		t.Fatalf("log took %v", d)
	}
	oneLine(t, r.Stderr)
	contains(t, "log beside a stopped session", r.Stderr, "stopped", "Ctrl-Z")
	// status itself answers at once and says so (exit 0).
	contains(t, "status of a stopped session", e.ok("status").Stdout, "stopped")
	b.cmd.Process.Signal(syscall.SIGCONT)
	contains(t, "status once the session goes on", e.ok("status").Stdout, "active")
	b.end(t)
}
