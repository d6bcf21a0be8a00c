package fs

import (
	"context"
	"fmt"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/xattr"
)

// xattrPath names p's object for the l*xattr calls: the upper file, or the
// lower one through the lower directory fd's /proc magic link (the lower
// tree is under the mount, so its own path would reach the overlay).
// Must hold o.mu.
func (o *Overlay) xattrPath(p string) (string, error) {
	ob, err := o.resolve(p)
	if err != nil {
		return "", err
	}
	if ob.upper {
		return o.upperPath(p), nil
	}
	return o.lowerXattrPath(p), nil
}

// lowerXattrPath names the lower object p for the l*xattr calls.
func (o *Overlay) lowerXattrPath(p string) string {
	if p == "" {
		return fmt.Sprintf("/proc/self/fd/%d", o.lower.fd)
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", o.lower.fd, p)
}

// copyXattrs gives the upper copy up of the lower object p its extended
// attributes. Must hold o.mu.
func (o *Overlay) copyXattrs(p, up string) error {
	return xattr.Copy(o.lowerXattrPath(p), up)
}

var _ = (fusefs.NodeGetxattrer)((*node)(nil))

// Getxattr reads an extended attribute of the view object.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return 0, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	xp, err := o.xattrPath(p)
	if err != nil {
		return 0, toErrno(err)
	}
	sz, err := unix.Lgetxattr(xp, attr, dest)
	return uint32(sz), toErrno(err)
}

var _ = (fusefs.NodeListxattrer)((*node)(nil))

// Listxattr lists the extended attributes of the view object.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return 0, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	xp, err := o.xattrPath(p)
	if err != nil {
		return 0, toErrno(err)
	}
	sz, err := unix.Llistxattr(xp, dest)
	return uint32(sz), toErrno(err)
}

// xattrChange copies p up and runs fn on the upper object. Extended
// attributes are not part of node states: the journal records nothing.
func (n *node) xattrChange(fn func(up string) error) syscall.Errno {
	p, ok := n.path()
	if !ok {
		return syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.touch(p); err != nil {
		return syscall.EIO
	}
	if err := o.copyUp(p); err != nil {
		return toErrno(err)
	}
	return toErrno(fn(o.upperPath(p)))
}

var _ = (fusefs.NodeSetxattrer)((*node)(nil))

// Setxattr sets an extended attribute on the upper copy.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.xattrChange(func(up string) error { return unix.Lsetxattr(up, attr, data, int(flags)) })
}

var _ = (fusefs.NodeRemovexattrer)((*node)(nil))

// Removexattr removes an extended attribute from the upper copy.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.xattrChange(func(up string) error { return unix.Lremovexattr(up, attr) })
}
