package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

func allocate(f *os.File, mode uint32, off, size int64) error {
	return unix.Fallocate(int(f.Fd()), mode, off, size)
}

// exchange swaps two upper paths atomically.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
