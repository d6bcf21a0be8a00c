//go:build linux || darwin

package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvEndWait bounds how long the end of a fuse session waits for processes
// that still use the root after the agent exited (a Go duration such as
// "10s", or seconds).
const EnvEndWait = "TIMEAGENT_END_WAIT"

// defaultEndWait is the wait when EnvEndWait is unset: long enough for
// git's detached auto-gc on a mid-sized repository, short enough not to
// keep the user waiting on a dev server that will never stop.
const defaultEndWait = 5 * time.Second

// rootUser is a process that uses the root.
type rootUser struct {
	Pid  int
	Name string
	How  string // "working directory", "root directory", "open file"
}

// endWait reads EnvEndWait; an unreadable value is reported and the default
// used.
func endWait(notice func(string)) time.Duration {
	v := strings.TrimSpace(os.Getenv(EnvEndWait))
	if v == "" {
		return defaultEndWait
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second))
	}
	notice(fmt.Sprintf("%s=%q is not a duration (such as 10s); waiting %s", EnvEndWait, v, defaultEndWait))
	return defaultEndWait
}

// describeUsers lists processes as "pid (name)".
func describeUsers(users []rootUser) string {
	parts := make([]string, 0, len(users))
	for i, u := range users {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(users)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d (%s, %s)", u.Pid, u.Name, u.How))
	}
	return strings.Join(parts, ", ")
}

// waitForUsers waits, up to the end wait, until no process other than
// timeagent uses the mounted overlay (dev) on root, and returns those that
// still do.
func waitForUsers(root string, dev uint64, wait time.Duration) []rootUser {
	deadline := time.Now().Add(wait)
	for {
		users := rootUsers(root, dev)
		if len(users) == 0 || !time.Now().Before(deadline) {
			return users
		}
		time.Sleep(min(100*time.Millisecond, time.Until(deadline)))
	}
}
