//go:build linux

package crashtest

import (
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fillResult is what fillAgent saw.
type fillResult struct {
	Written  int64  `json:"written"`
	WriteErr string `json:"writeErr"`
	CloseErr string `json:"closeErr"`
}

// fillAgent writes up to 200 MiB into big, 1 MiB at a time, stops at the
// first error, closes, and reports both errors in $SCRATCH/fill.json; then
// it changes a, so the session has ordinary work too.
func fillAgent() error {
	var res fillResult
	f, err := os.Create("big")
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewSource(1))
	for res.Written < 200<<20 {
		rng.Read(buf)
		n, err := f.Write(buf)
		res.Written += int64(n)
		if err != nil {
			res.WriteErr = err.Error()
			break
		}
	}
	if err := f.Close(); err != nil {
		res.CloseErr = err.Error()
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(os.Getenv("SCRATCH"), "fill.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile("a", []byte("x\n"), 0o644)
}

// TestNoSpaceWhileJournaling: in a fuse session the agent writes more than
// the state dir's file system holds. Its write (or close) must fail with
// ENOSPC, the journal must stay consistent, and the session must be undone
// to the pre-session tree once space is freed.
func TestNoSpaceWhileJournaling(t *testing.T) {
	t.Parallel()
	// A session needs 64 MiB free to start (session.MinFree), so the disk
	// is a little larger than that, and the agent writes more than all of it.
	disk := tmpfs(t, "100m")
	e := newEnvAt(t, t.TempDir(), mkdirs(t, disk, "home"))
	pre := e.manifest()
	e.crashOK = true
	r := e.ta(append([]string{"run", "--mode", "fuse", "--"}, agentArgv("fill")...)...)
	e.crashOK = false
	t.Logf("run: exit %d, stderr:\n%.1500s", r.Code, r.Stderr)
	if strings.Contains(r.Stderr, "fatal error:") || strings.Contains(r.Stderr, "panic:") || strings.Contains(r.Stderr, "SIGBUS") {
		t.Errorf("run crashed on a full journal disk (exit %d):\n%.1500s", r.Code, r.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.scratch, "fill.json"))
	if err != nil {
		t.Fatalf("the agent did not finish (%v):\n%s", err, r)
	}
	var res fillResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("agent: wrote %d MiB, write error %q, close error %q", res.Written>>20, res.WriteErr, res.CloseErr)
	if mountedAt(t, e.root) {
		t.Errorf("the failed session left its overlay mounted on the root")
	}
	if !strings.Contains(res.WriteErr+res.CloseErr, "no space left on device") {
		t.Errorf("the agent's write and close on a full journal disk: %+v, want ENOSPC", res)
	}
	// Free the space: grow the file system.
	if out, err := exec.Command("mount", "-o", "remount,size=1g", disk).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v %s", err, out)
	}
	// A crashed run leaves its mount: reach the root with --root.
	st := decodeStatus(t, e.taOut("status", "--json"))
	t.Logf("status: state %s, active %d, applied %d", st.State, st.ActiveTask, st.AppliedTask)
	e.readable("after status")
	if r := e.ta("verify"); r.Code != 0 {
		t.Errorf("verify after freeing space:\n%s", r)
	}
	if r := e.ta("undo", "--yes", "--session"); r.Code != 0 {
		t.Fatalf("undo after freeing space:\n%s", r)
	}
	sameManifest(t, "after undo", pre, e.manifest())
}
