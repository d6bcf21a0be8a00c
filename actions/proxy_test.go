//go:build linux || darwin

package actions

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/timeagent-dev/timeagent/journal"
)

// fakeTool is a shell script that records its arguments (NUL-terminated),
// PATH, stdin (when FAKE_STDIN is set) and the action directory listing at
// its start into $FAKE_OUT/<name>.*, prints "fake <name>" on stdout and
// exits with $FAKE_EXIT; FAKE_SLEEP makes it write its pid and sleep,
// FAKE_KILLSELF makes it die of SIGTERM.
const fakeTool = `#!/bin/sh
out="$FAKE_OUT/NAME"
: > "$out.argv"
for a in "$@"; do printf '%s\0' "$a" >> "$out.argv"; done
printf '%s' "$PATH" > "$out.path"
ls "$TIMEAGENT_ACTIONS_DIR" > "$out.ls"
if [ -n "$FAKE_STDIN" ]; then cat > "$out.stdin"; fi
echo "fake NAME"
if [ -n "$FAKE_SLEEP" ]; then echo $$ > "$out.pid.tmp"; mv "$out.pid.tmp" "$out.pid"; exec sleep "$FAKE_SLEEP"; fi
if [ -n "$FAKE_KILLSELF" ]; then kill -TERM $$; fi
exit ${FAKE_EXIT:-0}
`

// world is one session's proxies, fake tools and action log.
type world struct {
	dir, proxy, actions, bin, out, root string
	env                                 Env
}

func newWorld(t testing.TB) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		dir:     dir,
		proxy:   filepath.Join(dir, "proxy"),
		actions: filepath.Join(dir, "actions"),
		bin:     filepath.Join(dir, "bin"),
		out:     filepath.Join(dir, "out"),
		root:    filepath.Join(dir, "root"),
	}
	for _, d := range []string{w.actions, w.bin, w.out, w.root} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Install(w.proxy, self, Tools()); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"npm", "terraform", "kubectl", "git", "sqlite3"} {
		script := strings.ReplaceAll(fakeTool, "NAME", tool)
		if err := os.WriteFile(filepath.Join(w.bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.env = Env{ProxyDir: w.proxy, ActionsDir: w.actions, Root: w.root, Session: 42}
	return w
}

// environ is the session's environment with PATH = proxy:bin:/usr/bin:/bin
// and the extra variables.
func (w *world) environ(extra ...string) []string {
	base := setEnv(os.Environ(), "PATH", w.bin+":/usr/bin:/bin")
	base = setEnv(base, "FAKE_OUT", w.out)
	for _, kv := range []string{"FAKE_EXIT", "FAKE_SLEEP", "FAKE_KILLSELF", "FAKE_STDIN", EnvDepth} {
		base = setEnv(base, kv, "")
	}
	env := w.env.Environ(base)
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env = setEnv(env, k, v)
	}
	return env
}

type result struct {
	code           int
	stdout, stderr string
}

// shell runs `sh -c script` in w.dir in a new session without a
// controlling terminal.
func (w *world) shell(t *testing.T, script string, env []string, stdin string) result {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = w.dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", script, err)
	}
	return result{cmd.ProcessState.ExitCode(), so.String(), se.String()}
}

// argv returns the arguments the fake tool recorded, and whether it ran.
func (w *world) argv(t *testing.T, tool string) ([]string, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.out, tool+".argv"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(data), "\x00")
	return args[:len(args)-1], true
}

