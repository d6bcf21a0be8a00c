package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)

// normalize replaces the volatile parts of a JSON document (times, pids,
// temporary paths, versions, the capture mode) with placeholders and
// re-encodes it with sorted keys.
func (e *env) normalize(doc string) string {
	e.t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		e.t.Fatalf("normalize: %v\n%s", err, doc)
	}
	repl := strings.NewReplacer(e.root, "$ROOT", e.home, "$TIMEAGENT_HOME", e.scratch, "$SCRATCH", binary, "$TIMEAGENT")
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				x[k] = walk(k, c)
			}
			return x
		case []any:
			for i, c := range x {
				x[i] = walk(key, c)
			}
			return x
		case json.Number:
			if key == "pid" && x.String() != "0" {
				return "<pid>"
			}
			if strings.HasPrefix(key, "disk") { // the journal's size on disk varies with badger's files
				return "<bytes>"
			}
			if strings.HasSuffix(strings.ToLower(key), "ms") || strings.HasSuffix(strings.ToLower(key), "duration") {
				return "<duration>"
			}
			return x
		case string:
			switch {
			case rfc3339.MatchString(x):
				return "<time>"
			case key == "mode" && (x == "copy" || x == "fuse"):
				return "<mode>"
			case key == "version" || key == "go" || key == "os" || key == "arch":
				return "<" + key + ">"
			case key == "hash" || key == "sha256" || key == "executable":
				return "<" + key + ">"
			}
			return repl.Replace(x)
		}
		return v
	}
	v = walk("", v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		e.t.Fatal(err)
	}
	return buf.String()
}

// golden compares a normalised JSON document with testdata/NAME.json
// (rewritten under -update).
func (e *env) golden(name, doc string) {
	e.t.Helper()
	decodeJSON(e.t, result{Stdout: doc}, nil)
	// TimeAgent 0.2's fields beside ours (ta02_test.go).
	switch {
	case strings.HasPrefix(name, "status-"):
		checkTAStatus(e.t, doc)
	case strings.HasPrefix(name, "diff-file-"):
		checkTADiffFile(e.t, doc)
	case strings.HasPrefix(name, "diff"):
		checkTADiff(e.t, doc)
	case name == "actions":
		checkTAActions(e.t, doc)
	}
	got := e.normalize(doc)
	p := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		e.t.Fatalf("%s differs from the golden file (go test -update rewrites it):\n--- want\n%s\n--- got\n%s", p, want, got)
	}
}

// goldenOK runs timeagent ARGS, which must succeed with only JSON on stdout,
// and compares it with the golden file.
func (e *env) goldenOK(name string, args ...string) result {
	e.t.Helper()
	r := e.ok(args...)
	e.golden(name, r.Stdout)
	return r
}

// TestJSONGolden pins the JSON documents of every command.
func TestJSONGolden(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("keep.txt", "keep\n", 0o644)
			e.write("mod.txt", "line1\nline2\n", 0o644)
			e.write("del.txt", "deleted\n", 0o644)
			e.write("exec.sh", "#!/bin/sh\necho hi\n", 0o755)
			e.write("tc", "was a file\n", 0o644)
			e.write("bin.dat", "\x00\x01binary\x00", 0o644)
			symlink(t, "keep.txt", e.path("link"))
			e.git("add", "-A")
			e.git("commit", "-q", "-m", "init")

			e.goldenOK("status-absent", "status", "--json")
			e.goldenOK("log-empty", "log", "--json")
			e.goldenOK("version", "version", "--json")

			e.sh(mode, `set -e
"$TA" status --json > "$SCRATCH/status-active.json"
printf 'line1\nchanged\n' > mod.txt
rm del.txt
chmod 0644 exec.sh
ln -sfn mod.txt link
rm tc && mkdir tc && echo inside > tc/f
printf 'new\n' > new.txt
printf '\000\002\003other' > bin.dat
i=0; while [ $i -lt 20 ]; do cat mod.txt mod.txt mod.txt mod.txt; i=$((i+1)); done > /dev/null
head -c 1200000 /dev/zero | tr '\000' 'a' > large.txt
go version > /dev/null
"$TA" checkpoint --json -m "second task" > "$SCRATCH/checkpoint.json"
echo second > second.txt`)
			for _, name := range []string{"status-active", "checkpoint"} {
				b, err := os.ReadFile(filepath.Join(e.scratch, name+".json"))
				if err != nil {
					t.Fatal(err)
				}
				golden := name
				if name == "status-active" && mode == "fuse" {
					// The real files stay at the base (appliedTask 0)
					// until a fuse session ends.
					golden += "-fuse"
				}
				e.golden(golden, string(b))
			}
			e.goldenOK("status-completed", "status", "--json")
			e.ok("tag", "start", "1")
			e.goldenOK("log", "log", "--json")
			e.goldenOK("tags", "tag", "--json")
			e.goldenOK("diff", "diff", "--json")
			e.goldenOK("diff-task2", "diff", "--json", "--task", "2")
			e.goldenOK("diff-from-to", "diff", "--json", "--from", "0", "--to", "1")
			e.goldenOK("diff-file-modified", "diff-file", "--json", "mod.txt")
			e.goldenOK("diff-file-binary", "diff-file", "--json", "bin.dat")
			e.goldenOK("diff-file-created", "diff-file", "--json", "new.txt")
			e.goldenOK("diff-file-deleted", "diff-file", "--json", "del.txt")
			e.goldenOK("diff-file-large", "diff-file", "--json", "large.txt")
			e.goldenOK("diff-file-symlink", "diff-file", "--json", "link")
			e.goldenOK("diff-file-typechanged", "diff-file", "--json", "tc")
			e.goldenOK("actions", "actions", "--json")
			e.goldenOK("undo", "undo", "--json", "2")
			e.goldenOK("redo", "redo", "--json")
			e.goldenOK("switch", "switch", "--json", "0")
			r := e.fails(1, "undo", "--json")
			if r.Stdout != "" {
				t.Fatalf("stdout of a failed --json command: %q", r.Stdout)
			}
			e.golden("error-undo-at-base", r.Stderr)
		})
	}
}

