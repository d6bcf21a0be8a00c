package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// Supported reports whether FUSE overlays can be mounted here; the error
// says why not.
func Supported() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("fuse: cannot open /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return errors.New("fuse: not root and no fusermount helper installed")
			}
		}
	}
	return nil
}

// Unmount detaches a mount at path left by a dead process (recovery). A path
// that is not a mount point is not an error.
func Unmount(path string) error {
	err := unix.Unmount(path, 0)
	if err == unix.EBUSY {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	if err == nil || err == unix.EINVAL || err == unix.ENOENT {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}
