package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const testBinary = "/opt/time agent/bin/timeagent"

type scope struct {
	name string
	user bool
}

var scopes = []scope{{"project", false}, {"user", true}}

func options(t *testing.T, agent Agent, user bool) Options {
	t.Helper()
	return Options{Agent: agent, User: user, Project: t.TempDir(), Home: t.TempDir(), Binary: testBinary}
}

// userSettings are existing files with the user's own hooks and servers,
// per agent: hooks file, MCP file (empty: the same file).
func userSettings(agent Agent) (hooksFile, mcpFile string) {
	switch agent {
	case Claude:
		return `{
  "permissions": {"defaultMode": "acceptEdits"},
  "hooks": {
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "my-prompt-logger"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}],
    "Notification": [{"matcher": "*", "hooks": [{"type": "command", "command": "notify-send hi"}]}]
  },
  "zeta": 1,
  "alpha": [1, 2.5e3, "x<y>&"]
}
`, `{"mcpServers": {"echo": {"type": "stdio", "command": "python3", "args": ["echo.py"]}}, "other": true}`
	case Codex:
		return `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/usr/bin/say done", "timeout": 3}]}]}}`,
			`model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "Fake"
base_url = "http://127.0.0.1:8765/v1"

[mcp_servers.echo]
command = "python3"
args = ["echo.py"]
`
	default:
		return `{
  "general": {"enableAutoUpdate": false},
  "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"name": "mine", "type": "command", "command": "check-write", "timeout": 500}]}]},
  "mcpServers": {"echo": {"command": "python3", "args": ["echo.py"], "trust": true}}
}
`, ""
	}
}

func writeSettings(t *testing.T, o Options) (map[string][]byte, []string) {
	t.Helper()
	hf, mf := o.Files()
	h, m := userSettings(o.Agent)
	files := map[string][]byte{hf: []byte(h)}
	if m != "" {
		files[mf] = []byte(m)
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{hf}
	if mf != hf {
		paths = append(paths, mf)
	}
	return files, paths
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hookCommands returns event → the commands of every hook in a JSON hooks file.
func hookCommands(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("hooks file is not JSON: %v\n%s", err, data)
	}
	out := map[string][]string{}
	for ev, groups := range doc.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				out[ev] = append(out[ev], h.Command)
			}
		}
	}
	return out
}

