package session

import (
	"fmt"
	"os"
	"strings"

	"github.com/timeagent-dev/timeagent/internal/mountinfo"
)

// processStopped reports whether process pid is stopped by a signal or a
// tracer (state T or t in /proc/PID/stat).
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'T' || s[i+2] == 't'
}

// overlayMounts returns the mount points of timeagent overlays.
func overlayMounts() ([]string, error) { return mountinfo.Overlays() }
