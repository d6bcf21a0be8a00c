//go:build linux || darwin

package fs

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// spaceReserve is kept free on the staging dir's file system, which is the
// journal's too: the journal refuses writes that would leave less than 64 MiB
// (badger would die of SIGBUS on a full disk), and a file written now must
// still fit in the journal when it is closed. So a write fails with ENOSPC,
// which the agent sees, long before the journal would.
const spaceReserve = 128 << 20

// checkSpace returns ENOSPC when writing up to end bytes of a file would eat
// into the reserve (the content is staged now and journaled at close).
func (o *Overlay) checkSpace(end int64) syscall.Errno {
	var st unix.Statfs_t
	if err := unix.Statfs(o.upper, &st); err != nil {
		return 0 // cannot tell: let the write itself fail if it must
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < end+spaceReserve {
		return syscall.ENOSPC
	}
	return 0
}
