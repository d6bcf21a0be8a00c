package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/timeagent-dev/timeagent/internal/testrepo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests run the built binary on real git repositories with real child
// processes. TestMain builds it once.

var (
	update = flag.Bool("update", false, "rewrite the golden files in testdata/")
	binary string // path of the built timeagent
)

// modes are the capture modes every scenario runs in ("fuse" joins when the
// FUSE overlay lands).
var modes = []string{"copy", "fuse"}

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "timeagent-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "timeagent")
	if bin := os.Getenv("TIMEAGENT_TEST_BINARY"); bin != "" {
		// Built beforehand (scripts/test-user.sh: the test user has no Go).
		binary = bin
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build timeagent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's world: a state dir (TIMEAGENT_HOME) and a root.
type env struct {
	t    *testing.T
	home string
	root string
	// scratch is a directory outside the root for files the test and its
	// children exchange.
	scratch string
	extra   []string // more environment variables
}

// newEnv makes an env with an empty git repository as its root.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, home: t.TempDir(), root: realDir(t, t.TempDir()), scratch: t.TempDir()}
	e.git("init", "-q", "-b", "main")
	return e
}

// newRealisticEnv makes an env whose root holds every kind of thing a
// repository holds (see buildRealisticRepo).
func newRealisticEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	buildRealisticRepo(e)
	return e
}

func realDir(t *testing.T, d string) string { return testrepo.RealDir(t, d) }

// baseEnv is the environment of every process the tests start.
func (e *env) baseEnv() []string {
	env := testrepo.Environ("TIMEAGENT_HOME="+e.home, "TA="+binary, "SCRATCH="+e.scratch,
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	return append(env, e.extra...)
}

// git runs git in the root (test set-up only).
func (e *env) git(args ...string) {
	e.t.Helper()
	testrepo.Git(e.t, e.root, e.baseEnv(), args...)
}

// result is what one timeagent invocation did (testrepo.Result).
type result = testrepo.Result

// cmd prepares timeagent ARGS in the root, stdin not a terminal.
func (e *env) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = e.root
	cmd.Env = e.baseEnv()
	return cmd
}

// ta runs timeagent ARGS in the root and returns what it did.
func (e *env) ta(args ...string) result {
	e.t.Helper()
	return runCmd(e.t, e.cmd(args...), args)
}

func runCmd(t *testing.T, cmd *exec.Cmd, args []string) result {
	t.Helper()
	return testrepo.Run(t, cmd, args, 0, false)
}

// ok runs timeagent ARGS and fails the test unless it exits 0.
func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.ta(args...)
	if r.Code != 0 {
		e.t.Fatalf("want exit 0:\n%s", r)
	}
	return r
}

// fails runs timeagent ARGS and fails the test unless it exits with code.
func (e *env) fails(code int, args ...string) result {
	e.t.Helper()
	r := e.ta(args...)
	if r.Code != code {
		e.t.Fatalf("want exit %d:\n%s", code, r)
	}
	return r
}

// run runs a session in the given mode: timeagent run --mode MODE -- ARGV.
func (e *env) run(mode string, argv ...string) result {
	e.t.Helper()
	return e.ok(append([]string{"run", "--mode", mode, "--"}, argv...)...)
}

// sh runs a session whose child is sh -c SCRIPT.
func (e *env) sh(mode, script string) result {
	e.t.Helper()
	return e.run(mode, "sh", "-c", script)
}

// jsonOf runs timeagent ARGS (which must include --json and succeed) and
// decodes its stdout, checking that stdout is only JSON of schema 1.
func (e *env) jsonOf(v any, args ...string) result {
	e.t.Helper()
	r := e.ok(args...)
	decodeJSON(e.t, r, v)
	return r
}

