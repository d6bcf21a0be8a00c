//go:build unix

package session

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkSpace refuses to start a session when the state dir's file system has
// less than MinFree bytes available: the journal maps its files into memory,
// and a write that finds the disk full there would crash instead of failing.
func checkSpace(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // unknown: let the writes report it
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	if free < MinFree {
		return fmt.Errorf("start session: only %d MiB free for the journal in %s (at least %d MiB needed): %w",
			free>>20, dir, MinFree>>20, syscall.ENOSPC)
	}
	return nil
}
