package cow

import (
	"runtime"
	"sort"
	"strings"
)

// ValidPath reports whether p is a clean, relative, slash-separated path
// without "..", ".", empty or absolute components.
func ValidPath(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	// On Windows a backslash is a separator and a colon names a volume or
	// a stream; elsewhere both are ordinary name bytes.
	if runtime.GOOS == "windows" && strings.ContainsAny(p, "\\:") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// depth is the number of components of a valid path.
func depth(p string) int { return strings.Count(p, "/") + 1 }

// joinRel joins a directory ("." for the root) and a name.
func joinRel(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// sortedKeys returns the keys of m sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
