//go:build linux

package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// clientNames are the three clients, in the order the tests run them.
var clientNames = []string{"claude", "codex", "gemini"}

// clientTimeout bounds one client invocation (Gemini takes 5–15 s on a
// loaded 2-core machine).
const clientTimeout = 4 * time.Minute

// client is one agent CLI set up for one test: a throwaway HOME, its
// configuration pointing at the test's fake model, a real git repository.
type client struct {
	t     *testing.T
	name  string
	exe   string // the CLI's executable
	dir   string // the test's directory
	repo  string // the repository (cwd of every run)
	home  string // throwaway HOME
	model *fakeModel
	// extraPath is prepended to PATH (fake tools).
	extraPath string
	// hookTrust adds Codex's --dangerously-bypass-hook-trust (project hooks
	// run only in trusted projects, and exec never asks).
	hookTrust bool
	// extraArgs are added to every invocation (after the client's own).
	extraArgs []string
	// n counts the prompts run (the first starts the client's session,
	// the later ones resume it).
	n int
}

// newClient sets up name for a test with a fresh repository and a fake
// model answering script.
func newClient(t *testing.T, name string, script []Prompt) *client {
	t.Helper()
	binDir := agents(t)
	dir := testrepo.RealDir(t, t.TempDir())
	c := &client{t: t, name: name, exe: filepath.Join(binDir, name), dir: dir,
		repo: filepath.Join(dir, "repo"), home: filepath.Join(dir, "home")}
	makeRepo(t, c.repo)
	c.model = newFakeModel(t, c, c.repo, script)
	c.configure()
	return c
}

// makeRepo creates a small repository: committed, modified and untracked
// files, an ignored directory, an executable and a symlink.
func makeRepo(t *testing.T, repo string) {
	t.Helper()
	env := testrepo.Environ()
	for p, s := range map[string]string{
		"README.md":        "# demo\n\nA repository the agents edit.\n",
		"src/main.go":      "package main\n\nfunc main() {}\n",
		"docs/guide.md":    "guide\n",
		".gitignore":       "build/\n*.log\n",
		"scripts/build.sh": "#!/bin/sh\necho build\n",
	} {
		perm := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			perm = 0o755
		}
		testrepo.WriteFile(t, filepath.Join(repo, p), []byte(s), perm)
	}
	testrepo.Symlink(t, "docs/guide.md", filepath.Join(repo, "GUIDE"))
	testrepo.Git(t, repo, env, "init", "-q", "-b", "main")
	testrepo.Git(t, repo, env, "add", "-A")
	testrepo.Git(t, repo, env, "commit", "-q", "-m", "initial")
	testrepo.WriteFile(t, filepath.Join(repo, "docs/guide.md"), []byte("guide, edited by the user\n"), 0o644)
	testrepo.WriteFile(t, filepath.Join(repo, "notes.txt"), []byte("untracked notes\n"), 0o644)
	testrepo.WriteFile(t, filepath.Join(repo, "build/out.bin"), []byte("ignored build output\n"), 0o644)
	testrepo.WriteFile(t, filepath.Join(repo, "debug.log"), []byte("ignored log\n"), 0o644)
}

// writeJSON writes v as indented JSON to p (creating directories).
func writeJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testrepo.WriteFile(t, p, append(b, '\n'), 0o644)
}