func (w *world) log(t *testing.T) []journal.Action {
	t.Helper()
	list, err := ReadLog(w.actions)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestProxyPassesArgvExactlyFromNestedShells(t *testing.T) {
	w := newWorld(t)
	home := os.Getenv("HOME")
	want := []string{"install", "a b", ";", home, "it's", "$NOPE", `x"y`, "", "tab\there", "line1\nline2", "*", "`id`"}
	inner := `npm install "a b" ";" "$HOME" 'it'"'"'s' '$NOPE' 'x"y' '' "$(printf 'tab\there')" "$(printf 'line1\nline2')" '*' '` + "`id`" + `'`
	outer := "sh -c " + ShellQuote([]string{inner}) + "; exit $?"
	r := w.shell(t, "sh -c "+ShellQuote([]string{outer}), w.environ(), "")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != "fake npm\n" || r.stderr != "" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	got, ran := w.argv(t, "npm")
	if !ran || !equalStrings(got, want) {
		t.Fatalf("argv %q, want %q", got, want)
	}
	path, _ := os.ReadFile(filepath.Join(w.out, "npm.path"))
	if !strings.HasPrefix(string(path), w.proxy+":") {
		t.Errorf("tool saw PATH %q, want it unchanged (proxy first)", path)
	}
	ls, _ := os.ReadFile(filepath.Join(w.out, "npm.ls"))
	if strings.Count(string(ls), ".json") != 1 {
		t.Errorf("no started record before the tool ran: %q", ls)
	}
	list := w.log(t)
	if len(list) != 1 {
		t.Fatalf("%d records", len(list))
	}
	a := list[0]
	if a.Seq != 1 || a.Session != 42 || a.Tool != "npm" || !equalStrings(a.Argv, append([]string{"npm"}, want...)) ||
		a.Executable != filepath.Join(w.bin, "npm") || a.Cwd != w.dir || a.Category != CategoryPackage ||
		a.Risk != RiskMedium || a.Decision != DecisionAllowed || a.Reversible || a.ExitCode != 0 || a.Time.IsZero() {
		t.Errorf("record %+v", a)
	}
	entries, _ := os.ReadDir(w.actions)
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 || strings.HasPrefix(e.Name(), ".") {
			t.Errorf("record file %s mode %v", e.Name(), fi.Mode())
		}
	}
	if fi, _ := os.Stat(w.proxy); fi.Mode().Perm() != 0o700 {
		t.Errorf("proxy dir mode %v", fi.Mode())
	}
}

func TestProxyPassesStdinAndExitStatus(t *testing.T) {
	w := newWorld(t)
	r := w.shell(t, "npm ci", w.environ("FAKE_STDIN=1"), "hello\x00world\n")
	if data, _ := os.ReadFile(filepath.Join(w.out, "npm.stdin")); string(data) != "hello\x00world\n" || r.code != 0 {
		t.Errorf("stdin %q, exit %d", data, r.code)
	}
	if r := w.shell(t, "npm install; echo \"code=$?\"", w.environ("FAKE_EXIT=3"), ""); !strings.Contains(r.stdout, "code=3") {
		t.Errorf("exit code not passed: %q", r.stdout)
	}
	if r := w.shell(t, "npm install", w.environ("FAKE_KILLSELF=1"), ""); r.code != 128+int(syscall.SIGTERM) {
		t.Errorf("killed tool: exit %d", r.code)
	}
	list := w.log(t)
	if len(list) != 3 || list[1].ExitCode != 3 || list[2].ExitCode != 143 || list[0].Seq != 1 || list[2].Seq != 3 {
		t.Errorf("records %+v", list)
	}
}