func decodeJSON(t *testing.T, r result, v any) {
	t.Helper()
	if !json.Valid([]byte(r.Stdout)) {
		t.Fatalf("stdout is not only JSON:\n%s", r)
	}
	var head struct {
		SchemaVersion *int `json:"schemaVersion"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &head); err != nil || head.SchemaVersion == nil || *head.SchemaVersion != 1 {
		t.Fatalf("want \"schemaVersion\": 1:\n%s", r)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
			t.Fatalf("decode: %v\n%s", err, r)
		}
	}
}

// Decoded JSON documents (the fields the tests look at).

type statusDoc struct {
	State   string `json:"state"`
	Mode    string `json:"mode"`
	Root    string `json:"root"`
	Session *struct {
		ID       uint64   `json:"id"`
		Argv     []string `json:"argv"`
		Pid      int      `json:"pid"`
		ExitCode *int     `json:"exitCode"`
		Tasks    []uint64 `json:"tasks"`
	} `json:"session"`
	ActiveTask  uint64 `json:"activeTask"`
	CurrentTask uint64 `json:"currentTask"`
	Error       string `json:"error"`
}

type logTask struct {
	ID          uint64 `json:"id"`
	Parent      uint64 `json:"parent"`
	Summary     string `json:"summary"`
	Kind        string `json:"kind"`
	Status      string `json:"status"`
	HasBranches bool   `json:"hasBranches"`
	Session     uint64 `json:"session"`
	Files       int    `json:"files"`
}

type logDoc struct {
	ActiveTask  uint64    `json:"activeTask"`
	CurrentTask uint64    `json:"currentTask"`
	Tasks       []logTask `json:"tasks"`
}

type diffDoc struct {
	From    uint64 `json:"from"`
	To      uint64 `json:"to"`
	Changes []struct {
		Path   string `json:"path"`
		Change string `json:"change"`
	} `json:"changes"`
}

func (e *env) status() statusDoc {
	e.t.Helper()
	var s statusDoc
	e.jsonOf(&s, "status", "--json")
	return s
}

func (e *env) log() logDoc {
	e.t.Helper()
	var l logDoc
	e.jsonOf(&l, "log", "--json")
	return l
}

func (l logDoc) task(t *testing.T, id uint64) logTask {
	t.Helper()
	for _, x := range l.Tasks {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("task %d not in log: %+v", id, l.Tasks)
	return logTask{}
}

// Files.

func (e *env) path(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string, perm os.FileMode) {
	e.t.Helper()
	writeFile(e.t, e.path(rel), []byte(content), perm)
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// buildRealisticRepo fills e.root with a committed history and, on top of
// it, everything a working tree holds:
//
//	main.go             tracked, modified and not committed
//	README.md           tracked
//	.gitignore          tracked (ignores .env and build/)
//	assets/logo.bin     tracked binary file (NUL bytes)
//	scripts/run.sh      tracked executable script (0755)
//	docs/a/b/c/deep.md  tracked, nested directories
//	link-to-main        tracked symlink to a file
//	link-to-docs        tracked symlink to a directory
//	NOTES.md            untracked
//	.env                ignored
//	build/out.o         ignored
//	big.bin             untracked, 5 MiB
//	secret.txt          untracked, 0600
//	dangling            untracked dangling symlink
//	empty/              empty directory
//	empty2/             empty directory (0700)
func buildRealisticRepo(e *env) {
	t := e.t
	t.Helper()
	e.write("main.go", "package main\n\nfunc main() { println(\"hello\") }\n", 0o644)
	e.write("README.md", "# project\n\nSome words.\n", 0o644)
	e.write(".gitignore", ".env\nbuild/\n", 0o644)
	writeFile(t, e.path("assets/logo.bin"), append([]byte("\x89PNG\r\n\x1a\n\x00\x00"), randomBytes(1, 64<<10)...), 0o644)
	e.write("scripts/run.sh", "#!/bin/sh\necho running\n", 0o755)
	e.write("docs/a/b/c/deep.md", "deep\n", 0o644)
	e.write("docs/index.md", "index\n", 0o644)
	symlink(t, "main.go", e.path("link-to-main"))
	symlink(t, "docs", e.path("link-to-docs"))
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "first commit")
	e.write("main.go", "package main\n\nfunc main() { println(\"hello, uncommitted work\") }\n", 0o644)
	e.write("NOTES.md", "my notes, never committed\n", 0o644)
	e.write(".env", "API_KEY=secret-local-value\n", 0o600)
	e.write("build/out.o", "\x7fELF\x00\x00object", 0o644)
	writeFile(t, e.path("big.bin"), randomBytes(2, 5<<20+123), 0o644)
	e.write("secret.txt", "top secret\n", 0o600)
	symlink(t, "nowhere/missing", e.path("dangling"))
	for _, d := range []string{"empty", "empty2"} {
		if err := os.Mkdir(e.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(e.path("empty2"), 0o700); err != nil {
		t.Fatal(err)
	}
}

func (e *env) manifest() string {
	e.t.Helper()
	return manifest(e.t, e.root)
}

// oneLine fails unless s is exactly one line starting with "timeagent: ".
func oneLine(t *testing.T, s string) {
	t.Helper()
	if !strings.HasPrefix(s, "timeagent: ") || strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("want one line \"timeagent: …\", got:\n%q", s)
	}
}

// The shared harness (internal/testrepo), under the names these tests use.
var (
	writeFile    = testrepo.WriteFile
	symlink      = testrepo.Symlink
	randomBytes  = testrepo.RandomBytes
	manifest     = testrepo.ManifestOf
	sameManifest = testrepo.SameManifest
	contains     = testrepo.Contains
	waitFor      = testrepo.WaitFor
	exists       = testrepo.Exists
)
