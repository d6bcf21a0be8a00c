package fs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Supported reports whether FUSE overlays can be mounted here; the error
// says why not.
func Supported() error {
	for _, p := range []string{"/Library/Filesystems/macfuse.fs", "/Library/Filesystems/osxfuse.fs"} {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("fuse: macFUSE is not installed")
}

// Unmount detaches a mount at path left by a dead process (recovery).
func Unmount(path string) error {
	err := unix.Unmount(path, 0)
	if err == unix.EBUSY {
		err = unix.Unmount(path, unix.MNT_FORCE)
	}
	if err == nil || err == unix.EINVAL || err == unix.ENOENT {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}
