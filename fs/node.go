//go:build linux || darwin

package fs

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is one inode of the view. Namespace state lives in the Overlay and is
// found by path; a node only holds what open handles share.
type node struct {
	fusefs.Inode
	o *Overlay

	fmu     sync.Mutex
	uf      *os.File   // the upper file, shared by all handles once copied up
	stale   []*os.File // older upper files still used by open handles
	ufIno   uint64
	handles []*handle
	dirty   atomic.Bool // written since its content was last recorded
	// passed and cached count the open handles whose I/O the kernel
	// passes to the upper file and those it sends to the overlay: the
	// kernel refuses to mix the two on one inode (passthrough.go).
	passed, cached int
	passWriters    int  // open passthrough handles that can write
	passWritten    bool // written by passthrough since the last cached open
	// last holds a directory's last attributes given to the kernel, for
	// when it is removed while still in use (a process's cwd). Files
	// answer from their open files instead; most nodes are files, and the
	// attributes would double their size.
	last *unix.Stat_t
}

func (n *node) remember(st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	n.fmu.Lock()
	if n.last == nil {
		n.last = new(unix.Stat_t)
	}
	*n.last = *st
	n.fmu.Unlock()
}

var _ = (fusefs.InodeEmbedder)((*node)(nil))

// path is the node's view path, or false when it was unlinked.
func (n *node) path() (string, bool) {
	var segs []string
	cur := n.EmbeddedInode()
	for !cur.IsRoot() {
		name, parent := cur.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, name)
		cur = parent
	}
	p := ""
	for i := len(segs) - 1; i >= 0; i-- {
		p = join(p, segs[i])
	}
	return p, true
}

func (n *node) upperIno() uint64 {
	n.fmu.Lock()
	defer n.fmu.Unlock()
	return n.ufIno
}

func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return fusefs.ToErrno(err)
}

func fillAttr(a *fuse.Attr, st *unix.Stat_t, ino uint64) {
	a.FromStat((*syscall.Stat_t)(unsafe.Pointer(st)))
	a.Ino = ino
}

// child returns the go-fuse inode for a view object.
func (n *node) child(ctx context.Context, ob *object, ino uint64, out *fuse.EntryOut) *fusefs.Inode {
	fillAttr(&out.Attr, &ob.st, ino)
	in := n.NewInode(ctx, &node{o: n.o}, fusefs.StableAttr{Mode: ob.ifmt(), Ino: ino})
	if cn, ok := in.Operations().(*node); ok {
		cn.remember(&ob.st)
	}
	return in
}

// childPath is the view path of name in the directory n.
func (n *node) childPath(name string) (string, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return "", syscall.ENOENT
	}
	return join(p, name), 0
}

// resolveSelf resolves p and checks that it still names this node: between a
// rename's reply and go-fuse moving its tree, a path can name another object.
// Must hold o.mu.
func (n *node) resolveSelf(p string) (object, error) {
	ob, err := n.o.resolve(p)
	if err != nil {
		return ob, err
	}
	if n.o.inoOf(p, &ob) != n.StableAttr().Ino {
		return ob, syscall.ENOENT
	}
	return ob, nil
}

var _ = (fusefs.NodeLookuper)((*node)(nil))

// Lookup finds name in the merged directory.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	ob, err := o.resolve(p)
	ino := o.inoOf(p, &ob)
	o.mu.Unlock()
	if err != nil {
		return nil, toErrno(err)
	}
	return n.child(ctx, &ob, ino, out), 0
}

var _ = (fusefs.NodeGetattrer)((*node)(nil))

// Getattr stats the view object, or the open file of an unlinked node.
func (n *node) Getattr(ctx context.Context, fh fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ino := n.StableAttr().Ino
	if p, ok := n.path(); ok {
		o := n.o
		o.mu.Lock()
		ob, err := n.resolveSelf(p)
		o.mu.Unlock()
		if err == nil {
			n.remember(&ob.st)
			fillAttr(&out.Attr, &ob.st, ino)
			return 0
		}
	}
	f := n.anyFile()
	if f == nil {
		// An unlinked directory (or a node renamed over): its last attributes.
		n.fmu.Lock()
		last := n.last
		var st unix.Stat_t
		if last != nil {
			st = *last
		}
		n.fmu.Unlock()
		if st.Mode == 0 {
			return syscall.ENOENT
		}
		fillAttr(&out.Attr, &st, ino)
		return 0
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return toErrno(err)
	}
	fillAttr(&out.Attr, &st, ino)
	return 0
}

