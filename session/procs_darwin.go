//go:build darwin

package session

import (
	"os"

	"golang.org/x/sys/unix"
)

// guardSession makes this process leave the root while the overlay is
// mounted; macOS has no /proc through which the agent could reach it.
func guardSession() (restore func()) {
	wd, _ := os.Getwd()
	left := os.Chdir("/") == nil
	return func() {
		if left && wd != "" {
			_ = os.Chdir(wd)
		}
	}
}

// deviceOf is the device number of the file system path is on (0 if it
// cannot be read).
func deviceOf(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return uint64(st.Dev)
}

// rootUsers: macOS offers no cheap way to list the processes inside a
// directory, so none are reported.
func rootUsers(string, uint64) []rootUser { return nil }
