//go:build linux || darwin

package fs

import (
	"context"
	"os"
	"strings"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Rename flags as the kernel passes them.
const (
	renameNoreplace = 0x1
	renameExchange  = 0x2
)

var _ = (fusefs.NodeRenamer)((*node)(nil))

// Rename moves name to newName in newParent. The source subtree is copied up
// whole (a renamed directory's lower children must follow it), every old and
// new path is recorded, and the destination hides the lower tree below it.
func (n *node) Rename(ctx context.Context, name string, newParent fusefs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	p, errno := n.childPath(name)
	if errno != 0 {
		return errno
	}
	q, errno := np.childPath(newName)
	if errno != 0 {
		return errno
	}
	if flags&^uint32(renameNoreplace|renameExchange) != 0 {
		return syscall.EINVAL
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	// The moved subtrees are copied up, and a replaced file's before state
	// hashed, outside o.mu (content.go); then everything is checked again.
	exchange := flags&renameExchange != 0
	defer o.readyContent(func() []contentNeed {
		if _, _, _, errno := o.checkRename(p, q, flags); errno != 0 || p == q {
			return nil
		}
		return append(o.needsOf(p, true, true), o.needsOf(q, exchange, exchange)...)
	})()
	src, dst, exists, errno := o.checkRename(p, q, flags)
	if errno != 0 || p == q {
		return errno
	}
	if exchange {
		return toErrno(o.exchange(p, q))
	}
	if exists {
		o.pinChild(np, newName, q)
	}
	return toErrno(o.move(p, q, &src, exists, &dst))
}

// checkRename resolves the source and destination of a rename of p to q
// and answers the errors the rename must fail with. Must hold o.mu.
func (o *Overlay) checkRename(p, q string, flags uint32) (src, dst object, exists bool, errno syscall.Errno) {
	src, err := o.resolve(p)
	if err != nil {
		return src, dst, false, toErrno(err)
	}
	dst, derr := o.resolve(q)
	exists = derr == nil
	if p == q {
		return src, dst, exists, 0
	}
	if strings.HasPrefix(q, p+"/") {
		return src, dst, exists, syscall.EINVAL
	}
	// Immutable and append-only objects and directories (flags.go).
	errno = o.refuseChange(p)
	if errno == 0 {
		errno = o.refuseEntries(parentOf(p), false)
	}
	if errno == 0 {
		errno = o.refuseEntries(parentOf(q), !exists)
	}
	if errno == 0 && exists {
		errno = o.refuseChange(q)
	}
	if errno != 0 {
		return src, dst, exists, errno
	}
	if flags&renameExchange != 0 {
		if !exists {
			return src, dst, exists, syscall.ENOENT
		}
		if strings.HasPrefix(p, q+"/") {
			return src, dst, exists, syscall.EINVAL
		}
		return src, dst, exists, 0
	}
	if exists {
		if flags&renameNoreplace != 0 {
			return src, dst, exists, syscall.EEXIST
		}
		switch {
		case src.isDir() && !dst.isDir():
			return src, dst, exists, syscall.ENOTDIR
		case !src.isDir() && dst.isDir():
			return src, dst, exists, syscall.EISDIR
		case dst.isDir():
			ents, err := o.readDir(q, &dst)
			if err != nil {
				return src, dst, exists, toErrno(err)
			}
			if len(ents) > 0 {
				return src, dst, exists, syscall.ENOTEMPTY
			}
		}
	}
	return src, dst, exists, 0
}

// subtree lists p and, for a directory, every view path below it.
func (o *Overlay) subtree(p string) ([]string, error) {
	var out []string
	err := o.walk(p, func(c string, ob *object) error {
		out = append(out, c)
		return nil
	})
	return out, err
}

func rebase(c, from, to string) string { return to + c[len(from):] }

// move renames p to q in the view. Must hold o.mu.
func (o *Overlay) move(p, q string, src *object, exists bool, dst *object) error {
	olds, err := o.subtree(p)
	if err != nil {
		return err
	}
	paths := make([]string, 0, 2*len(olds))
	for _, c := range olds {
		paths = append(paths, c, rebase(c, p, q))
	}
	for _, c := range paths {
		if err := o.touch(c); err != nil {
			return err
		}
	}
	for _, c := range olds {
		if err := o.copyUp(c); err != nil {
			return err
		}
	}
	if err := o.copyUpParents(q); err != nil {
		return err
	}
	if exists {
		if err := o.remove(q, dst); err != nil {
			return err
		}
	}
	o.upperDirsChanged()
	if err := os.Rename(o.upperPath(p), o.upperPath(q)); err != nil {
		return err
	}
	o.moveMaps(p, q)
	var st unix.Stat_t
	if o.lowerVisible(p) && o.lower.lstat(p, &st) == nil {
		o.whiteout[p] = true
	}
	delete(o.whiteout, q)
	if src.isDir() {
		o.opaque[q] = true
	}
	return o.record(paths...)
}

// moveMaps moves the inode numbers and opaque marks of p's subtree to q;
// whiteouts below p no longer matter (the subtree is wholly upper now).
func (o *Overlay) moveMaps(p, q string) {
	pre := p + "/"
	if ino, ok := o.inos[p]; ok {
		o.inos[q] = ino
		delete(o.inos, p)
	}
	for k, v := range o.inos {
		if strings.HasPrefix(k, pre) {
			delete(o.inos, k)
			o.inos[rebase(k, p, q)] = v
		}
	}
	delete(o.opaque, p)
	for k := range o.opaque {
		if strings.HasPrefix(k, pre) {
			delete(o.opaque, k)
			o.opaque[rebase(k, p, q)] = true
		}
	}
	for k := range o.whiteout {
		if strings.HasPrefix(k, pre) {
			delete(o.whiteout, k)
		}
	}
}

// exchange swaps p and q (RENAME_EXCHANGE). Must hold o.mu.
func (o *Overlay) exchange(p, q string) error {
	ps, err := o.subtree(p)
	if err != nil {
		return err
	}
	qs, err := o.subtree(q)
	if err != nil {
		return err
	}
	var paths []string
	for _, c := range ps {
		paths = append(paths, c, rebase(c, p, q))
	}
	for _, c := range qs {
		paths = append(paths, c, rebase(c, q, p))
	}
	for _, c := range paths {
		if err := o.touch(c); err != nil {
			return err
		}
	}
	for _, c := range append(ps, qs...) {
		if err := o.copyUp(c); err != nil {
			return err
		}
	}
	o.upperDirsChanged()
	if err := exchange(o.upperPath(p), o.upperPath(q)); err != nil {
		return err
	}
	const tmp = "\x00exchange"
	o.moveMaps(p, tmp)
	o.moveMaps(q, p)
	o.moveMaps(tmp, q)
	for _, c := range []string{p, q} {
		var st unix.Stat_t
		if unix.Lstat(o.upperPath(c), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			o.opaque[c] = true
		} else {
			delete(o.opaque, c)
		}
	}
	return o.record(paths...)
}