// anyFile returns an open file holding the node's content, if any.
func (n *node) anyFile() *os.File {
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.uf != nil {
		return n.uf
	}
	for _, h := range n.handles {
		if h.lower != nil {
			return h.lower
		}
	}
	return nil
}

var _ = (fusefs.NodeReaddirer)((*node)(nil))

// Readdir lists the merged directory.
func (n *node) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	ob, err := o.resolve(p)
	var ents []dirent
	if err == nil {
		ents, err = o.readDir(p, &ob)
	}
	o.mu.Unlock()
	if err != nil {
		return nil, toErrno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		list = append(list, fuse.DirEntry{Name: e.name, Mode: e.mode, Ino: e.ino})
	}
	return fusefs.NewListDirStream(list), 0
}

var _ = (fusefs.NodeReadlinker)((*node)(nil))

// Readlink reads a symlink's target from its layer.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	ob, err := n.resolveSelf(p)
	if err != nil {
		return nil, toErrno(err)
	}
	var target string
	if ob.upper {
		target, err = os.Readlink(o.upperPath(p))
	} else {
		target, err = o.lower.readlink(p)
	}
	if err != nil {
		return nil, toErrno(err)
	}
	return []byte(target), 0
}

var _ = (fusefs.NodeStatfser)((*node)(nil))

// Statfs reports the lower filesystem's statistics.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(n.o.lower.fd, &st); err != nil {
		return toErrno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

// pinChild pins the open lazy handles of the child name of dir (at p).
func (o *Overlay) pinChild(dir *node, name, p string) {
	if ch := dir.GetChild(name); ch != nil {
		if cn, ok := ch.Operations().(*node); ok {
			cn.pin(p)
		}
	}
}

// callerOwn chowns a new upper object to the calling process's user.
func callerOwn(ctx context.Context, up string) {
	if c, ok := fuse.FromContext(ctx); ok && os.Geteuid() == 0 {
		unix.Lchown(up, int(c.Uid), int(c.Gid))
	}
}

// newObject is the end of every create: the object at p exists in the upper
// tree; record its after state and answer the kernel. A file created open
// (Create) is recorded at its close; everything else before this returns.
func (n *node) newObject(ctx context.Context, p string, isDir, open bool, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	o := n.o
	up := o.upperPath(p)
	callerOwn(ctx, up)
	o.created(p, isDir)
	rec := o.record
	if open {
		rec = o.commit
	}
	if err := rec(p); err != nil {
		o.logf("%v", err)
		return nil, syscall.EIO
	}
	ob, err := o.resolve(p)
	if err != nil {
		return nil, toErrno(err)
	}
	return n.child(ctx, &ob, o.inoOf(p, &ob), out), 0
}

// prepareCreate checks that p is free, records its before state and makes
// its parent exist in the upper tree. Must hold o.mu.
func (o *Overlay) prepareCreate(p string) syscall.Errno {
	if _, err := o.resolve(p); err == nil {
		return syscall.EEXIST
	}
	if errno := o.refuseEntries(parentOf(p), true); errno != 0 {
		return errno
	}
	if err := o.touch(p); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	if err := o.copyUpParents(p); err != nil {
		return toErrno(err)
	}
	return 0
}

var _ = (fusefs.NodeMkdirer)((*node)(nil))

// Mkdir creates an upper directory (opaque over a removed lower object).
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.prepareCreate(p); errno != 0 {
		return nil, errno
	}
	up := o.upperPath(p)
	o.upperDirsChanged()
	if err := unix.Mkdir(up, 0o700); err != nil {
		return nil, toErrno(err)
	}
	unix.Chmod(up, mode&0o7777)
	return n.newObject(ctx, p, true, false, out)
}

var _ = (fusefs.NodeSymlinker)((*node)(nil))

// Symlink creates an upper symlink.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.prepareCreate(p); errno != 0 {
		return nil, errno
	}
	if err := unix.Symlink(target, o.upperPath(p)); err != nil {
		return nil, toErrno(err)
	}
	return n.newObject(ctx, p, false, false, out)
}