// configure writes the client's user configuration in the throwaway HOME.
func (c *client) configure() {
	t := c.t
	switch c.name {
	case "claude":
		writeJSON(t, filepath.Join(c.home, ".claude", "settings.json"), map[string]any{
			"permissions": map[string]any{"defaultMode": "bypassPermissions"}})
	case "codex":
		cfg := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake scripted model"
base_url = "%s/v1"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[projects.%q]
trust_level = "trusted"
`, c.model.URL(), c.repo)
		testrepo.WriteFile(t, filepath.Join(c.home, ".codex", "config.toml"), []byte(cfg), 0o644)
	case "gemini":
		writeJSON(t, filepath.Join(c.home, ".gemini", "settings.json"), map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"tools":     map[string]any{"sandbox": false},
		})
	}
}

// env is the environment of the client (and of timeagent around it).
func (c *client) env() []string {
	path := os.Getenv("PATH")
	if c.extraPath != "" {
		path = c.extraPath + ":" + path
	}
	// TIMEAGENT_HOME stays unset: timeagent's state goes to the throwaway
	// HOME, where processes the clients start with a reduced environment
	// (MCP servers) find it too.
	env := testrepo.Environ("HOME="+c.home, "PATH="+path, "TIMEAGENT_END_WAIT=30s")
	switch c.name {
	case "claude":
		env = append(env, "ANTHROPIC_BASE_URL="+c.model.URL(), "ANTHROPIC_API_KEY=sk-ant-fake", "IS_SANDBOX=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1")
	case "codex":
		env = append(env, "CODEX_HOME="+filepath.Join(c.home, ".codex"), "FAKE_OPENAI_API_KEY=fake-openai-key")
	case "gemini":
		env = append(env, "GEMINI_API_KEY=fake-gemini-key", "GOOGLE_GEMINI_BASE_URL="+c.model.URL(),
			"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_SANDBOX=false")
	}
	return clean(env)
}

// clean drops variables that would point a client elsewhere (a real API
// key or base URL in the test's own environment) and cloud credentials: a
// real terraform can run where a test expects it refused (Codex's login
// shell finds the system's), in an empty temporary repository, and must
// find nothing to act on.
func clean(env []string) []string {
	seen := map[string]int{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "ANTHROPIC_") && k != "ANTHROPIC_BASE_URL" && k != "ANTHROPIC_API_KEY",
			strings.HasPrefix(k, "GOOGLE_") && k != "GOOGLE_GEMINI_BASE_URL", k == "CLAUDECODE", strings.HasPrefix(k, "CODEX_") && k != "CODEX_HOME",
			strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "AZURE_"), strings.HasPrefix(k, "ARM_"), strings.HasPrefix(k, "TF_"),
			strings.HasPrefix(k, "CLOUDSDK_"), strings.HasPrefix(k, "KUBE"):
			continue
		}
		if i, ok := seen[k]; ok {
			out[i] = kv // the later value wins
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// claudeSession is the session id Claude's first prompt of a test uses
// (--session-id) and the later ones resume.
const claudeSession = "6f1d3c8e-2b4a-4c1e-9d7f-0a5b6c7d8e9f"

// args is the client's non-interactive command line for its n-th prompt
// (from 0): the first starts a session, the later ones resume it.
func (c *client) args(n int, prompt string) []string {
	var a []string
	switch c.name {
	case "claude":
		a = []string{"-p", prompt, "--dangerously-skip-permissions", "--output-format", "json"}
		if n == 0 {
			a = append(a, "--session-id", claudeSession)
		} else {
			a = append(a, "--resume", claudeSession)
		}
	case "codex":
		a = []string{"exec"}
		if n > 0 {
			a = append(a, "resume", "--last")
		}
		a = append(a, "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--json")
		if c.hookTrust {
			a = append(a, "--dangerously-bypass-hook-trust")
		}
		a = append(a, c.extraArgs...)
		return append(a, prompt)
	case "gemini":
		a = []string{"-p", prompt, "--approval-mode=yolo", "-o", "json"}
		if n > 0 {
			a = append(a, "--resume", "latest")
		}
	}
	return append(a, c.extraArgs...)
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// script writes a shell script that runs the client on each prompt in
// turn (one agent session resumed per prompt, as a user at a terminal
// would), and returns its path. Between prompts i and i+1 it creates
// <dir>/done<i> and, when pause, waits for <dir>/go<i>.
func (c *client) script(prompts []string, pause bool) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\nset -e\n")
	for i, p := range prompts {
		if i > 0 {
			fmt.Fprintf(&b, "touch %s\n", shQuote(filepath.Join(c.dir, fmt.Sprintf("done%d", i-1))))
			if pause {
				fmt.Fprintf(&b, "while [ ! -e %s ]; do sleep 0.1; done\n", shQuote(filepath.Join(c.dir, fmt.Sprintf("go%d", i-1))))
			}
		}
		b.WriteString(shQuote(c.exe))
		for _, a := range c.args(i, p) {
			b.WriteString(" " + shQuote(a))
		}
		b.WriteString("\n")
	}
	path := filepath.Join(c.dir, "prompts.sh")
	testrepo.WriteFile(c.t, path, []byte(b.String()), 0o755)
	return path
}

// runResult is one client invocation.
type runResult struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
}

func (r runResult) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.Code, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// prompt runs the client on one prompt: directly when wrap is empty, else
// under wrap (e.g. timeagent run --mode copy --). It fails the test when the
// client does not exit 0 and remembers the session to resume.
func (c *client) prompt(text string, wrap ...string) runResult {
	c.t.Helper()
	argv := append(append([]string{}, wrap...), c.exe)
	argv = append(argv, c.args(c.n, text)...)
	c.n++
	r := c.start(argv...).wait()
	if r.Code != 0 {
		c.t.Fatalf("%s %q: %s\nmodel requests:\n%s", c.name, text, r, c.model.Dump())
	}
	c.t.Logf("%s %q: %v (%s)", c.name, text, r.Took.Round(time.Millisecond), strings.Join(wrap, " "))
	return r
}

// running is a client started by start.
type running struct {
	c         *client
	cmd       *exec.Cmd
	out, errb bytes.Buffer
	begin     time.Time
	cancel    context.CancelFunc
	done      chan struct{}
	result    runResult
}

// start starts argv (the client, a script, under timeagent run or not) in
// the repository, in a session of its own (no controlling terminal),
// without waiting.
func (c *client) start(argv ...string) *running {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	r := &running{c: c, cancel: cancel, done: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	r.cmd.Dir, r.cmd.Env = c.repo, c.env()
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.errb
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	r.cmd.Cancel = func() error { return syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) }
	r.begin = time.Now()
	if err := r.cmd.Start(); err != nil {
		cancel()
		c.t.Fatalf("start %v: %v", argv, err)
	}
	go func() {
		err := r.cmd.Wait()
		r.result = runResult{Stdout: r.out.String(), Stderr: r.errb.String(), Took: time.Since(r.begin)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.result.Code = ee.ExitCode()
		} else if err != nil {
			r.result.Code = -1
			r.result.Stderr += "\n" + err.Error()
		}
		// Whatever the client left in its process group goes with it.
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		close(r.done)
	}()
	c.t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// wait waits for the client's end.
func (r *running) wait() runResult {
	<-r.done
	r.cancel()
	return r.result
}

// ta runs timeagent in the client's repository and environment, failing the
// test on a non-zero exit.
func (c *client) ta(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = c.repo, c.env()
	r := testrepo.Run(c.t, cmd, args, 0, false)
	if r.Code != 0 {
		c.t.Fatalf("%s", r)
	}
	return r.Stdout
}

// taskDoc is the part of log --json the tests read.
type taskDoc struct {
	ActiveTask uint64 `json:"activeTask"`
	Tasks      []struct {
		ID      uint64 `json:"id"`
		Summary string `json:"summary"`
		Kind    string `json:"kind"`
		Files   int    `json:"files"`
		Session uint64 `json:"session"`
	} `json:"tasks"`
}

// log reads timeagent log --json.
func (c *client) log() taskDoc {
	c.t.Helper()
	var doc taskDoc
	out := c.ta("log", "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		c.t.Fatalf("log --json: %v\n%s", err, out)
	}
	return doc
}

// diffPaths reads timeagent diff --json ARGS and returns "change path"
// lines, sorted.
func (c *client) diffPaths(args ...string) []string {
	c.t.Helper()
	out := c.ta(append([]string{"diff", "--json"}, args...)...)
	var doc struct {
		Changes []struct {
			Path   string `json:"path"`
			Change string `json:"change"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		c.t.Fatalf("diff --json: %v\n%s", err, out)
	}
	var got []string
	for _, ch := range doc.Changes {
		got = append(got, ch.Change+" "+ch.Path)
	}
	sort.Strings(got)
	return got
}

