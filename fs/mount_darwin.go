package fs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
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

// abortConn: macFUSE has no connection control files; an unmounted file
// system's server stops when the kernel lets go of it.
func abortConn(dev uint64) error {
	return fmt.Errorf("abort fuse connection %d: not supported on macOS", dev)
}

// isMountPoint reports whether a file system of device dev is mounted at
// path.
func isMountPoint(path string, dev uint64) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, err
	}
	return uint64(st.Dev) == dev, nil
}

// conn is a mounted FUSE connection and the server answering it.
type conn struct{ server *fuse.Server }

// transport names how requests reach the server.
func (c *conn) transport() string { return "/dev/fuse" }

// passthrough: macFUSE has no backing files.
func (c *conn) passthrough() bool { return false }

// unmount detaches the mount and waits until the server has stopped.
func (c *conn) unmount() error { return c.server.Unmount() }

// stopDetached waits for the server of a mount detached by force: macFUSE
// ends the connection of a file system unmounted with MNT_FORCE.
func (c *conn) stopDetached(uint64) error {
	c.server.Wait()
	return nil
}

// serve mounts the overlay's root at o.path and starts serving it.
func serve(o *Overlay, opts *fusefs.Options) (*conn, error) {
	o.root = &node{o: o}
	server, err := fusefs.Mount(o.path, o.root, opts)
	if err != nil {
		return nil, err
	}
	return &conn{server: server}, nil
}

// directMountFlags: macFUSE mounts take no direct mount flags.
func directMountFlags(string) uintptr { return 0 }