var _ = (fusefs.NodeMknoder)((*node)(nil))

// Mknod creates fifos, sockets (bind of a unix socket) and empty regular
// files, and device files when the caller is root (as a local filesystem
// would allow). Sockets and devices live in the view only: the journal
// skips them (design decision 5, Skipped).
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	kind := mode & unix.S_IFMT
	switch kind {
	case unix.S_IFIFO, unix.S_IFREG, unix.S_IFSOCK:
		dev = 0
	case unix.S_IFCHR, unix.S_IFBLK:
		if c, ok := fuse.FromContext(ctx); !ok || c.Uid != 0 {
			return nil, syscall.EPERM
		}
	default:
		return nil, syscall.EPERM
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.prepareCreate(p); errno != 0 {
		return nil, errno
	}
	up := o.upperPath(p)
	if err := unix.Mknod(up, kind|0o600, int(dev)); err != nil {
		return nil, toErrno(err)
	}
	unix.Chmod(up, mode&0o7777)
	return n.newObject(ctx, p, false, false, out)
}

var _ = (fusefs.NodeLinker)((*node)(nil))

// Link makes name a copy of target: hard links are not kept across layers
// (design decision 5), so the new name is an independent file.
func (n *node) Link(ctx context.Context, target fusefs.InodeEmbedder, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	tn, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	src, ok := tn.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.refuseChange(src); errno != 0 {
		return nil, errno
	}
	defer o.readyContent(func() []contentNeed {
		if _, err := o.resolve(p); err == nil {
			return nil // EEXIST
		}
		return o.needsOf(src, true, false)
	})()
	ob, err := o.resolve(src)
	if err != nil {
		return nil, toErrno(err)
	}
	if ob.isDir() {
		return nil, syscall.EPERM
	}
	if errno := o.prepareCreate(p); errno != 0 {
		return nil, errno
	}
	if err := o.copyUp(src); err != nil {
		return nil, toErrno(err)
	}
	if err := copyObject(o.upperPath(src), o.upperPath(p)); err != nil {
		return nil, toErrno(err)
	}
	var st unix.Stat_t
	if unix.Lstat(o.upperPath(p), &st) == nil {
		o.wrote(uint64(st.Ino))
	}
	return n.newObject(ctx, p, false, false, out)
}

// copyObject copies an upper non-directory object with its mode and owner.
func copyObject(src, dst string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := unix.Symlink(t, dst); err != nil {
			return err
		}
	case unix.S_IFIFO:
		if err := unix.Mkfifo(dst, 0o600); err != nil {
			return err
		}
	default:
		in, err := openUpper(src, os.O_RDONLY)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := out.ReadFrom(in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	unix.Lchown(dst, int(st.Uid), int(st.Gid))
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		unix.Chmod(dst, uint32(st.Mode)&0o7777)
	}
	return nil
}

var _ = (fusefs.NodeUnlinker)((*node)(nil))

// Unlink removes a non-directory from the view.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.removeChild(name, false)
}

var _ = (fusefs.NodeRmdirer)((*node)(nil))

// Rmdir removes an empty directory from the view.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.removeChild(name, true)
}

func (n *node) removeChild(name string, dir bool) syscall.Errno {
	p, errno := n.childPath(name)
	if errno != 0 {
		return errno
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.refuseChange(p); errno != 0 {
		return errno
	}
	if errno := o.refuseEntries(parentOf(p), false); errno != 0 {
		return errno
	}
	if !dir {
		defer o.readyContent(func() []contentNeed { return o.needsOf(p, false, false) })()
	}
	ob, err := o.resolve(p)
	if err != nil {
		return toErrno(err)
	}
	if dir && !ob.isDir() {
		return syscall.ENOTDIR
	}
	if !dir && ob.isDir() {
		return syscall.EISDIR
	}
	if dir {
		ents, err := o.readDir(p, &ob)
		if err != nil {
			return toErrno(err)
		}
		if len(ents) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	if err := o.touch(p); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	o.pinChild(n, name, p)
	if err := o.remove(p, &ob); err != nil {
		return toErrno(err)
	}
	if err := o.record(p); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	return 0
}
