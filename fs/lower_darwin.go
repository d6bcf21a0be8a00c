package fs

import "golang.org/x/sys/unix"

// openBeneath opens rel below dirfd. Darwin has no openat2: the final
// component is opened with O_NOFOLLOW; intermediate components are
// directories the overlay has already resolved in the lower tree, which
// nothing but the overlay can reach while it is mounted.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	return unix.Openat(dirfd, rel, flags|unix.O_NOFOLLOW, 0)
}
