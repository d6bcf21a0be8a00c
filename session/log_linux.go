package session

import (
	"os"

	"golang.org/x/sys/unix"
)

// reserveLog allocates n bytes past size in f without changing its size,
// so appends up to there need no new blocks (best effort).
func reserveLog(f *os.File, size, n int64) {
	_ = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, size, n)
}
