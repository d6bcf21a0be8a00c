package testrepo

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This file is the harness the CLI tests (cmd/timeagent) and the crash
// suite (internal/crashtest) share: running the built binary, what one run
// did, files, manifests and waiting.

// Result is what one timeagent invocation did.
type Result struct {
	Args   []string
	Stdout string
	Stderr string
	Code   int
}

func (r Result) String() string {
	return fmt.Sprintf("timeagent %q: exit %d\nstdout:\n%s\nstderr:\n%s", r.Args, r.Code, r.Stdout, r.Stderr)
}

// HangTimeout is how long one command may take before Run calls it hung.
const HangTimeout = 2 * time.Minute

// Run runs cmd (timeagent ARGS) to its end and returns what it did. A
// command that runs longer than timeout (HangTimeout when 0) fails the test
// with its goroutines (SIGQUIT); one that died of a signal fails it too,
// and so does a Go crash in its output unless crashOK.
func Run(t testing.TB, cmd *exec.Cmd, args []string, timeout time.Duration, crashOK bool) Result {
	t.Helper()
	if timeout == 0 {
		timeout = HangTimeout
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("timeagent %q: %v", args, err)
	}
	hung := time.AfterFunc(timeout, func() { _ = cmd.Process.Signal(syscall.SIGQUIT) })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Fatalf("timeagent %q hung for %v: killed with SIGQUIT:\n%s\n%s", args, timeout, out.String(), errb.String())
	}
	r := Result{Args: args, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !crashOK {
			t.Fatalf("timeagent %q died of signal %v\n%s", args, ws.Signal(), r)
		}
	default:
		t.Fatalf("timeagent %q: %v", args, err)
	}
	if !crashOK {
		NoCrash(t, r)
	}
	return r
}

// NoCrash fails the test when the output shows a Go panic or fatal error.
func NoCrash(t testing.TB, r Result) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "fatal error:", "SIGSEGV", "SIGBUS"} {
		if strings.Contains(r.Stderr, s) || strings.Contains(r.Stdout, s) {
			t.Fatalf("a Go crash (%q) in the output:\n%s", s, r)
		}
	}
}

// WriteFile writes b to p with mode perm (exactly, whatever the umask),
// making its directories.
func WriteFile(t testing.TB, p string, b []byte, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// Symlink makes p a symlink to target.
func Symlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// Exists reports whether p exists (a dangling symlink does).
func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// RandomBytes is n deterministic pseudo-random bytes.
func RandomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// WaitFor polls cond until it is true or the timeout passes.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Contains fails the test unless s contains every one of subs.
func Contains(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s: want %q in:\n%s", what, sub, s)
		}
	}
}

// ManifestOf describes the whole tree under root (Manifest), failing the
// test when it cannot be read.
func ManifestOf(t testing.TB, root string) string {
	t.Helper()
	m, err := Manifest(root)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// SameManifest fails the test when got differs from want, listing the
// lines that differ.
func SameManifest(t testing.TB, what, want, got string) {
	t.Helper()
	if d := Diff(want, got, 60); d != "" {
		t.Fatalf("%s: manifest differs (- want, + got):\n%s", what, d)
	}
}
