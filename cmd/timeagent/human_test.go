package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	humanTime  = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?`)
	stateRoots = regexp.MustCompile(`/roots/[^/\s]+`)
)

// normalizeText replaces the volatile parts of human output (times, the
// test's directories) with placeholders of the same width, so the columns
// stay as they were.
func (e *env) normalizeText(s string) string {
	s = strings.NewReplacer(e.root, "$ROOT", e.home, "$TIMEAGENT_HOME", e.scratch, "$SCRATCH", binary, "$TIMEAGENT").Replace(s)
	s = stateRoots.ReplaceAllString(s, "/roots/<root>")
	return humanTime.ReplaceAllStringFunc(s, func(t string) string {
		if len(t) == len("2006-01-02 15:04") {
			return "YYYY-MM-DD hh:mm"
		}
		return "YYYY-MM-DD hh:mm:ss"
	})
}

// goldenHuman compares the normalised human output of timeagent ARGS, which
// must succeed, with testdata/NAME.
func (e *env) goldenHuman(name string, args ...string) string {
	e.t.Helper()
	out := e.normalizeText(e.ok(args...).Stdout)
	goldenText(e.t, name, out)
	return out
}

// TestHumanGolden pins the human output of log (plain and coloured), of
// status in its states (no session yet, during a session, completed, after
// an undo), of diff, and of the usage errors.
func TestHumanGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "init")

	e.goldenHuman("status-absent.txt", "status")
	e.goldenHuman("log-empty.txt", "log")

	e.ok("run", "--mode", "copy", "-m", "first task", "--", "sh", "-c",
		`"$TA" status > "$SCRATCH/status-active.txt"; echo one > a.txt; echo new > b.txt`)
	b, err := os.ReadFile(filepath.Join(e.scratch, "status-active.txt"))
	if err != nil {
		t.Fatal(err)
	}
	goldenText(t, "status-active.txt", e.normalizeText(string(b)))
	e.ok("run", "--mode", "copy", "-m", "second task", "--", "sh", "-c", "echo two > a.txt")
	e.goldenHuman("status-completed.txt", "status")
	e.ok("tag", "good", "1")
	e.ok("undo")
	st := e.goldenHuman("status-undone.txt", "status")
	contains(t, "status after an undo", st, "next:         `timeagent redo` brings back task 2")

	// A run after the undo starts a branch at task 1.
	e.ok("run", "--mode", "copy", "-m", "a branch", "--", "sh", "-c", "rm b.txt; echo three > c.txt")
	e.goldenHuman("diff.txt", "diff")
	e.ok("undo")
	log := e.goldenHuman("log.txt", "log", "--color=never")
	contains(t, "log", log, "→⎇", "↯", "├─╯", "[good]", "1 path ", "2 paths")
	e.goldenHuman("log-color.txt", "log", "--color=always")
	if plain := e.ok("log").Stdout; strings.Contains(plain, "\x1b[") {
		t.Fatalf("log to a pipe is coloured:\n%q", plain)
	}
	if r := e.ok("log", "--color=always"); !strings.Contains(e.ta("log", "--color=auto").Stdout, "○") || !strings.Contains(r.Stdout, "\x1b[") {
		t.Fatalf("log --color=always is not coloured:\n%q", r.Stdout)
	}
	var noColor strings.Builder
	e.extra = []string{"NO_COLOR=1"}
	noColor.WriteString(e.ok("log").Stdout)
	e.extra = nil
	if strings.Contains(noColor.String(), "\x1b[") {
		t.Fatalf("log with NO_COLOR is coloured:\n%q", noColor.String())
	}

	// Usage errors: the cause, the usage line, a --help pointer; exit 2.
	var usage strings.Builder
	for _, args := range [][]string{
		{"diff", "--bogus"},
		{"switch"},
		{"undo", "1", "2"},
		{"log", "extra"},
		{"diff", "--color=sometimes"},
		{"diff", "--task", "no such"},
		{"run", "--mode", "fast", "--", "true"},
		{"actions", "--session", "x"},
		{"stauts"},
		{"checkpoint", "-m"},
		{"diff", "--patch", "--stat"},
		{"diff", "--from", "0"},
	} {
		r := e.fails(2, args...)
		if r.Stdout != "" {
			t.Fatalf("%q: stdout %q", args, r.Stdout)
		}
		if !strings.Contains(r.Stderr, "\nusage: timeagent") || !strings.Contains(r.Stderr, "--help` for the ") {
			t.Fatalf("%q: no usage line and --help pointer:\n%s", args, r.Stderr)
		}
		fmt.Fprintf(&usage, "$ timeagent %s\n%s\n", strings.Join(args, " "), r.Stderr)
	}
	goldenText(t, "usage-errors.txt", e.normalizeText(usage.String()))
	// Under --json the error is only JSON.
	r := e.fails(2, "log", "--json", "extra")
	decodeJSON(t, result{Stdout: r.Stderr}, nil)
}

