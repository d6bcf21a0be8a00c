package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// ttyRun runs timeagent ARGS with a terminal of rows lines as stdin,
// stdout and stderr, with the environment variables env, and returns what
// the terminal showed.
func (e *env) ttyRun(rows uint16, env []string, args ...string) string {
	e.t.Helper()
	cmd := e.cmd(args...)
	for _, kv := range cmd.Env {
		if k, _, _ := strings.Cut(kv, "="); k != "PAGER" && k != "LESS" && k != "NO_COLOR" && k != "COLUMNS" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: 80})
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, f); close(done) }()
	if err := cmd.Wait(); err != nil {
		e.t.Fatalf("timeagent %q: %v\n%s", args, err, out.String())
	}
	f.Close()
	<-done
	return out.String()
}

// TestDiffPager: on a terminal, diff output longer than the screen goes
// through $PAGER (with LESS=FRX, as git sets it) in colour; shorter output,
// --json, NO_COLOR and a pipe behave as git does.
func TestDiffPager(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n", 0o644)
	e.sh("copy", "printf 'one\\n2\\n3\\n4\\n5\\n6\\n7\\neight\\n' > a.txt")
	paged := filepath.Join(e.scratch, "paged")
	pagerEnv := []string{`PAGER=echo "LESS=$LESS" > "$SCRATCH/paged"; cat >> "$SCRATCH/paged"`}
	screen := e.ttyRun(5, pagerEnv, "diff", "--patch")
	b, err := os.ReadFile(paged)
	if err != nil {
		t.Fatalf("a long diff on a terminal did not go through the pager: %v\nscreen:\n%q", err, screen)
	}
	contains(t, "paged diff", string(b), "LESS=FRX\n", "\x1b[1mdiff --git a/a.txt b/a.txt\x1b[m", "\x1b[31m-1\x1b[m")
	os.Remove(paged)

	// Output that fits the screen is printed as it is.
	screen = e.ttyRun(100, pagerEnv, "diff", "--patch")
	if _, err := os.Stat(paged); err == nil {
		t.Fatalf("a diff that fits the screen went through the pager")
	}
	contains(t, "short diff", screen, "\x1b[32m+eight\x1b[m")

	// --json is never paged nor coloured.
	screen = e.ttyRun(2, pagerEnv, "diff", "--json")
	if _, err := os.Stat(paged); err == nil || strings.Contains(screen, "\x1b[3") {
		t.Fatalf("diff --json was paged or coloured:\n%q", screen)
	}

	// NO_COLOR turns colour off on a terminal.
	screen = e.ttyRun(100, append(pagerEnv, "NO_COLOR=1"), "diff", "--patch")
	if strings.Contains(screen, "\x1b[3") {
		t.Fatalf("colour with NO_COLOR:\n%q", screen)
	}
}
