//go:build linux

package crashtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/timeagent-dev/timeagent/internal/testrepo"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// binary is the timeagent built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	if name := os.Getenv(agentEnv); name != "" {
		// The test binary started as a session's agent.
		if err := agents[name](); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "timeagent-crashtest-")
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
	build := exec.Command("go", "build", "-o", binary, "github.com/timeagent-dev/timeagent/cmd/timeagent")
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

// agentEnv names the agent the test binary runs as when it is started as
// a session's child (agentArgv): shell loops are far too slow on a loaded
// machine.
const agentEnv = "CRASHTEST_AGENT"

// agents are the Go agents, by name; each works in its current directory.
var agents = map[string]func() error{"many": manyAgent, "fill": fillAgent}

// agentArgv is the argv of `timeagent run` that runs the named Go agent.
func agentArgv(name string) []string {
	return []string{"env", agentEnv + "=" + name, os.Args[0]}
}

// env is one test's world: a state dir (TIMEAGENT_HOME), a git repository
// (the root) and a scratch directory outside both for markers.
type env struct {
	t       *testing.T
	home    string
	root    string
	scratch string
	// crashOK lets a command crash without failing the test at once (the
	// test checks and reports it itself).
	crashOK bool
}

// newEnv makes a git repository holding committed, modified, untracked and
// ignored files, a symlink, an executable and an empty directory.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvAt(t, t.TempDir(), t.TempDir())
}

// newEnvAt is newEnv with the root and the state dir in the given (empty)
// directories.
func newEnvAt(t *testing.T, root, home string) *env {
	t.Helper()
	e := &env{t: t, home: home, root: realDir(t, root), scratch: t.TempDir()}
	e.git("init", "-q", "-b", "main")
	e.write("a", "old a\n", 0o644)
	e.write("c", "c, deleted by the agent\n", 0o644)
	e.write("src/main.go", "package main\n\nfunc main() {}\n", 0o644)
	e.write("run.sh", "#!/bin/sh\necho run\n", 0o755)
	e.write(".gitignore", "*.log\n", 0o644)
	if err := os.Symlink("src/main.go", e.path("link")); err != nil {
		t.Fatal(err)
	}
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "initial")
	e.write("src/main.go", "package main\n\nfunc main() { println(\"uncommitted\") }\n", 0o644)
	e.write("untracked.txt", "untracked\n", 0o600)
	e.write("build.log", "ignored\n", 0o644)
	if err := os.Mkdir(e.path("empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	// A dead session's mount must never outlive the test (t.TempDir could
	// not be removed).
	t.Cleanup(func() {
		if mountedAt(t, e.root) {
			_ = unix.Unmount(e.root, unix.MNT_DETACH)
		}
	})
	return e
}

func realDir(t *testing.T, d string) string { return testrepo.RealDir(t, d) }

func (e *env) environ() []string {
	return testrepo.Environ("TIMEAGENT_HOME="+e.home, "TA="+binary, "SCRATCH="+e.scratch)
}

func (e *env) git(args ...string) {
	e.t.Helper()
	testrepo.Git(e.t, e.root, e.environ(), args...)
}

func (e *env) path(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string, perm os.FileMode) {
	e.t.Helper()
	writeFile(e.t, e.path(rel), []byte(content), perm)
}

// result is what one timeagent invocation did (testrepo.Result).
type result = testrepo.Result

// cmd is a timeagent command run in dir (the root when empty), stdin not a
// terminal.
func (e *env) cmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = e.root
	}
	cmd.Env = e.environ()
	return cmd
}

// ta runs timeagent in the root and waits for it.
func (e *env) ta(args ...string) result { return e.taIn("", args...) }

// taOut runs timeagent from the scratch directory with --root: the way to
// reach a root whose path a dead mount may make unreachable by chdir.
func (e *env) taOut(args ...string) result {
	return e.taIn(e.scratch, append([]string{"--root", e.root}, args...)...)
}

// cmdTimeout is how long one timeagent command may take before the test
// calls it hung.
const cmdTimeout = 2 * time.Minute

func (e *env) taIn(dir string, args ...string) result {
	e.t.Helper()
	return testrepo.Run(e.t, e.cmd(dir, args...), args, cmdTimeout, e.crashOK)
}

func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.ta(args...)
	if r.Code != 0 {
		e.t.Fatalf("want exit 0:\n%s", r)
	}
	return r
}

// proc is a timeagent started in the background.
type proc struct {
	cmd  *exec.Cmd
	out  string // stdout and stderr file
	done chan struct{}
	code int
	end  time.Time // when it ended (set before done is closed)
}

// start starts timeagent in dir (the root when empty) with stdout and stderr
// going to a file (never a pipe: an orphan could hold it open).
func (e *env) start(dir string, args ...string) *proc {
	e.t.Helper()
	cmd := e.cmd(dir, args...)
	f, err := os.CreateTemp(e.scratch, "out-*")
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: f.Name(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		}
		p.end = time.Now()
		close(p.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// wait waits for the process to end and returns its exit status (128+N
// when killed by signal N).
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("timeagent %q still runs after %v:\n%s", p.cmd.Args[1:], timeout, p.output())
		return 0
	}
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.out)
	return string(b)
}

