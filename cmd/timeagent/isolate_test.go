//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIsolateBesideAnotherSession: an --isolate session started while
// another root's fuse session runs does not keep that session's mount: the
// isolated agent does not see it, and the first session ends at once when
// its agent exits (before, its server waited for the isolated namespace).
func TestIsolateBesideAnotherSession(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	a.write("a.txt", "a\n", 0o644)
	b.write("b.txt", "b\n", 0o644)
	go1 := filepath.Join(a.scratch, "go")
	// Session A: its agent waits until B's agent has looked at its mounts.
	cmdA := a.cmd("run", "--mode", "fuse", "--", "sh", "-c",
		`echo changed > a.txt; touch "$SCRATCH/a-up"; while [ ! -e "$SCRATCH/go" ]; do sleep 0.05; done`)
	if err := cmdA.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// On failure: let A's agent end, so its session unmounts.
		os.WriteFile(go1, nil, 0o644)
		time.Sleep(100 * time.Millisecond)
		cmdA.Process.Signal(os.Interrupt)
	}()
	waitFile(t, filepath.Join(a.scratch, "a-up"))
	seen := filepath.Join(b.scratch, "mounts")
	r := b.ta("run", "--mode", "fuse", "--isolate", "--", "sh", "-c", `grep fuse.timeagent /proc/self/mountinfo > "`+seen+`"; echo agent > b.txt`)
	if r.Code != 0 {
		t.Fatalf("isolated session: %v", r)
	}
	mounts, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	// A normal user's isolated namespace belongs to a user namespace, in
	// which the copies of other mounts are locked: it keeps A's copy (A
	// still ends at once, below).
	if strings.Contains(string(mounts), a.root) && os.Geteuid() == 0 {
		t.Fatalf("the isolated agent sees the other session's overlay:\n%s", mounts)
	}
	if !strings.Contains(string(mounts), b.root) {
		t.Fatalf("the isolated agent does not see its own overlay:\n%s", mounts)
	}
	if err := os.WriteFile(go1, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cmdA.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("session A: %v", err)
		}
	case <-time.After(20 * time.Second):
		cmdA.Process.Kill()
		t.Fatal("session A did not end within 20 s of its agent")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("session A took %v to end", took)
	}
	if got := a.read("a.txt"); got != "changed\n" {
		t.Fatalf("a.txt after session A: %q", got)
	}
	if got := b.read("b.txt"); got != "b\n" {
		t.Fatalf("b.txt after the isolated session: %q (the real tree must stay at the base)", got)
	}
}

// waitFile waits up to 20 s for p to exist.
func waitFile(t *testing.T, p string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", p)
}
