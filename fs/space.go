//go:build linux || darwin

package fs

import (
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spaceReserve is kept free on the staging dir's file system, which is the
// journal's too: the journal refuses writes that would leave less than 64 MiB
// (badger would die of SIGBUS on a full disk), and a file written now must
// still fit in the journal when it is closed. So a write fails with ENOSPC,
// which the agent sees, long before the journal would.
const spaceReserve = 128 << 20

// spaceCheckEvery bounds how long a measurement of the free space is reused:
// writes are a hot path and statfs is a system call.
const spaceCheckEvery = 100 * time.Millisecond

// spaceGauge caches the free space of the staging file system, counting the
// bytes written since it was measured as already used.
type spaceGauge struct {
	mu      sync.Mutex
	at      time.Time
	free    int64
	written int64
}

// checkSpace returns ENOSPC when writing up to end bytes of a file would eat
// into the reserve (the content is staged now and journaled at close).
func (o *Overlay) checkSpace(end, n int64) syscall.Errno {
	g := &o.space
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.at) > spaceCheckEvery || g.free-g.written < end+spaceReserve {
		var st unix.Statfs_t
		if err := unix.Statfs(o.upper, &st); err != nil {
			return 0 // cannot tell: let the write itself fail if it must
		}
		g.at, g.free, g.written = time.Now(), int64(st.Bavail)*int64(st.Bsize), 0
	}
	if g.free-g.written < end+spaceReserve {
		return syscall.ENOSPC
	}
	g.written += n
	return 0
}

// room reports whether more than need bytes are free on the staging file
// system beyond the reserve, measuring at most every spaceCheckEvery.
func (g *spaceGauge) room(dir string, need int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.at) > spaceCheckEvery {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return false
		}
		g.at, g.free, g.written = time.Now(), int64(st.Bavail)*int64(st.Bsize), 0
	}
	return g.free-g.written > need+spaceReserve
}
