package cow

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckCwd returns a wrapped ErrCwdRemoved when cwd (absolute) lies inside a
// directory of the root (at rootPath) that target removes or replaces by a
// non-directory; the message names the directory and the `cd` that fixes it.
// A cwd outside the root, or the root itself, is always fine.
func CheckCwd(rootPath, cwd string, target map[string]NodeState) error {
	rel, err := filepath.Rel(filepath.Clean(rootPath), filepath.Clean(cwd))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if t, ok := target[prefix]; ok && t.Kind != dirKind {
			removed := filepath.Join(rootPath, filepath.FromSlash(prefix))
			return fmt.Errorf("%w: %s would be removed and the current directory %s is inside it; run `cd %s` first",
				ErrCwdRemoved, removed, cwd, shellQuote(filepath.Dir(removed)))
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '\\' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
