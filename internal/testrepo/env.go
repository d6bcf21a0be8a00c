package testrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Environ is the environment of every process an integration test starts:
// the test's own, without TIMEAGENT_ and GIT_ variables, with a fixed git
// identity and no system or global git configuration, then extra.
func Environ(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TIMEAGENT_") || strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test",
		"GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	return append(out, extra...)
}

// Git runs git ARGS in dir with env, failing the test on error (set-up only).
func Git(t testing.TB, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// RealDir resolves the symlinks of d (a temp dir may sit below one), so
// paths compare equal to the canonical root timeagent reports.
func RealDir(t testing.TB, d string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