// TestHumanStatusInterrupted: status after timeagent was killed during a
// session.
func TestHumanStatusInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	cmd := e.cmd("run", "--mode", "copy", "-m", "killed", "--", "sh", "-c",
		`echo x > a.txt; echo $$ > "$SCRATCH/started"; exec sleep 30`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "started")) })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	e.goldenHuman("status-interrupted.txt", "status")
}

// TestHelpExamples: every command a person runs has examples in --help.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := (&app{}).rootCommand()
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		r := e.ok(c.Name(), "--help")
		if !strings.Contains(r.Stdout, "\nExamples:\n  timeagent ") {
			t.Errorf("%s --help has no examples:\n%s", c.Name(), r.Stdout)
		}
	}
	goldenText(t, "help-log.txt", e.ok("log", "--help").Stdout)
}

// TestVersionAgrees: `timeagent version` and `--version` name the same
// version; --version prints it bare (TimeAgent 0.2's clients read it).
func TestVersionAgrees(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bare := e.ok("--version").Stdout
	if !regexp.MustCompile(`^\d+\.\d+\.\d+\S*\n$`).MatchString(bare) {
		t.Fatalf("--version: %q, want the bare version", bare)
	}
	long := e.ok("version").Stdout
	if !strings.HasPrefix(long, "timeagent "+strings.TrimSpace(bare)+" (") {
		t.Fatalf("version %q and --version %q disagree", long, bare)
	}
}

// TestLogPager: on a terminal a log longer than the screen goes through
// the pager in colour; one that fits is printed in colour directly.
func TestLogPager(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 4 {
		e.ok("run", "--mode", "copy", "-m", fmt.Sprintf("task %d", i+1), "--", "sh", "-c", fmt.Sprintf("echo %d > a.txt", i))
	}
	paged := filepath.Join(e.scratch, "paged")
	pagerEnv := []string{`PAGER=echo "LESS=$LESS" > "$SCRATCH/paged"; cat >> "$SCRATCH/paged"`}
	screen := e.ttyRun(3, pagerEnv, "log")
	b, err := os.ReadFile(paged)
	if err != nil {
		t.Fatalf("a long log on a terminal did not go through the pager: %v\nscreen:\n%q", err, screen)
	}
	contains(t, "paged log", string(b), "LESS=FRX\n", "\x1b[1;32m→\x1b[m", "task 4", "task 1")
	os.Remove(paged)
	screen = e.ttyRun(40, pagerEnv, "log")
	if exists(paged) {
		t.Fatal("a log that fits the screen went through the pager")
	}
	contains(t, "log on a terminal", screen, "\x1b[33m4\x1b[m", "task 4")
}

// BenchmarkPrintLog draws a history of 10,000 tasks with a branch every
// tenth task (what log does after reading the journal).
func BenchmarkPrintLog(b *testing.B) {
	doc := logJSON{ActiveTask: 5000, Tasks: make([]taskJSON, 0, 10000)}
	for id := uint64(1); id <= 10000; id++ {
		parent := id - 1
		if id%10 == 0 {
			parent = id - 5
		}
		status := "past"
		if id > 5000 {
			status = "future"
		}
		doc.Tasks = append(doc.Tasks, taskJSON{ID: id, Parent: parent, Summary: fmt.Sprintf("task %d", id),
			Kind: "agent", Status: status, Session: id, Created: "2026-01-01T00:00:00Z", Files: int(id % 7)})
	}
	p := newLogPalette(true)
	for b.Loop() {
		var out strings.Builder
		printLog(&out, doc, p)
	}
}
