package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIntegrateCLI: integrate writes each agent's settings in the
// repository (or the user's home with --user) beside the user's own, says
// which files and entries it changed, changes nothing the second time and
// says so, and --remove gives the files back; a malformed file is refused
// with exit 1 and left untouched.
func TestIntegrateCLI(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			home := t.TempDir()
			e.extra = append(e.extra, "HOME="+home, "CODEX_HOME=")
			own := map[string]string{
				"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json",
			}[agent]
			mine := `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "my-own-hook"}]}]}}` + "\n"
			e.write(own, mine, 0o644)
			r := e.ok("integrate", agent)
			contains(t, "first run", r.Stdout, e.path(own), "added hooks.", "the hooks run "+binary+" hook "+agent+" EVENT")
			b, _ := os.ReadFile(e.path(own))
			contains(t, "settings", string(b), "my-own-hook", binary+" hook "+agent)
			if agent == "codex" {
				contains(t, "codex note", r.Stdout, "trusted project", "--user")
			}
			r = e.ok("integrate", agent, "--project")
			contains(t, "second run", r.Stdout, "already installed, nothing changed")
			if b2, _ := os.ReadFile(e.path(own)); string(b2) != string(b) {
				t.Fatal("second run rewrote the settings")
			}
			r = e.ok("integrate", agent, "--remove")
			contains(t, "removal", r.Stdout, e.path(own), "removed hooks.")
			if b, _ := os.ReadFile(e.path(own)); !strings.Contains(string(b), "my-own-hook") || strings.Contains(string(b), "timeagent") {
				t.Fatalf("after removal: %s", b)
			}
			// User scope.
			r = e.ok("integrate", agent, "--user")
			contains(t, "user scope", r.Stdout, home)
			e.ok("integrate", agent, "--user", "--remove")
			// Malformed.
			e.write(own, "{not json", 0o644)
			r = e.fails(1, "integrate", agent)
			oneLine(t, r.Stderr)
			contains(t, "malformed", r.Stderr, e.path(own), "nothing was changed")
			if b, _ := os.ReadFile(e.path(own)); string(b) != "{not json" {
				t.Fatal("malformed file was changed")
			}
			e.fails(2, "integrate", "cursor")
			if _, err := os.Stat(filepath.Join(e.root, ".mcp.json")); agent == "claude" && err == nil {
				b, _ := os.ReadFile(filepath.Join(e.root, ".mcp.json"))
				t.Fatalf(".mcp.json left: %s", b)
			}
		})
	}
}
