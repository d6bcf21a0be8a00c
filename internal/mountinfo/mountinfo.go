// Package mountinfo reads the mount table of this process's mount namespace
// (/proc/self/mountinfo, Linux): the overlay, recovery and isolated sessions
// all look for timeagent's FUSE mounts there without touching the mounts.
package mountinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of the table.
type Mount struct {
	Dev    string // "major:minor"
	Point  string // mount point, unescaped
	FSType string // e.g. "fuse.timeagent"
}

// Read returns the mounts of this process's namespace.
func Read() ([]Mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	return Parse(string(b)), nil
}

// Parse parses mountinfo text; malformed lines are skipped.
func Parse(s string) []Mount {
	var out []Mount
	for _, line := range strings.Split(s, "\n") {
		// id parent major:minor root mountpoint options ... - fstype source superopts
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		out = append(out, Mount{Dev: f[2], Point: Unescape(f[4]), FSType: g[0]})
	}
	return out
}

// Unescape decodes the octal escapes (\040 for a space) of a mountinfo path.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// OverlayType is the file system type of timeagent's FUSE overlays.
const OverlayType = "fuse.timeagent"

// Overlays returns the mount points of timeagent's overlays, in mount
// table order.
func Overlays() ([]string, error) {
	mounts, err := Read()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.FSType == OverlayType {
			out = append(out, m.Point)
		}
	}
	return out, nil
}