func mcpCommand(t *testing.T, agent Agent, data []byte) (string, []string, bool) {
	t.Helper()
	var doc struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers" toml:"-"`
		MCPServers2 map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"mcp_servers" json:"-"`
	}
	if agent == Codex {
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatalf("config.toml: %v\n%s", err, data)
		}
		s, ok := doc.MCPServers2[MCPServerName]
		return s.Command, s.Args, ok
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("MCP file is not JSON: %v\n%s", err, data)
	}
	s, ok := doc.MCPServers[MCPServerName]
	return s.Command, s.Args, ok
}

// TestIntegrateMerge: into existing settings of each agent and scope, the
// hooks and the MCP server are added beside the user's own entries (all
// kept, keys in their order), a second run changes nothing, --remove gives
// back the files byte for byte.
func TestIntegrateMerge(t *testing.T) {
	for _, agent := range Agents {
		for _, sc := range scopes {
			t.Run(string(agent)+"/"+sc.name, func(t *testing.T) {
				o := options(t, agent, sc.user)
				orig, paths := writeSettings(t, o)
				res, err := Integrate(o)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed() {
					t.Fatal("first run changed nothing")
				}
				hf, mf := o.Files()
				cmds := hookCommands(t, read(t, hf))
				for _, ev := range Events[agent] {
					want := HookCommand(testBinary, agent, ev)
					n := 0
					for _, c := range cmds[ev] {
						if c == want {
							n++
						}
					}
					if n != 1 {
						t.Errorf("%s: want one %q, got %q", ev, want, cmds[ev])
					}
				}
				if !strings.HasPrefix(HookCommand(testBinary, agent, "X"), "'/opt/time agent/bin/timeagent' hook ") {
					t.Errorf("command not quoted: %s", HookCommand(testBinary, agent, "X"))
				}
				// The user's own entries are all still there.
				after := map[string][]byte{}
				for _, p := range paths {
					after[p] = read(t, p)
				}
				for p, b := range orig {
					checkKept(t, agent, p, b, after[p])
				}
				cmd, args, ok := mcpCommand(t, agent, after[mf])
				if !ok || cmd != testBinary || strings.Join(args, " ") != "mcp" {
					t.Errorf("MCP server: %q %q %v\n%s", cmd, args, ok, after[mf])
				}
				// Idempotent.
				res, err = Integrate(o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Changed() {
					t.Errorf("second run changed something: %+v", res.Files)
				}
				for _, p := range paths {
					if string(read(t, p)) != string(after[p]) {
						t.Errorf("second run rewrote %s", p)
					}
				}
				// Removal gives back exactly the user's files.
				res, err = Integrate(Options{Agent: o.Agent, User: o.User, Project: o.Project, Home: o.Home, Binary: o.Binary, Remove: true})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed() {
					t.Fatal("removal changed nothing")
				}
				for p, b := range orig {
					got := read(t, p)
					if agent == Codex && strings.HasSuffix(p, ".toml") {
						if string(got) != string(b) {
							t.Errorf("%s after removal:\n%s\nwant byte for byte:\n%s", p, got, b)
						}
						continue
					}
					if !sameJSON(t, got, b) {
						t.Errorf("%s after removal:\n%s\nwant:\n%s", p, got, b)
					}
				}
				res, err = Integrate(Options{Agent: o.Agent, User: o.User, Project: o.Project, Home: o.Home, Binary: o.Binary, Remove: true})
				if err != nil || res.Changed() {
					t.Errorf("second removal: %v %+v", err, res.Files)
				}
			})
		}
	}
}

// checkKept fails unless every entry of the user's file is in the new one,
// in the same order.
func checkKept(t *testing.T, agent Agent, p string, before, after []byte) {
	t.Helper()
	if strings.HasSuffix(p, ".toml") {
		if !strings.HasPrefix(string(after), string(before)) {
			t.Errorf("%s: the user's config.toml is not kept byte for byte at the top:\n%s", p, after)
		}
		return
	}
	old := hookCommands(t, before)
	now := hookCommands(t, after)
	for ev, list := range old {
		for _, c := range list {
			if !contains(now[ev], c) {
				t.Errorf("%s: the user's %s hook %q is gone: %q", p, ev, c, now[ev])
			}
		}
	}
	var o, n map[string]any
	json.Unmarshal(before, &o)
	json.Unmarshal(after, &n)
	for k, v := range o {
		if k == "hooks" || k == "mcpServers" {
			continue
		}
		if bo, _ := json.Marshal(v); string(bo) != string(mustJSON(n[k])) {
			t.Errorf("%s: %q changed: %s -> %s", p, k, bo, mustJSON(n[k]))
		}
	}
	if om, ok := o["mcpServers"].(map[string]any); ok {
		nm, _ := n["mcpServers"].(map[string]any)
		for k, v := range om {
			if string(mustJSON(v)) != string(mustJSON(nm[k])) {
				t.Errorf("%s: the user's MCP server %q changed", p, k)
			}
		}
	}
	// Key order kept: the user's keys appear in the same order.
	var last int
	for _, k := range []string{"permissions", "general", "hooks", "zeta", "alpha"} {
		if !strings.Contains(string(before), `"`+k+`"`) {
			continue
		}
		i := strings.Index(string(after), `"`+k+`"`)
		if i < last {
			t.Errorf("%s: key %q moved:\n%s", p, k, after)
		}
		last = i
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return string(mustJSON(x)) == string(mustJSON(y))
}

// TestIntegrateFresh: with no settings files, integrate creates them and
// --remove deletes what it created.
func TestIntegrateFresh(t *testing.T) {
	for _, agent := range Agents {
		for _, sc := range scopes {
			t.Run(string(agent)+"/"+sc.name, func(t *testing.T) {
				o := options(t, agent, sc.user)
				res, err := Integrate(o)
				if err != nil {
					t.Fatal(err)
				}
				hf, mf := o.Files()
				if len(hookCommands(t, read(t, hf))) != 3 {
					t.Errorf("hooks: %s", read(t, hf))
				}
				if _, _, ok := mcpCommand(t, agent, read(t, mf)); !ok {
					t.Errorf("no MCP server: %s", read(t, mf))
				}
				if agent == Codex && len(res.Notes) == 0 {
					t.Error("codex: no note about trusting hooks")
				}
				o.Remove = true
				if _, err := Integrate(o); err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{hf, mf, filepath.Dir(hf)} {
					if p == o.Home || p == o.Project {
						continue
					}
					if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s left after removal: %v", p, err)
					}
				}
			})
		}
	}
}

// TestIntegrateMalformed: a settings file that cannot be parsed is refused
// with an error naming it, and no file is touched.
func TestIntegrateMalformed(t *testing.T) {
	bad := map[string]string{
		"json":        `{"hooks": {"Stop": [}`,
		"hooks-type":  `{"hooks": []}`,
		"event-type":  `{"hooks": {"Stop": {"x": 1}}}`,
		"toml":        "model = \n[[[",
		"not-object":  `[1, 2]`,
		"mcp-foreign": `{"mcpServers": {"timeagent": {"command": "npx", "args": ["other-timeagent"]}}}`,
	}
	for _, agent := range Agents {
		for name, content := range bad {
			if (name == "toml") != (agent == Codex) && name == "toml" {
				continue
			}
			t.Run(string(agent)+"/"+name, func(t *testing.T) {
				o := options(t, agent, false)
				hf, mf := o.Files()
				target := hf
				if name == "toml" || name == "mcp-foreign" {
					target = mf
				}
				if name == "event-type" {
					content = `{"hooks": {"` + Events[agent][0] + `": {"x": 1}}}`
				}
				if agent == Codex && name == "mcp-foreign" {
					content = "[mcp_servers.timeagent]\ncommand = \"npx\"\n"
				}
				if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := Integrate(o)
				if err == nil {
					t.Fatalf("%s accepted", content)
				}
				if !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "nothing was changed") {
					t.Errorf("error does not name the file or say nothing changed: %v", err)
				}
				if string(read(t, target)) != content {
					t.Errorf("%s was changed", target)
				}
				for _, p := range []string{hf, mf} {
					if p != target {
						if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
							t.Errorf("%s was written though %s was refused", p, target)
						}
					}
				}
			})
		}
	}
}

// TestIntegrateMovedBinary: a second run from another timeagent path
// updates the entries in place (no duplicates).
func TestIntegrateMovedBinary(t *testing.T) {
	for _, agent := range Agents {
		t.Run(string(agent), func(t *testing.T) {
			o := options(t, agent, false)
			if _, err := Integrate(o); err != nil {
				t.Fatal(err)
			}
			o.Binary = "/usr/local/bin/timeagent"
			res, err := Integrate(o)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Files[0].Updated); !res.Changed() || n < 3 || n > 4 {
				t.Fatalf("want 3 hooks updated (and the MCP server in the same file for gemini): %q", res.Files[0].Updated)
			}
			hf, mf := o.Files()
			for ev, list := range hookCommands(t, read(t, hf)) {
				if len(list) != 1 || list[0] != HookCommand(o.Binary, agent, ev) {
					t.Errorf("%s: %q", ev, list)
				}
			}
			if cmd, _, _ := mcpCommand(t, agent, read(t, mf)); cmd != o.Binary {
				t.Errorf("MCP command %q", cmd)
			}
		})
	}
}

// TestIntegrateUpgradesMatcher: an install from before the pre-tool hook
// matched every tool (its group matched the shell tool only) is updated to
// match every tool; a group the user shares with timeagent keeps its matcher.
func TestIntegrateUpgradesMatcher(t *testing.T) {
	o := options(t, Claude, false)
	hf, _ := o.Files()
	ours := HookCommand(testBinary, Claude, "PreToolUse")
	old := fmt.Sprintf(`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": %q, "timeout": 10}]},
  {"matcher": "Write", "hooks": [{"type": "command", "command": "my-guard"}]}]}}`, ours)
	if err := os.MkdirAll(filepath.Dir(hf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hf, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Integrate(o)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(read(t, hf), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, g := range doc.Hooks["PreToolUse"] {
		for _, h := range g.Hooks {
			got[h.Command] = g.Matcher
		}
	}
	if got[ours] != "*" || got["my-guard"] != "Write" || len(got) != 2 {
		t.Errorf("matchers after the upgrade: %v\n%s", got, read(t, hf))
	}
	hooksFile := res.Files[0]
	if !slices.Contains(hooksFile.Updated, "hooks.PreToolUse") {
		t.Errorf("the upgrade is not reported as an update: %+v", hooksFile)
	}
}
