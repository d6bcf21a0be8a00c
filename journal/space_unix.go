//go:build unix

package journal

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeBytes returns the space available to this user on dir's file system.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// allocated is the space a file takes on disk (its blocks: badger's value
// log files are sparse while open).
func allocated(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
