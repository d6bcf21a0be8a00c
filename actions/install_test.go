//go:build linux || darwin

package actions

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	self := "/usr/local/bin/timeagent"
	if err := Install(dir, self, []string{"npm", "git"}); err != nil {
		t.Fatal(err)
	}
	if err := Install(dir, self, []string{"npm", "git"}); err != nil { // replaces
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", fi, err)
	}
	for _, tool := range []string{"npm", "git"} {
		if target, err := os.Readlink(filepath.Join(dir, tool)); err != nil || target != self {
			t.Errorf("%s -> %q %v", tool, target, err)
		}
	}
	for _, bad := range []string{"", "../x", "a/b", "-rf", ".hidden", "a b"} {
		if err := Install(dir, self, []string{bad}); !errors.Is(err, ErrBadToolName) {
			t.Errorf("tool %q: %v", bad, err)
		}
	}
	if err := Install(dir, "timeagent", []string{"npm"}); err == nil {
		t.Error("relative executable accepted")
	}
}

func TestIsProxyInvocation(t *testing.T) {
	w := newWorld(t)
	t.Setenv(EnvProxyDir, w.proxy)
	t.Chdir(w.dir)
	tests := []struct {
		argv0 string
		tool  string
		ok    bool
	}{
		{"npm", "npm", true},
		{filepath.Join(w.proxy, "npm"), "npm", true},
		{"proxy/kubectl", "kubectl", true},
		{"./proxy/../proxy/git", "git", true},
		{filepath.Join(w.bin, "npm"), "", false},
		{"timeagent", "", false},
		{"/usr/local/bin/timeagent", "", false},
		{"notatool", "", false},
	}
	for _, tc := range tests {
		tool, ok := IsProxyInvocation(tc.argv0)
		if tool != tc.tool || ok != tc.ok {
			t.Errorf("IsProxyInvocation(%q) = %q, %v", tc.argv0, tool, ok)
		}
	}
	t.Setenv(EnvProxyDir, "")
	if _, ok := IsProxyInvocation("npm"); ok {
		t.Error("proxy without TIMEAGENT_PROXY_DIR")
	}
}
