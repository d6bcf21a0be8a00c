//go:build unix

package journal

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirLocked reports whether another open journal (in this or another
// process) holds badger's flock on dir. It probes with a non-blocking flock
// of its own, released at once.
func dirLocked(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
