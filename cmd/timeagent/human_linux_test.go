//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestHumanStatusIsolated: after a run --isolate the real files are at the
// base: status says to apply or undo; after apply, to review or undo.
func TestHumanStatusIsolated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	e.ok("run", "--mode", "fuse", "--isolate", "-m", "isolated work", "--", "sh", "-c", "echo agent > a.txt")
	if got := e.read("a.txt"); got != "a\n" {
		t.Fatalf("a.txt after the isolated session: %q", got)
	}
	st := e.goldenHuman("status-isolated.txt", "status")
	contains(t, "status after --isolate", st, "`timeagent apply` writes task 1", "`timeagent undo` discards it")
	e.ok("apply")
	st = e.ok("status").Stdout
	if !strings.Contains(st, "next:         timeagent diff to review, timeagent undo to revert\n") {
		t.Fatalf("status after apply:\n%s", st)
	}
}