// manifest describes the repository byte for byte (including .git).
func (c *client) manifest() string {
	c.t.Helper()
	return testrepo.ManifestOf(c.t, c.repo)
}

// file reads a file of the repository ("" when absent).
func (c *client) file(p string) string {
	b, err := os.ReadFile(filepath.Join(c.repo, p))
	if err != nil {
		return ""
	}
	return string(b)
}

// wrapRun is the timeagent run prefix for mode ("" = run directly).
func wrapRun(mode string) []string {
	if mode == "direct" {
		return nil
	}
	return []string{bin, "run", "--mode", mode, "--"}
}

// modes are the ways the tests run a client: both session modes and
// directly; fuse only where it can mount (the test says why not).
func modes(t *testing.T) []string {
	return []string{"fuse", "copy", "direct"}
}

// needMode skips a fuse subtest where fuse cannot run, saying why.
func needMode(t *testing.T, mode string) {
	t.Helper()
	if mode == "fuse" {
		if why := fuseWhy(); why != "" {
			t.Skip("fuse mode: " + why)
		}
	}
}

// sameSet fails the test when got and want differ (as sets of lines).
func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	w := append([]string(nil), want...)
	sort.Strings(w)
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
	}
}

// diffManifest lists the lines of two manifests that differ.
func diffManifest(want, got string) string {
	return testrepo.Diff(want, got, 40)
}
