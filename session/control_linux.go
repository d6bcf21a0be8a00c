package session

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// withSocketPath calls fn with a name for the socket at p that fits in a
// socket address: p itself, or, when p is too long, the same file reached
// through a descriptor of its directory (/proc/self/fd/N/name).
func withSocketPath(p string, fn func(string) error) error {
	if len(p) <= maxSocketPath {
		return fn(p)
	}
	dir := filepath.Dir(p)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(p)))
}
