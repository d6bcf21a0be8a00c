//go:build unix

package session

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByCaller reports whether the caller's effective user owns fi, and
// the owner's uid.
func ownedByCaller(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) == os.Geteuid()
}

// othersCanWrite reports whether users other than the owner may write to
// the directory.
func othersCanWrite(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o022 != 0 }
