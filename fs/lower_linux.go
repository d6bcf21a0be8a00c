package fs

import "golang.org/x/sys/unix"

// openBeneath opens rel below dirfd without following any symlink and
// without leaving the tree (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS).
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(dirfd, rel, &how)
	if err == unix.ENOSYS {
		return unix.Openat(dirfd, rel, flags, 0)
	}
	return fd, err
}
