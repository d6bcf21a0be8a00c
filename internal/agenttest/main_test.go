//go:build linux

package agenttest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// bin is the timeagent under test (TIMEAGENT_TEST_BIN, or built by TestMain).
var bin string

// The clients' versions the wire formats of this package were written
// against (agent-clients.md); the cache is reinstalled when it holds others.
var packages = []struct{ pkg, version, bin string }{
	{"@anthropic-ai/claude-code", "2.1.197", "claude"},
	{"@openai/codex", "0.171.0", "codex"},
	{"@google/gemini-cli", "0.61.0", "gemini"},
}

func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	if bin, cleanup, err = testrepo.Binary("timeagent-agenttest-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

var (
	installOnce sync.Once
	agentsDir   string // node_modules/.bin of the cache
	installWhy  string // why the clients are not available ("" when they are)
)

// cacheDir is where the clients are installed: TIMEAGENT_AGENTS_DIR, or
// $HOME/.cache/timeagent-agents (kept between runs).
func cacheDir() string {
	if d := os.Getenv("TIMEAGENT_AGENTS_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "timeagent-agents")
	}
	return filepath.Join(home, ".cache", "timeagent-agents")
}

// installed says whether the cache holds every client at its pinned version.
func installed(dir string) bool {
	for _, p := range packages {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", p.pkg, "package.json"))
		if err != nil {
			return false
		}
		var doc struct{ Version string }
		if json.Unmarshal(b, &doc) != nil || doc.Version != p.version {
			return false
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", p.bin)); err != nil {
			return false
		}
	}
	return true
}

// agents installs the three clients once (npm, into cacheDir) and returns
// the directory of their executables; it skips the test, saying why, only
// when npm or the registry cannot be reached, and fails it when the
// install itself fails.
func agents(t *testing.T) string {
	t.Helper()
	installOnce.Do(func() {
		dir := cacheDir()
		if installed(dir) {
			agentsDir = filepath.Join(dir, "node_modules", ".bin")
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			installWhy = "npm is not installed (" + err.Error() + "): install node and npm to run the real agents"
			return
		}
		if out, err := exec.Command(npm, "view", packages[0].pkg+"@"+packages[0].version, "version").CombinedOutput(); err != nil {
			installWhy = fmt.Sprintf("the npm registry is unreachable (npm view %s: %v): %s", packages[0].pkg, err, strings.TrimSpace(string(out)))
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			installWhy = "FAIL: " + err.Error()
			return
		}
		args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund"}
		for _, p := range packages {
			args = append(args, p.pkg+"@"+p.version)
		}
		start := time.Now()
		out, err := exec.Command(npm, args...).CombinedOutput()
		if err != nil || !installed(dir) {
			installWhy = fmt.Sprintf("FAIL: npm %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "agenttest: installed the clients into %s in %v\n", dir, time.Since(start).Round(time.Second))
		agentsDir = filepath.Join(dir, "node_modules", ".bin")
	})
	if strings.HasPrefix(installWhy, "FAIL: ") {
		t.Fatal(strings.TrimPrefix(installWhy, "FAIL: "))
	}
	if installWhy != "" {
		t.Skip(installWhy)
	}
	return agentsDir
}

// fuseWhy says why a fuse session cannot run here ("" when it can).
func fuseWhy() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return "no usable /dev/fuse: " + err.Error()
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "not root and no fusermount3"
		}
	}
	return ""
}

// has says whether timeagent has the subcommand words (its --help exits 0
// and is that command's help, not the root's), and why not.
func has(words ...string) (bool, string) {
	args := append(append([]string{}, words...), "--help")
	out, err := exec.Command(bin, args...).CombinedOutput()
	cmdline := "timeagent " + strings.Join(args, " ")
	if err != nil {
		return false, fmt.Sprintf("timeagent has no `%s` command yet (`%s` failed: %v)", strings.Join(words, " "), cmdline, err)
	}
	if !strings.Contains(string(out), "timeagent "+strings.Join(words, " ")) {
		return false, fmt.Sprintf("timeagent has no `%s` command yet (`%s` printed the root help)", strings.Join(words, " "), cmdline)
	}
	return true, ""
}

// need skips the test, saying why, unless timeagent has every command.
func need(t *testing.T, cmds ...[]string) {
	t.Helper()
	for _, c := range cmds {
		if ok, why := has(c...); !ok {
			t.Skip(why)
		}
	}
}
