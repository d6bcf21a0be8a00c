//go:build linux

package fs

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixKnownFail lists the posixtest cases the overlay cannot pass, with why.
var posixKnownFail = map[string]string{
	// Hard links are copies (design decision 5: the link relation is not
	// kept across layers), so the new name has its own inode and nlink 1.
	"Link": "hard links are copies",
	// The test expects two fds of one process to conflict, which is what
	// go-fuse's loopback gives with per-fd OFD locks; POSIX record locks
	// belong to the process, so a local filesystem (TestPosixNativeLocks)
	// grants the second lock like the overlay's kernel-side locking does.
	"FcntlFlockLocksFile": "POSIX locks are per process; a local filesystem behaves the same",
	// O_TMPFILE is answered EOPNOTSUPP (the suite itself would skip): a
	// nameless file has no path to record, and linking it in would need
	// Link of an orphan node.
	"Tmpfile": "O_TMPFILE is not supported",
	// The staging dir's filesystem limits an xattr to a block (ext4: 4 KiB):
	// the suite skips XAttrLarge on such a backing filesystem.
	"XAttrLarge": "the staging filesystem does not take 8 KiB xattrs",
}

// TestPosixNativeLocks shows that FcntlFlockLocksFile fails on a plain
// directory too, i.e. the overlay behaves like a local filesystem.
func TestPosixNativeLocks(t *testing.T) {
	ft := &testing.T{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		posixtest.FcntlFlockLocksFile(ft, t.TempDir())
	}()
	<-done
	if !ft.Failed() {
		t.Fatal("FcntlFlockLocksFile passes on a local filesystem; the overlay should too")
	}
}

func TestPosix(t *testing.T) {
	forEachServing(t, testPosix)
}

func testPosix(t *testing.T) {
	var names []string
	for n := range posixtest.All {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if why, ok := posixKnownFail[name]; ok {
				t.Logf("known failure: %s", why)
				return
			}
			// The suite expects an empty directory: give it an empty lower
			// directory beside lower content.
			o := mountTest(t, func(root string) {
				fillSample(root)
				if err := os.Mkdir(filepath.Join(root, "work"), 0o755); err != nil {
					t.Fatal(err)
				}
			})
			posixtest.All[name](t, filepath.Join(o.root, "work"))
		})
	}
}
