package actions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBadToolName reports a tool name that cannot be a proxy's file name.
var ErrBadToolName = errors.New("bad tool name")

// Install creates the proxy directory dir (mode 0700) with one proxy per
// tool, each running self (the absolute path of the timeagent executable):
// on Unix a symlink dir/<tool> -> self; on Windows dir/<tool>.exe (a hard
// link to self, or a copy) and a dir/<tool>.cmd shim that runs
// `self __proxy <tool> %*`. Existing proxies are replaced.
func Install(dir, self string, tools []string) error {
	if !filepath.IsAbs(self) {
		return fmt.Errorf("install proxies: executable %q is not an absolute path", self)
	}
	for _, t := range tools {
		if err := checkToolName(t); err != nil {
			return fmt.Errorf("install proxies %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("install proxies %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("install proxies %s: %w", dir, err)
	}
	for _, t := range tools {
		if err := installProxy(dir, self, t); err != nil {
			return err
		}
	}
	return nil
}

// checkToolName accepts names made of letters, digits, '.', '_' and '-',
// not starting with '.' or '-'.
func checkToolName(t string) error {
	if t == "" || t[0] == '.' || t[0] == '-' {
		return fmt.Errorf("%q: %w", t, ErrBadToolName)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q: %w", t, ErrBadToolName)
		}
	}
	return nil
}
