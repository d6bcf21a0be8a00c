package journal

import (
	"fmt"
	"syscall"
)

// Badger writes its value log and memtables through memory-mapped, sparse
// files: when the file system fills up, a write does not fail with ENOSPC,
// the process dies of SIGBUS. So every write first checks that the journal's
// file system keeps spaceReserve free beyond what the write needs, and
// fails with an error wrapping syscall.ENOSPC otherwise. Another process
// filling the disk between the check and the write can still hit the crash;
// the reserve makes that window small.
const (
	spaceReserve = 64 << 20
	// openReserve is what Open needs (it writes memtable headers).
	openReserve = 16 << 20
)

// testFreeBytes, when set by a test, replaces the measured free space.
var testFreeBytes func() int64

func checkSpace(dir string, need, reserve int64) error {
	free, ok := freeBytes(dir)
	if testFreeBytes != nil {
		free, ok = testFreeBytes(), true
	}
	if !ok || free >= need+reserve {
		return nil
	}
	return fmt.Errorf("%w: %d MiB free on the journal's file system, a write of %d KiB needs %d MiB more kept free",
		syscall.ENOSPC, free>>20, need>>10, reserve>>20)
}