// kill9 sends SIGKILL to the process and reaps it.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(p.pid(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", p.pid(), err)
	}
	if code := p.wait(t, 10*time.Second); code != 128+9 {
		t.Fatalf("timeagent after kill -9: exit %d (it ended by itself first?):\n%s", code, p.output())
	}
}

// kill9OrEnd kills p with SIGKILL unless it ends on its own first (a race
// no test can close): it reports whether the kill landed.
func (p *proc) kill9OrEnd(t *testing.T) bool {
	t.Helper()
	_ = syscall.Kill(p.pid(), syscall.SIGKILL)
	switch code := p.wait(t, 10*time.Second); code {
	case 128 + 9:
		return true
	case 0:
		return false
	default:
		t.Fatalf("timeagent after kill -9: exit %d:\n%s", code, p.output())
		return false
	}
}

// agentScript is the child of the killed sessions: three changes, then its
// pid in $SCRATCH/child (the marker), then a long sleep as the same process.
// `sync .` fsyncs the directory: the overlay batches metadata changes (the
// rm) for up to 50 ms before journaling them, and a directory fsync is how
// an agent makes them durable (files are journaled when closed).
const agentScript = `echo x > a; echo y > b; rm c; sync .; echo $$ > "$SCRATCH/child.tmp"; mv "$SCRATCH/child.tmp" "$SCRATCH/child"; exec sleep 60`

// childPid waits for the agent's marker and returns its pid.
func (e *env) childPid(p *proc) int {
	e.t.Helper()
	marker := filepath.Join(e.scratch, "child")
	var pid int
	waitFor(e.t, "the agent's marker", 20*time.Second, func() bool {
		select {
		case <-p.done:
			e.t.Fatalf("the session ended before its agent was ready (exit %d):\n%s", p.code, p.output())
		default:
		}
		b, err := os.ReadFile(marker)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	os.Remove(marker)
	return pid
}

// procState returns a process's state letter from /proc ("" when gone) and,
// for a zombie, the signal that ended it (0 if it exited).
func procState(pid int) (string, int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "", 0
	}
	fields := strings.Fields(s[i+2:])
	sig := 0
	// Field 52 (exit_code) is the wait status; fields here start at 3.
	if len(fields) >= 50 {
		if ws, err := strconv.Atoi(fields[49]); err == nil {
			sig = ws & 0x7f
		}
	}
	return fields[0], sig
}

// waitDead waits until pid is gone or a zombie and returns the signal that
// killed it when the kernel still tells (0 otherwise).
func waitDead(t *testing.T, what string, pid int) int {
	t.Helper()
	sig := 0
	waitFor(t, what+" to die", 10*time.Second, func() bool {
		st, s := procState(pid)
		sig = s
		return st == "" || st == "Z" || st == "X"
	})
	return sig
}

// mountedAt reports whether /proc/self/mountinfo lists a mount at dir.
func mountedAt(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.ReplaceAll(fields[4], `\040`, " ") == dir {
			return true
		}
	}
	return false
}

// readable fails the test unless the root can be listed and read.
func (e *env) readable(what string) {
	e.t.Helper()
	if mountedAt(e.t, e.root) {
		e.t.Fatalf("%s: a mount is still on %s", what, e.root)
	}
	if _, err := os.ReadDir(e.root); err != nil {
		e.t.Fatalf("%s: the root is not readable: %v", what, err)
	}
}

func (e *env) manifest() string {
	e.t.Helper()
	return manifest(e.t, e.root)
}

func manifestDiff(want, got string) string { return testrepo.Diff(want, got, 40) }

// statusDoc is the part of `status --json` the tests read.
type statusDoc struct {
	State       string `json:"state"`
	ActiveTask  uint64 `json:"activeTask"`
	AppliedTask uint64 `json:"appliedTask"`
	Next        string `json:"next"`
	Session     *struct {
		ID       uint64   `json:"id"`
		Pid      int      `json:"pid"`
		ExitCode *int     `json:"exitCode"`
		Tasks    []uint64 `json:"tasks"`
		Argv     []string `json:"argv"`
	} `json:"session"`
}

func decodeStatus(t *testing.T, r result) statusDoc {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("status failed:\n%s", r)
	}
	var st statusDoc
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	return st
}

// oneLine fails unless s is exactly one line starting with "timeagent: ".
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if !strings.HasPrefix(s, "timeagent: ") || strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s: want one line \"timeagent: …\" on stderr, got:\n%q", what, s)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// tmpfs mounts a tmpfs of size (mount's syntax: "8m") on a new directory and
// returns it; it is unmounted at the end of the test.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// mkdirs makes and returns dir/name.
func mkdirs(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// noStaging fails the test when a session's staging files (the overlay's
// upper layer) are left in the state dir.
func (e *env) noStaging(what string) {
	e.t.Helper()
	var left []string
	dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "sessions", "*"))
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				left = append(left, p)
			}
			return nil
		})
	}
	if len(left) > 0 {
		e.t.Fatalf("%s: staging files left in the state dir: %v", what, left)
	}
}

// The shared harness (internal/testrepo), under the names these tests use.
var (
	writeFile    = testrepo.WriteFile
	manifest     = testrepo.ManifestOf
	sameManifest = testrepo.SameManifest
	contains     = testrepo.Contains
	waitFor      = testrepo.WaitFor
	exists       = testrepo.Exists
	noCrash      = testrepo.NoCrash
)
