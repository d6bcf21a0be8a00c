package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffFileValidation: every bad path gets its own message and exit 1.
func TestDiffFileValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "x"), []byte("outside\n"), 0o644)
	e.write("keep.txt", "keep\n", 0o644)
	symlink(t, outside, e.path("out"))
	e.sh("copy", "echo changed > keep.txt; echo x > new.txt")
	for _, c := range []struct {
		path, want string
	}{
		{e.path("keep.txt"), "is an absolute path"},
		{"/etc/passwd", "is an absolute path"},
		{"../x", "leaves the repository root (..)"},
		{"a/../../x", "leaves the repository root (..)"},
		{"a/../keep.txt", "leaves the repository root (..)"},
		{"out/x", "goes through a symlink that points outside the repository root"},
		{"nothere.txt", "was not changed in this diff"},
		{"out", "was not changed in this diff"},
		{"", "is empty"},
	} {
		r := e.fails(1, "diff-file", "--json", c.path)
		if r.Stdout != "" {
			t.Fatalf("diff-file %q: stdout %q", c.path, r.Stdout)
		}
		var doc struct {
			Error string `json:"error"`
		}
		decodeJSON(t, result{Stdout: r.Stderr}, &doc)
		contains(t, "diff-file "+c.path, doc.Error, c.want)
	}
	// Without --json the message is one line.
	r := e.fails(1, "diff-file", "../x")
	oneLine(t, r.Stderr)
	contains(t, "diff-file ../x", r.Stderr, "leaves the repository root")

	// Success: text, created.
	var d struct {
		Path   string `json:"path"`
		Change string `json:"change"`
		Before struct {
			Text *string `json:"text"`
		} `json:"before"`
		After struct {
			Text *string `json:"text"`
		} `json:"after"`
	}
	e.jsonOf(&d, "diff-file", "--json", "keep.txt")
	if d.Change != "modified" || d.Before.Text == nil || *d.Before.Text != "keep\n" || d.After.Text == nil || *d.After.Text != "changed\n" {
		t.Fatalf("diff-file keep.txt: %+v", d)
	}
	// A clean path that is not literally the one in the diff works too.
	e.jsonOf(&d, "diff-file", "--json", "./new.txt")
	if d.Path != "new.txt" || d.Change != "created" || d.After.Text == nil || *d.After.Text != "x\n" {
		t.Fatalf("diff-file ./new.txt: %+v", d)
	}
}

// TestDiffFileStateDirInsideRoot: with the state dir inside the root, paths
// into it are refused and it is not part of the tree.
func TestDiffFileStateDirInsideRoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.home = e.path("state")
	e.write("keep.txt", "keep\n", 0o644)
	pre := e.manifest()
	e.sh("copy", "echo changed > keep.txt")
	var d diffDoc
	e.jsonOf(&d, "diff", "--json")
	for _, c := range d.Changes {
		if strings.HasPrefix(c.Path, "state") {
			t.Fatalf("the state dir is part of the diff: %+v", d.Changes)
		}
	}
	r := e.fails(1, "diff-file", "--json", "state/roots")
	contains(t, "diff-file into the state dir", r.Stderr, "inside timeagent's state directory")
	e.ok("undo")
	if e.read("keep.txt") != "keep\n" {
		t.Fatal("undo with the state dir inside the root")
	}
	// The state dir must still be there (undo does not delete it).
	if !exists(e.path("state")) {
		t.Fatal("undo removed the state dir")
	}
	_ = pre
}

// TestNotARepository: one line naming the fix; --root works end to end.
func TestNotARepository(t *testing.T) {
	t.Parallel()
	e := &env{t: t, home: t.TempDir(), root: realDir(t, t.TempDir()), scratch: t.TempDir()}
	r := e.fails(1, "status")
	oneLine(t, r.Stderr)
	contains(t, "not a repository", r.Stderr, "not inside a git repository", "--root DIR")
	r = e.fails(1, "run", "true")
	oneLine(t, r.Stderr)

	e.write("a.txt", "a\n", 0o644)
	symlink(t, "a.txt", e.path("l"))
	pre := e.manifest()
	e.ok("--root", ".", "run", "--mode", "copy", "--", "sh", "-c", "rm a.txt l; echo b > b.txt")
	post := e.manifest()
	e.ok("--root", e.root, "undo")
	sameManifest(t, "undo with --root", pre, e.manifest())
	e.ok("--root", ".", "redo")
	sameManifest(t, "redo with --root", post, e.manifest())
	var st statusDoc
	e.jsonOf(&st, "--root", ".", "status", "--json")
	if st.Root != e.root || st.State != "completed" {
		t.Fatalf("status --root: %+v", st)
	}
	// --root on something that is not a directory.
	r = e.fails(1, "--root", "a.txt", "status")
	oneLine(t, r.Stderr)
}

