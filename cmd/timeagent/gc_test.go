package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// goldenText compares human output with testdata/NAME.txt (rewritten under
// -update), after the volatile parts are replaced.
func (e *env) goldenText(name, out string) {
	e.t.Helper()
	out = strings.NewReplacer(e.root, "$ROOT", e.home, "$TIMEAGENT_HOME").Replace(out)
	out = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).ReplaceAllString(out, "<time>")
	out = regexp.MustCompile(`(on disk +)[0-9.]+ [KMG]?i?B( -> )?([0-9.]+ [KMG]?i?B)?`).ReplaceAllString(out, "${1}<size>")
	p := filepath.Join("testdata", name+".txt")
	if *update {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != out {
		e.t.Fatalf("%s differs from the golden file (go test -update rewrites it):\n--- want\n%s\n--- got\n%s", p, want, out)
	}
}

// gcHistory makes three copy-mode sessions: each rewrites big.txt (60 KB,
// its own content) and appends to a.txt; task 1 is tagged.
func gcHistory(e *env) {
	e.t.Helper()
	e.write("a.txt", "a0\n", 0o644)
	for _, n := range []string{"1", "2", "3"} {
		e.sh("copy", "echo a"+n+" >> a.txt; i=0; while [ $i -lt 6000 ]; do echo line"+n+"-$i; i=$((i+1)); done > big.txt")
	}
	e.ok("tag", "first", "1")
}

// TestDuGolden pins du's JSON and human output.
func TestDuGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gcHistory(e)
	journalDir := regexp.MustCompile(`roots/[^/"\n]+/journal`)
	r := e.ok("du", "--json")
	e.golden("du", journalDir.ReplaceAllString(r.Stdout, "roots/<root>/journal"))
	e.goldenText("du", journalDir.ReplaceAllString(e.ok("du").Stdout, "roots/<root>/journal"))
}

// TestGC drops the untagged old task (dry run first: nothing changes),
// keeps the tagged and the active task byte for byte, frees the content
// only the dropped task had, and leaves a journal verify passes.
func TestGC(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gcHistory(e)
	e.ok("switch", "first")
	m1 := e.manifest()
	e.ok("switch", "3")
	m3 := e.manifest()

	e.goldenOK("gc-dry-run", "gc", "--keep", "0s", "--dry-run", "--json")
	if n := len(e.log().Tasks); n != 3 {
		t.Fatalf("a dry run changed the history: %d tasks", n)
	}
	e.goldenOK("gc", "gc", "--keep", "0s", "--json")
	e.goldenText("gc-again", e.ok("gc", "--keep", "0s").Stdout)

	l := e.log()
	if len(l.Tasks) != 2 || l.Tasks[0].ID != 1 || l.Tasks[1].ID != 3 {
		t.Fatalf("after gc the log holds %+v, want tasks 1 and 3", l.Tasks)
	}
	e.fails(1, "switch", "2")
	e.ok("switch", "first")
	sameManifest(t, "the tagged task after gc", m1, e.manifest())
	e.ok("switch", "3")
	sameManifest(t, "the active task after gc", m3, e.manifest())
	contains(t, "verify after gc", e.ok("verify").Stdout, "verified")
	// The last session started from the dropped task 2: its diff now
	// starts from task 1, its nearest kept ancestor.
	var d diffDoc
	e.jsonOf(&d, "diff", "--json")
	if d.From != 1 || d.To != 3 || len(d.Changes) != 2 {
		t.Fatalf("diff of the last session after gc: %+v", d)
	}
	contains(t, "du after gc", e.ok("du").Stdout, "2 task(s) in 3 session(s)")

	// The default keeps the last 30 days: nothing goes.
	contains(t, "gc with the default policy", e.ok("gc").Stdout, "every task is kept (2)")
	r := e.fails(2, "gc", "--keep", "soon")
	contains(t, "gc --keep soon", r.Stderr, "invalid duration")
	r = e.fails(2, "gc", "--max-size", "big")
	contains(t, "gc --max-size big", r.Stderr, "invalid size")
}

// TestGCRefusedInSession: gc refuses, naming the session, while a session
// runs on the root, and changes nothing.
func TestGCRefusedInSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gcHistory(e)
	marker := filepath.Join(e.scratch, "started")
	bg := e.cmd("run", "--mode", "copy", "--", "sh", "-c", `touch "$SCRATCH/started"; sleep 2`)
	var out bytes.Buffer
	bg.Stdout, bg.Stderr = &out, &out
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bg.Process.Kill(); _ = bg.Wait() })
	waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(marker) })
	r := e.fails(1, "gc", "--keep", "0s")
	contains(t, "gc during a session", r.Stderr, "a session is running", "gc")
	oneLine(t, r.Stderr)
	if err := bg.Wait(); err != nil {
		t.Fatalf("session: %v\n%s", err, out.String())
	}
	if n := len(e.log().Tasks); n != 4 {
		t.Fatalf("after a refused gc and a session: %d tasks, want 4", n)
	}
}

// TestGCBudget: a size budget set with config makes run collect the
// history after the session when the journal's content passes it.
func TestGCBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gcHistory(e)
	contains(t, "config", e.ok("config").Stdout, "gc.max-size  none", "gc.keep      30d")
	e.ok("config", "gc.keep", "0s")
	e.ok("config", "gc.max-size", "1K")
	contains(t, "config gc.max-size", e.ok("config", "gc.max-size").Stdout, "1.0 KiB")
	var c struct {
		MaxSize int64  `json:"maxSize"`
		Keep    string `json:"keep"`
	}
	e.jsonOf(&c, "config", "--json")
	if c.MaxSize != 1024 || c.Keep != "0s" {
		t.Fatalf("config --json: %+v", c)
	}
	r := e.fails(2, "config", "gc.colour", "blue")
	contains(t, "config of an unknown key", r.Stderr, "unknown setting", "gc.max-size")
	e.fails(2, "config", "gc.max-size", "lots")

	r = e.sh("copy", "echo a4 >> a.txt")
	contains(t, "run past the budget", r.Stderr, "passed its size budget", "gc dropped 2 task(s)")
	l := e.log()
	if len(l.Tasks) != 2 || l.Tasks[0].ID != 1 || l.Tasks[1].ID != 4 {
		t.Fatalf("after the automatic gc the log holds %+v, want tasks 1 and 4", l.Tasks)
	}
	contains(t, "verify after the automatic gc", e.ok("verify").Stdout, "verified")
}