// TestStatusInterrupted: timeagent killed during a session leaves an
// interrupted session; undo asks for --yes and then restores the tree.
func TestStatusInterrupted(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			pre := e.manifest()
			cmd := e.cmd("run", "--mode", mode, "--", "sh", "-c",
				`rm -rf docs NOTES.md; echo x > f; echo $$ > "$SCRATCH/started"; exec sleep 30`)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the child to start", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "started")) })
			if mode == "fuse" {
				// The overlay journals changes in batches within 50 ms
				// (README: crash recovery); kill after that window.
				time.Sleep(300 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			// The child gets SIGTERM from the kernel (Pdeathsig).
			pid, _ := os.ReadFile(filepath.Join(e.scratch, "started"))
			proc := "/proc/" + strings.TrimSpace(string(pid))
			waitFor(t, "the child to die with timeagent", 10*time.Second, func() bool {
				b, err := os.ReadFile(proc + "/stat")
				// Gone, or a zombie (state Z) waiting for its new parent.
				return err != nil || strings.Contains(string(b), ") Z ")
			})
			if mode == "fuse" {
				// The dead session's overlay is still mounted on the root and
				// answers ENOTCONN (statfs always reaches the server; a
				// listing may come from the kernel's cache). The first
				// command, started elsewhere, detaches it.
				if err := statfs(e.root); err == nil {
					t.Fatal("the root of a killed fuse session is readable before recovery: no stale mount to test")
				}
				c := e.cmd("-C", e.root, "status", "--json")
				c.Dir = e.scratch
				r := runCmd(t, c, c.Args[1:])
				contains(t, "first command after the crash", r.Stderr, "detached the stale overlay")
				if _, err := os.ReadDir(e.root); err != nil {
					t.Fatalf("the root is not readable after recovery: %v", err)
				}
			}
			r := e.goldenOK("status-interrupted", "status", "--json")
			var st statusDoc
			decodeJSON(t, r, &st)
			if st.State != "interrupted" {
				t.Fatalf("state %q", st.State)
			}
			var d diffDoc
			r = e.jsonOf(&d, "diff", "--json")
			checkTADiff(t, r.Stdout)
			if m := parseTA(t, "diff", r.Stdout); m["sessionState"] != "interrupted" {
				t.Fatalf("TimeAgent's sessionState of an interrupted session: %v", m["sessionState"])
			}
			paths := []string{}
			for _, c := range d.Changes {
				paths = append(paths, c.Path)
			}
			if got := strings.Join(paths, " "); !strings.Contains(got, "NOTES.md") || !strings.Contains(got, "f") || !strings.Contains(got, "docs") {
				t.Fatalf("diff of the interrupted session: %v", paths)
			}
			r = e.fails(1, "undo")
			contains(t, "undo of an interrupted session", r.Stderr, "interrupted", "--yes")
			oneLine(t, r.Stderr)
			// Drift over the interrupted session's work is kept too.
			e.write("f", "edited after the crash\n", 0o644)
			edited := e.manifest()
			e.ok("undo", "--yes")
			sameManifest(t, "undo of the interrupted session", pre, e.manifest())
			var outside uint64
			for _, x := range e.log().Tasks {
				if x.Kind == "outside" {
					outside = x.ID
				}
			}
			if outside == 0 {
				t.Fatal("the drifted f was not kept as an outside task")
			}
			e.ok("switch", "--yes", fmt.Sprint(outside))
			sameManifest(t, "switch to the outside task", edited, e.manifest())
		})
	}
}

// TestStatusInvalid: a journal overwritten with garbage is reported as
// invalid, without a panic and without touching the repository.
func TestStatusInvalid(t *testing.T) {
	t.Parallel()
	e := newRealisticEnv(t)
	e.sh("copy", "echo x > f")
	pre := e.manifest()
	n := 0
	filepath.WalkDir(e.home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(p, string(filepath.Separator)+"journal"+string(filepath.Separator)) {
			os.WriteFile(p, bytes.Repeat([]byte("garbage!"), 512), 0o600)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatal("found no journal files to corrupt")
	}
	r := e.ta("status", "--json")
	if r.Code == 0 {
		t.Fatalf("status of a corrupt journal succeeded:\n%s", r)
	}
	var st statusDoc
	decodeJSON(t, r, &st)
	if st.State != "invalid" || st.Error == "" {
		t.Fatalf("status: %+v", st)
	}
	if s := checkTAStatus(t, r.Stdout); s["state"] != "invalid" || s["invalidReason"] != st.Error || s["available"] != false {
		t.Fatalf("TimeAgent's session of an invalid journal: %v", s)
	}
	for _, args := range [][]string{{"status"}, {"log"}, {"undo"}, {"diff"}, {"run", "true"}} {
		r := e.ta(args...)
		if r.Code == 0 {
			t.Fatalf("%v on a corrupt journal succeeded:\n%s", args, r)
		}
		oneLine(t, r.Stderr)
	}
	sameManifest(t, "after commands on a corrupt journal", pre, e.manifest())
}
