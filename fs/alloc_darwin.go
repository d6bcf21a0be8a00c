package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

func allocate(f *os.File, mode uint32, off, size int64) error {
	return unix.ENOTSUP
}

// exchange swaps two upper paths atomically.
func exchange(a, b string) error {
	return unix.RenamexNp(a, b, unix.RENAME_SWAP)
}