func TestProxyRefusesWithoutTerminal(t *testing.T) {
	w := newWorld(t)
	r := w.shell(t, "terraform apply -auto-approve", w.environ(), "y\n")
	if r.code != ExitRefused {
		t.Errorf("exit %d, want 126", r.code)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--allow-high-risk") ||
		!strings.Contains(r.stderr, "terraform apply -auto-approve") || !strings.Contains(r.stderr, "critical") {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, ran := w.argv(t, "terraform"); ran {
		t.Error("the refused tool ran")
	}
	list := w.log(t)
	if len(list) != 1 || list[0].Decision != DecisionDenied || list[0].Risk != RiskCritical || list[0].Executable != "" {
		t.Errorf("records %+v", list)
	}
}

func TestProxyAllowHighRisk(t *testing.T) {
	w := newWorld(t)
	w.env.AllowHighRisk = true
	r := w.shell(t, "terraform destroy", w.environ(), "")
	if r.code != 0 {
		t.Fatalf("exit %d %q", r.code, r.stderr)
	}
	if _, ran := w.argv(t, "terraform"); !ran {
		t.Error("tool did not run")
	}
	if list := w.log(t); len(list) != 1 || list[0].Decision != DecisionAllowed || list[0].Risk != RiskCritical {
		t.Errorf("records %+v", list)
	}
}

// askThroughPty runs `sh -c script` as the leader of a new session whose
// controlling terminal is a pseudo-terminal, answers the prompt with answer
// on the terminal (stdin is a pipe holding "y\n", which must not be read),
// and returns the exit code and what the terminal showed.
func askThroughPty(t *testing.T, w *world, script, answer string) (int, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = w.dir
	cmd.Env = w.environ()
	cmd.Stdin = strings.NewReader("y\n")
	var so bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &so
	cmd.ExtraFiles = []*os.File{tty}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var (
		mu     sync.Mutex
		screen bytes.Buffer
	)
	prompted := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			if strings.Contains(screen.String(), "[y/N]") {
				once.Do(func() { close(prompted) })
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-prompted:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no prompt; output %q", so.String())
	}
	if _, err := ptmx.Write([]byte(answer)); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return cmd.ProcessState.ExitCode(), screen.String()
}

func TestProxyAsksOnTerminal(t *testing.T) {
	tests := []struct {
		answer   string
		decision string
		code     int
	}{
		{"y\n", DecisionApproved, 0},
		{"YES\n", DecisionApproved, 0},
		{"n\n", DecisionDenied, ExitRefused},
		{"\n", DecisionDenied, ExitRefused},
	}
	for _, tc := range tests {
		t.Run(strconv.Quote(tc.answer), func(t *testing.T) {
			w := newWorld(t)
			code, screen := askThroughPty(t, w, "kubectl -n prod delete pod web --token s3cret", tc.answer)
			if code != tc.code {
				t.Errorf("exit %d, want %d; screen %q", code, tc.code, screen)
			}
			want := "timeagent: infrastructure action (high risk): kubectl -n prod delete pod web --token " + Redacted + " — run it? [y/N] "
			if !strings.Contains(screen, want) || strings.Contains(screen, "s3cret") {
				t.Errorf("screen %q, want prompt %q", screen, want)
			}
			_, ran := w.argv(t, "kubectl")
			if ran != (tc.decision == DecisionApproved) {
				t.Errorf("tool ran: %v", ran)
			}
			list := w.log(t)
			if len(list) != 1 || list[0].Decision != tc.decision || list[0].Risk != RiskHigh ||
				list[0].Argv[len(list[0].Argv)-1] != "s3cret" {
				t.Errorf("records %+v", list)
			}
		})
	}
}

func TestProxyNeverFindsItself(t *testing.T) {
	w := newWorld(t)
	alias := filepath.Join(w.dir, "alias")
	if err := os.Symlink(w.proxy, alias); err != nil {
		t.Fatal(err)
	}
	linkBin := filepath.Join(w.dir, "linkbin")
	if err := os.Mkdir(linkBin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.proxy, "npm"), filepath.Join(linkBin, "npm")); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	selfBin := filepath.Join(w.dir, "selfbin")
	os.Mkdir(selfBin, 0o700)
	if err := os.Symlink(self, filepath.Join(selfBin, "npm")); err != nil {
		t.Fatal(err)
	}
	hardBin := filepath.Join(w.dir, "hardbin")
	os.Mkdir(hardBin, 0o700)
	if err := os.Link(self, filepath.Join(hardBin, "npm")); err != nil {
		t.Fatal(err)
	}
	loops := strings.Join([]string{w.proxy, "proxy", "./proxy/", "", alias, linkBin, selfBin, hardBin, w.proxy}, ":")
	env := w.environ()
	r := w.shell(t, "npm install x", setEnv(env, "PATH", loops+":"+w.bin+":/usr/bin:/bin"), "")
	if r.code != 0 {
		t.Fatalf("exit %d %q", r.code, r.stderr)
	}
	if got, _ := w.argv(t, "npm"); !equalStrings(got, []string{"install", "x"}) {
		t.Errorf("argv %q", got)
	}
	if list := w.log(t); len(list) != 1 || list[0].Executable != filepath.Join(w.bin, "npm") {
		t.Errorf("records %+v", list)
	}

	r = w.shell(t, "npm install y", setEnv(env, "PATH", loops), "")
	if r.code != ExitNotFound || r.stderr != "timeagent: npm: command not found (outside the proxy)\n" {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
	if list := w.log(t); len(list) != 2 || list[1].ExitCode != ExitNotFound {
		t.Errorf("records %+v", list)
	}

	r = w.shell(t, "npm install z", setEnv(env, EnvDepth, strconv.Itoa(MaxDepth)), "")
	if r.code != ExitRefused || !strings.Contains(r.stderr, "nested") {
		t.Errorf("depth guard: exit %d stderr %q", r.code, r.stderr)
	}
	if got, _ := w.argv(t, "npm"); !equalStrings(got, []string{"install", "x"}) {
		t.Errorf("tool ran past the depth guard: %q", got)
	}
}

func TestProxyLocalCallsNotRecorded(t *testing.T) {
	w := newWorld(t)
	r := w.shell(t, "git status --short; echo \"code=$?\"; sqlite3 root/app.db 'drop table t'", w.environ("FAKE_EXIT=5"), "")
	if !strings.Contains(r.stdout, "fake git\ncode=5\nfake sqlite3\n") || r.code != 5 {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got, _ := w.argv(t, "git"); !equalStrings(got, []string{"status", "--short"}) {
		t.Errorf("argv %q", got)
	}
	if list := w.log(t); len(list) != 0 {
		t.Errorf("local calls recorded: %+v", list)
	}
	r = w.shell(t, "git push --force origin main", w.environ(), "")
	if list := w.log(t); r.code != ExitRefused || len(list) != 1 || list[0].Risk != RiskHigh {
		t.Errorf("exit %d records %+v", r.code, list)
	}
}

func TestProxyWindowsStyleInvocation(t *testing.T) {
	w := newWorld(t)
	self, _ := os.Executable()
	cmd := exec.Command(self, "__proxy", "npm", "publish", "--dry-run", "a b")
	cmd.Env = w.environ(EnvAllowHighRisk + "=1")
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, _ := w.argv(t, "npm"); !equalStrings(got, []string{"publish", "--dry-run", "a b"}) {
		t.Errorf("argv %q", got)
	}
	if list := w.log(t); len(list) != 1 || list[0].Risk != RiskHigh || list[0].Decision != DecisionAllowed {
		t.Errorf("records %+v", list)
	}
}

// startLong starts the npm proxy directly (no shell) on a fake npm that
// sleeps, and waits until the tool runs; it returns the proxy and the
// tool's pid.
func startLong(t *testing.T, w *world) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(w.proxy, "npm"), "install", "slow")
	cmd.Args[0] = "npm"
	cmd.Env = w.environ("FAKE_SLEEP=30")
	cmd.Dir = w.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(w.out, "npm.pid"))
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			return cmd, pid
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the fake tool did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProxyRecordSurvivesSIGKILL(t *testing.T) {
	w := newWorld(t)
	cmd, _ := startLong(t, w)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	list := w.log(t)
	if len(list) != 1 || list[0].ExitCode != ExitUnknown || list[0].Decision != DecisionAllowed ||
		list[0].Executable != filepath.Join(w.bin, "npm") || !equalStrings(list[0].Argv, []string{"npm", "install", "slow"}) {
		t.Errorf("records %+v", list)
	}
}

func TestProxyForwardsSIGTERM(t *testing.T) {
	w := newWorld(t)
	cmd, _ := startLong(t, w)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 143 || time.Since(start) > 10*time.Second {
		t.Errorf("exit %d after %v", code, time.Since(start))
	}
	if list := w.log(t); len(list) != 1 || list[0].ExitCode != 143 || list[0].DurationMs <= 0 {
		t.Errorf("records %+v", list)
	}
}

// BenchmarkProxyOverhead measures one call of a fake tool directly, through
// the proxy unrecorded (git status: exec), and recorded (npm install: two
// fsynced records).
func BenchmarkProxyOverhead(b *testing.B) {
	w := newWorld(b)
	env := w.environ()
	for _, bc := range []struct{ name, path, arg string }{
		{"direct", filepath.Join(w.bin, "npm"), "install"},
		{"unrecorded", filepath.Join(w.proxy, "git"), "status"},
		{"recorded", filepath.Join(w.proxy, "npm"), "install"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bc.path, bc.arg)
				cmd.Args[0] = filepath.Base(bc.path)
				cmd.Env = env
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestProxyInBackgroundIsRefusedNotStopped(t *testing.T) {
	w := newWorld(t)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			panic("proxy in a background process group hangs")
		}
	}()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	go func() { // drain the terminal
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	cmd := exec.Command("/bin/sh", "-c", "set -m; kubectl delete pod web & wait $!; echo \"code=$?\"")
	cmd.Dir = w.dir
	cmd.Env = w.environ()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.ExtraFiles = []*os.File{tty}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s %s", err, so.String(), se.String())
	}
	close(done)
	tty.Close()
	if !strings.Contains(so.String(), "code=126") || !strings.Contains(se.String(), "foreground") {
		t.Errorf("stdout %q stderr %q", so.String(), se.String())
	}
	if list := w.log(t); len(list) != 1 || list[0].Decision != DecisionDenied {
		t.Errorf("records %+v", list)
	}
}

// TestProxyOutlivesKilledSession kills -9 the process standing for the
// session (the shell that started the proxy): the proxy still finishes its
// call and completes the record.
func TestProxyOutlivesKilledSession(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command("/bin/sh", "-c", "npm install slow; echo after")
	cmd.Env = w.environ("FAKE_SLEEP=1")
	cmd.Dir = w.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(w.out, "npm.pid")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the fake tool did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if list := w.log(t); len(list) != 1 || list[0].ExitCode != ExitUnknown {
		t.Fatalf("started record: %+v", list)
	}
	for {
		list := w.log(t)
		if len(list) == 1 && list[0].ExitCode == 0 && list[0].DurationMs >= 1000 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("final record never written: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProxyPromptsOneAtATime starts two high-risk calls at once on one
// terminal: the second question appears only after the first is answered.
func TestProxyPromptsOneAtATime(t *testing.T) {
	w := newWorld(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command("/bin/sh", "-c", "kubectl delete pod a & kubectl delete pod b & wait")
	cmd.Dir = w.dir
	cmd.Env = w.environ()
	cmd.ExtraFiles = []*os.File{tty}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var (
		mu     sync.Mutex
		screen strings.Builder
	)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitPrompts := func(n int) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			got := strings.Count(screen.String(), "[y/N]")
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("waiting for prompt %d: %q", n, screen.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPrompts(1)
	time.Sleep(300 * time.Millisecond) // a second, unlocked prompt would show by now
	mu.Lock()
	if n := strings.Count(screen.String(), "[y/N]"); n != 1 {
		t.Errorf("%d prompts at once: %q", n, screen.String())
	}
	mu.Unlock()
	ptmx.Write([]byte("y\n"))
	waitPrompts(2)
	ptmx.Write([]byte("n\n"))
	cmd.Wait()
	list := w.log(t)
	if len(list) != 2 {
		t.Fatalf("records %+v", list)
	}
	decisions := list[0].Decision + "," + list[1].Decision
	if decisions != "approved,denied" && decisions != "denied,approved" {
		t.Errorf("decisions %s", decisions)
	}
}