// TestBadArguments: unknown ids exit 1, malformed numbers are usage errors.
func TestBadArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sh("copy", "echo x > f")
	pre := e.manifest()
	for _, c := range []struct {
		code int
		args []string
		want string
	}{
		{1, []string{"switch", "99"}, "unknown task 99"},
		{1, []string{"checkpoint"}, "no session is running"},
		{1, []string{"diff-file", "--task", "7", "f"}, "unknown task"},
		{1, []string{"diff", "--task", "99"}, "unknown task"},
		{1, []string{"diff", "--from", "0", "--to", "42"}, "unknown task"},
		{2, []string{"switch", "abc"}, "invalid task id"},
		{2, []string{"switch", "-1"}, ""},
		{2, []string{"switch", "1.5"}, "invalid task id"},
		{2, []string{"undo", "0"}, "invalid count"},
		{2, []string{"undo", "-3"}, ""},
		{2, []string{"undo", "x"}, "invalid count"},
		{2, []string{"redo", "99999999999999999999999"}, "invalid count"},
		{2, []string{"switch", "18446744073709551616"}, "invalid task id"},
		{2, []string{"diff", "--task", "x"}, "invalid task id"},
		{2, []string{"undo", "1", "2"}, ""},
		{2, []string{"switch"}, ""},
		{2, []string{"run"}, "no command given"},
		{2, []string{"run", "--mode", "bogus", "true"}, "invalid --mode"},
		{2, []string{"nosuchcommand"}, "unknown command"},
		{2, []string{"status", "--bogus"}, "unknown flag"},
		{2, []string{"-C", "/nonexistent/dir", "status"}, "-C"},
	} {
		r := e.fails(c.code, c.args...)
		oneLineOrUsage(t, r, c.code)
		contains(t, strings.Join(c.args, " "), r.Stderr, c.want)
	}
	sameManifest(t, "after bad arguments", pre, e.manifest())
	if st := e.status(); st.ActiveTask != 1 {
		t.Fatalf("active task %d", st.ActiveTask)
	}
}

// oneLineOrUsage accepts one "timeagent: " line and nothing on stdout;
// after a usage error (exit 2) the usage line and the --help pointer follow
// it.
func oneLineOrUsage(t *testing.T, r result, code int) {
	t.Helper()
	if r.Stdout != "" {
		t.Fatalf("stdout of a failing command:\n%s", r)
	}
	if code != 2 {
		oneLine(t, r.Stderr)
		return
	}
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "timeagent: ") || !strings.HasPrefix(lines[1], "usage: timeagent") ||
		!strings.HasPrefix(lines[2], "run `timeagent") || !strings.HasSuffix(r.Stderr, "\n") {
		t.Fatalf("want the error, the usage line and the --help pointer, got:\n%q", r.Stderr)
	}
}

