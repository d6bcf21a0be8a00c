package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/mountinfo"
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

// abortConn aborts the FUSE connection of the file system whose device is
// dev (/sys/fs/fuse/connections/N/abort, N its minor number): every reader
// of the device gets ENODEV, every later access to a copy of the mount
// ENOTCONN. Used only after the mount is gone from this namespace.
func abortConn(dev uint64) error {
	p := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", unix.Minor(dev))
	if err := os.WriteFile(p, []byte("1"), 0o200); err != nil {
		return fmt.Errorf("abort fuse connection %s: %w", p, err)
	}
	return nil
}

// isMountPoint reports whether a file system of device dev is mounted at
// path in this mount namespace (from /proc/self/mountinfo, without touching
// the mount itself, whose server may be stopping).
func isMountPoint(path string, dev uint64) (bool, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return false, err
	}
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	for _, m := range mounts {
		if m.Dev == want && m.Point == path {
			return true, nil
		}
	}
	return false, nil
}
