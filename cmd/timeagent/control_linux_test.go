package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlFromNetworkNamespace: an agent sandboxed in its own network
// namespace (Codex's workspace-write sandbox, bwrap --unshare-net, firejail)
// still reaches its session: status, checkpoint and undo work from inside.
func TestControlFromNetworkNamespace(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	if os.Getuid() != 0 {
		t.Skip("unshare -n needs root (or a user namespace)")
	}
	for _, c := range []struct{ name, mode, home string }{
		{"copy", "copy", ""},
		{"fuse", "fuse", ""},
		// A state dir too long for a socket address (108 bytes).
		{"fuse/long-home", "fuse", strings.Repeat("long-state-directory-", 5)},
	} {
		mode := c.mode
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if c.home != "" {
				e.home = filepath.Join(e.home, c.home)
			}
			e.write("f.txt", "one\n", 0o644)
			e.sh(mode, `set -e
echo two > f.txt
unshare -n "$TA" checkpoint -m second > "$SCRATCH/checkpoint.txt"
echo three > f.txt
unshare -n "$TA" status --json > "$SCRATCH/status.json"
`)
			b, err := os.ReadFile(filepath.Join(e.scratch, "checkpoint.txt"))
			if err != nil {
				t.Fatal(err)
			}
			contains(t, "checkpoint from another network namespace", string(b), "task 1 closed, task 2 started")
			b, _ = os.ReadFile(filepath.Join(e.scratch, "status.json"))
			var st statusDoc
			decodeJSON(t, result{Stdout: string(b)}, &st)
			if st.State != "active" || st.ActiveTask != 2 {
				t.Fatalf("status from another network namespace: %+v", st)
			}
			if l := e.log(); len(l.Tasks) != 2 {
				t.Fatalf("tasks: %+v", l.Tasks)
			}
		})
	}
}