// TestForeignStateDir: a state dir that belongs to another root is refused
// with a clear message.
func TestForeignStateDir(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	a.write("a.txt", "a\n", 0o644)
	a.sh("copy", "echo changed > a.txt")
	b := newEnv(t)
	b.home = a.home
	b.write("b.txt", "b\n", 0o644)
	b.ok("status") // creates b's state dir
	// Put root A's journal where root B's lives.
	roots := filepath.Join(a.home, "roots")
	entries, err := os.ReadDir(roots)
	if err != nil || len(entries) != 2 {
		t.Fatalf("state dirs: %v %v", entries, err)
	}
	var aDir, bDir string
	for _, en := range entries {
		root, _ := os.ReadFile(filepath.Join(roots, en.Name(), "root"))
		switch string(root) {
		case a.root:
			aDir = filepath.Join(roots, en.Name())
		case b.root:
			bDir = filepath.Join(roots, en.Name())
		}
	}
	if aDir == "" || bDir == "" {
		t.Fatalf("state dirs not found")
	}
	pre := b.manifest()
	// Only the journal: the "root" file still names B.
	if err := os.RemoveAll(filepath.Join(bDir, "journal")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(aDir, "journal"), filepath.Join(bDir, "journal")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for _, args := range [][]string{{"status"}, {"log"}, {"undo"}, {"run", "true"}} {
		r := b.fails(1, args...)
		oneLine(t, r.Stderr)
		contains(t, strings.Join(args, " "), r.Stderr, "another root", "TIMEAGENT_HOME")
	}
	r := b.ta("status", "--json")
	var st statusDoc
	decodeJSON(t, r, &st)
	if r.Code == 0 || st.State != "invalid" {
		t.Fatalf("status --json on a foreign journal: %s", r)
	}
	// The whole state dir of A copied over B's ("root" names A).
	if err := os.RemoveAll(bDir); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", aDir, bDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	r = b.fails(1, "status")
	oneLine(t, r.Stderr)
	contains(t, "foreign state dir", r.Stderr, "belongs to", "TIMEAGENT_HOME")
	sameManifest(t, "root B after the foreign journal", pre, b.manifest())
	// A is untouched.
	if a.read("a.txt") != "changed\n" || len(a.log().Tasks) != 1 {
		t.Fatal("root A changed")
	}
}

// TestUnwritableStateDir: TIMEAGENT_HOME below a regular file.
func TestUnwritableStateDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	file := filepath.Join(e.scratch, "plainfile")
	writeFile(t, file, []byte("x"), 0o644)
	e.home = filepath.Join(file, "state")
	pre := e.manifest()
	for _, args := range [][]string{{"status"}, {"run", "sh", "-c", "echo x > a.txt"}, {"undo"}} {
		r := e.fails(1, args...)
		oneLine(t, r.Stderr)
		contains(t, strings.Join(args, " "), r.Stderr, "state dir", "TIMEAGENT_HOME")
	}
	r := e.ta("status", "--json")
	if r.Code != 1 || r.Stdout != "" || !json.Valid([]byte(r.Stderr)) {
		t.Fatalf("status --json with an unwritable state dir:\n%s", r)
	}
	sameManifest(t, "after an unwritable state dir", pre, e.manifest())
}

// TestUndoRefusesRemovingCwd: undo would remove the caller's directory: it
// refuses before changing anything and names the cd that fixes it.
func TestUndoRefusesRemovingCwd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("keep", "keep\n", 0o644)
	e.sh("copy", "mkdir -p made/sub && echo x > made/sub/f")
	post := e.manifest()
	cmd := e.cmd("undo")
	cmd.Dir = e.path("made/sub")
	r := runCmd(t, cmd, []string{"undo"})
	if r.Code != 1 {
		t.Fatalf("undo from a directory it removes:\n%s", r)
	}
	oneLine(t, r.Stderr)
	contains(t, "undo from made/sub", r.Stderr, "cd ")
	sameManifest(t, "after the refused undo", post, e.manifest())
	e.ok("undo")
	if exists(e.path("made")) {
		t.Fatal("undo from the root did not remove made/")
	}
}

// TestHumanOutput: the non-JSON forms of diff and version.
func TestHumanOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("mod.txt", "line1\nline2\n", 0o644)
	e.write("gone.txt", "gone\n", 0o644)
	e.sh("copy", "printf 'line1\\nchanged\\n' > mod.txt; rm gone.txt; echo new > new.txt")
	out := e.ok("diff").Stdout
	contains(t, "diff", out, "mod.txt", "gone.txt", "new.txt")
	out = e.ok("diff", "--patch").Stdout
	contains(t, "diff --patch", out, "-line2", "+changed", "+new", "-gone")
	out = e.ok("diff", "--stat").Stdout
	contains(t, "diff --stat", out, "mod.txt", "new.txt")
	out = e.ok("version").Stdout
	if !strings.HasPrefix(out, "timeagent ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("version: %q", out)
	}
	// --version is bare (TimeAgent 0.2's clients): TestTimeAgent02.
	out = e.ok("status").Stdout
	contains(t, "status", out, "completed", "copy mode", "active task:  1")
}
