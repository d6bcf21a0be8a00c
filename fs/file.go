//go:build linux || darwin

package fs

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// handle is one open file. Reads go to the node's upper file once the node
// has one (so a reader opened before another handle copied the file up sees
// the new content), else to the handle's own lower file.
type handle struct {
	n     *node
	lower *os.File // opened at the first read that the page cache misses
	write bool
	pass  bool // the kernel reads and writes the upper file itself (passthrough.go)
	epoch atomic.Uint64
}

// keepCache keeps the kernel's page cache across opens. Safe: content only
// changes through this mount (the kernel updates its cache on those writes)
// or through SetView, which invalidates the pages of every changed file.
const keepCache = fuse.FOPEN_KEEP_CACHE

func isWrite(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

// ensureUF opens the node's upper file if it has none or if the upper tree
// now holds a different file at p. Must hold o.mu.
func (n *node) ensureUF(p string) error {
	up := n.o.upperPath(p)
	var st unix.Stat_t
	if err := unix.Lstat(up, &st); err != nil {
		return err
	}
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.uf != nil && n.ufIno == uint64(st.Ino) {
		return nil
	}
	f, err := openUpper(up, os.O_RDWR)
	if err != nil {
		if f, err = openUpper(up, os.O_RDONLY); err != nil {
			return err
		}
	}
	// An older upper file stays open for the handles still using it; it is
	// closed with the last handle.
	if n.uf != nil {
		n.stale = append(n.stale, n.uf)
	}
	n.uf, n.ufIno = f, uint64(st.Ino)
	return nil
}

// addHandle registers an open handle and returns what Open answers the
// kernel: h itself, or as a passHandle. Must hold o.mu.
func (n *node) addHandle(h *handle) fusefs.FileHandle {
	n.fmu.Lock()
	n.handles = append(n.handles, h)
	if h.pass {
		n.passed++
		if h.write {
			n.passWriters++
		}
	} else {
		n.cached++
	}
	n.fmu.Unlock()
	if h.write {
		n.o.writers[n]++
	}
	if h.pass {
		return passHandle{h}
	}
	return h
}

var _ = (fusefs.NodeOpener)((*node)(nil))

// Open opens a file: a write open copies it up first (recording its before
// state); a read open of an untouched file reads the lower tree.
func (n *node) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if isWrite(flags) {
		if errno := o.refuseOpen(p, flags); errno != 0 {
			return nil, 0, errno
		}
		defer o.readyContent(func() []contentNeed { return o.needsOf(p, true, false) })()
	}
	ob, err := n.resolveSelf(p)
	if err != nil {
		return nil, 0, toErrno(err)
	}
	if ob.ifmt() != unix.S_IFREG {
		return nil, 0, syscall.ELOOP
	}
	h := &handle{n: n, write: isWrite(flags)}
	h.epoch.Store(o.epoch.Load())
	switch {
	case h.write:
		if err := o.touch(p); err != nil {
			o.logf("%v", err)
			return nil, 0, syscall.EIO
		}
		if err := o.copyUp(p); err != nil {
			return nil, 0, toErrno(err)
		}
		if err := n.ensureUF(p); err != nil {
			return nil, 0, toErrno(err)
		}
		if flags&syscall.O_TRUNC != 0 {
			o.wrote(n.upperIno())
			if err := n.uf.Truncate(0); err != nil {
				return nil, 0, toErrno(err)
			}
			n.dirty.Store(true)
		}
	case ob.upper:
		if err := n.ensureUF(p); err != nil {
			return nil, 0, toErrno(err)
		}
	default:
		// A read-only open of an untouched file opens nothing yet: on a
		// warm run the kernel's page cache answers every read.
		return n.addHandle(h), keepCache | fuse.FOPEN_NOFLUSH, 0
	}
	h.pass = o.passThrough(n, h.write)
	return n.addHandle(h), n.cacheFlags(h), 0
}

// pin opens the lower files of the node's lazy read handles, before the node
// loses its path (unlink, rename over it). Must hold o.mu.
func (n *node) pin(p string) {
	n.fmu.Lock()
	lazy := false
	for _, h := range n.handles {
		lazy = lazy || h.lower == nil && !h.write
	}
	n.fmu.Unlock()
	if !lazy {
		return
	}
	if ob, err := n.o.resolve(p); err == nil && ob.upper {
		n.ensureUF(p)
		return
	}
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.uf != nil {
		return
	}
	for _, h := range n.handles {
		if h.lower == nil && !h.write {
			if f, err := n.o.lower.open(p); err == nil {
				h.lower = f
			}
		}
	}
}

var _ = (fusefs.NodeCreater)((*node)(nil))

// Create creates an upper file and opens it.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	p, errno := n.childPath(name)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.prepareCreate(p); errno != 0 {
		return nil, nil, 0, errno
	}
	up := o.upperPath(p)
	f, err := openUpper(up, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, nil, 0, toErrno(err)
	}
	f.Close()
	unix.Chmod(up, mode&0o7777)
	inode, errno := n.newObject(ctx, p, false, true, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	cn := inode.Operations().(*node)
	if err := cn.ensureUF(p); err != nil {
		return nil, nil, 0, toErrno(err)
	}
	o.wrote(cn.upperIno())
	h := &handle{n: cn, write: true}
	h.epoch.Store(o.epoch.Load())
	h.pass = o.passThrough(cn, true)
	o.linking[cn] = p
	return inode, cn.addHandle(h), cn.cacheFlags(h), 0
}

// file is the open file a handle reads and writes.
func (h *handle) file() *os.File {
	n := h.n
	n.fmu.Lock()
	if n.uf != nil {
		defer n.fmu.Unlock()
		return n.uf
	}
	if h.lower != nil {
		defer n.fmu.Unlock()
		return h.lower
	}
	n.fmu.Unlock()
	// First read of a lazy handle: open what the node's path names now.
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := n.path(); ok {
		if ob, err := n.resolveSelf(p); err == nil {
			if ob.upper {
				if n.ensureUF(p) == nil {
					return n.uf
				}
			} else if f, err := o.lower.open(p); err == nil {
				n.fmu.Lock()
				defer n.fmu.Unlock()
				if h.lower == nil {
					h.lower = f
				} else {
					f.Close()
				}
				if n.uf != nil {
					return n.uf
				}
				return h.lower
			}
		}
	}
	return nil
}

var _ = (fusefs.FileReader)((*handle)(nil))

// Read reads from the current content of the node.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f := h.file()
	if f == nil {
		return nil, syscall.EIO
	}
	k, err := f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, toErrno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// beforeWrite records the node's before state when this is the handle's
// first write in the active task.
func (h *handle) beforeWrite() syscall.Errno {
	o := h.n.o
	e := o.epoch.Load()
	if h.epoch.Load() == e {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := h.n.path(); ok {
		if err := o.touch(p); err != nil {
			o.logf("%v", err)
			return syscall.EIO
		}
	}
	h.epoch.Store(e)
	return 0
}

var _ = (fusefs.FileWriter)((*handle)(nil))

// Write writes to the node's upper file.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if !h.write {
		return 0, syscall.EBADF
	}
	o := h.n.o
	o.writes.Add(1)
	o.wmu.RLock()
	defer o.wmu.RUnlock()
	if errno := h.beforeWrite(); errno != 0 {
		return 0, errno
	}
	n := h.n
	if errno := o.checkSpace(off+int64(len(data)), int64(len(data))); errno != 0 {
		return 0, errno
	}
	n.o.wrote(n.upperIno())
	f := h.file()
	if f == nil {
		return 0, syscall.EIO
	}
	k, err := f.WriteAt(data, off)
	n.dirty.Store(true)
	return uint32(k), toErrno(err)
}

var _ = (fusefs.FileFlusher)((*handle)(nil))

// Flush (every close of a write handle) records the content written so far
// before close returns: a closed file is in the journal, whatever happens to
// this process next. Changes waiting for the flush timer go in the same
// journal write.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if !h.write {
		return 0
	}
	h.n.o.sawBlindWrites(h.n)
	return h.record()
}

// record writes the node's content and every waiting change into the
// journal before the close or fsync that called it returns; the content is
// hashed first, outside the overlay's lock.
func (h *handle) record() syscall.Errno {
	o := h.n.o
	o.prehash(h.n)
	if err := o.commitNode(h.n); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.flushPending(); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	return 0
}

var _ = (fusefs.FileFsyncer)((*handle)(nil))

// Fsync syncs the upper file, records its content and syncs the journal,
// so what was fsync'd survives a power cut. Any descriptor of the file
// syncs what every writer wrote, as on a local file system.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if f := h.file(); f == nil {
		return syscall.EIO
	} else if err := f.Sync(); err != nil {
		return toErrno(err)
	}
	o := h.n.o
	o.sawBlindWrites(h.n)
	if errno := h.record(); errno != 0 {
		return errno
	}
	return o.syncJournal()
}

var _ = (fusefs.FileReleaser)((*handle)(nil))

// Release records what is left to record and closes the files when the last
// handle of the node goes.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	n, o := h.n, h.n.o
	if h.write {
		// A passthrough writer may have written through a mapping until
		// now: what it left is recorded here.
		if h.pass && o.changedSinceHash(n) {
			o.sawBlindWrites(n)
		}
		o.prehash(n)
		if err := o.commitNode(n); err != nil {
			o.logf("%v", err)
		}
		o.mu.Lock()
		if o.writers[n]--; o.writers[n] <= 0 {
			delete(o.writers, n)
			delete(o.linking, n)
		}
		o.mu.Unlock()
	}
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if h.lower != nil { // set by pin under n.fmu
		h.lower.Close()
		h.lower = nil
	}
	for i, x := range n.handles {
		if x == h {
			n.handles = append(n.handles[:i], n.handles[i+1:]...)
			break
		}
	}
	if h.pass {
		n.passed--
		if h.write {
			n.passWriters--
			n.passWritten = true
		}
	} else {
		n.cached--
	}
	if len(n.handles) == 0 {
		if n.uf != nil {
			n.uf.Close()
		}
		for _, f := range n.stale {
			f.Close()
		}
		n.uf, n.ufIno, n.stale = nil, 0, nil
	}
	return 0
}

var _ = (fusefs.FileLseeker)((*handle)(nil))

// Lseek finds data and holes in the current content.
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	f := h.file()
	if f == nil {
		return 0, syscall.EIO
	}
	r, err := unix.Seek(int(f.Fd()), int64(off), int(whence))
	return uint64(r), toErrno(err)
}

var _ = (fusefs.FileAllocater)((*handle)(nil))

// Allocate preallocates space in the upper file.
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if !h.write {
		return syscall.EBADF
	}
	o := h.n.o
	o.wmu.RLock()
	defer o.wmu.RUnlock()
	if errno := h.beforeWrite(); errno != 0 {
		return errno
	}
	n := h.n
	if errno := o.checkSpace(int64(off+size), int64(size)); errno != 0 {
		return errno
	}
	n.o.wrote(n.upperIno())
	f := h.file()
	if f == nil {
		return syscall.EIO
	}
	err := allocate(f, mode, int64(off), int64(size))
	n.dirty.Store(true)
	return toErrno(err)
}

var _ = (fusefs.NodeSetattrer)((*node)(nil))

// Setattr changes mode, owner, size or times; the first change copies the
// object up and records its before state.
func (n *node) Setattr(ctx context.Context, fh fusefs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p, ok := n.path()
	if !ok {
		return n.setattrOrphan(in, out)
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if errno := o.refuseSetattr(p, in); errno != 0 {
		return errno
	}
	defer o.readyContent(func() []contentNeed { return o.needsOf(p, true, false) })()
	if _, err := n.resolveSelf(p); err != nil {
		if n.anyFile() != nil {
			return n.setattrOrphan(in, out)
		}
		return toErrno(err)
	}
	if err := o.touch(p); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	if err := o.copyUp(p); err != nil {
		return toErrno(err)
	}
	up := o.upperPath(p)
	if errno := n.applySetattr(p, up, in); errno != 0 {
		return errno
	}
	if err := o.record(p); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	ob, err := o.resolve(p)
	if err != nil {
		return toErrno(err)
	}
	fillAttr(&out.Attr, &ob.st, n.StableAttr().Ino)
	return 0
}

func (n *node) applySetattr(p, up string, in *fuse.SetAttrIn) syscall.Errno {
	var st unix.Stat_t
	if err := unix.Lstat(up, &st); err != nil {
		return toErrno(err)
	}
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if m, ok := in.GetMode(); ok && !isLink {
		if err := unix.Chmod(up, m&0o7777); err != nil {
			return toErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := unix.Lchown(up, u, g); err != nil {
			return toErrno(err)
		}
	}
	if sz, ok := in.GetSize(); ok {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return syscall.EINVAL
		}
		n.o.wrote(uint64(st.Ino))
		if err := unix.Truncate(up, int64(sz)); err != nil {
			return toErrno(err)
		}
		n.dirty.Store(false)
	}
	at, aok := in.GetATime()
	mt, mok := in.GetMTime()
	if aok || mok {
		ts := []unix.Timespec{{Nsec: utimeOmit}, {Nsec: utimeOmit}}
		if aok {
			ts[0] = unix.NsecToTimespec(at.UnixNano())
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mt.UnixNano())
		}
		var was unix.Stat_t
		known := unix.Lstat(up, &was) == nil && was.Mode&unix.S_IFMT == unix.S_IFREG
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, up, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return toErrno(err)
		}
		var now unix.Stat_t
		if _, sized := in.GetSize(); known && !sized && unix.Lstat(up, &now) == nil && now.Ino == was.Ino {
			// New times, same content: its blob stays known, and the
			// record needs no second read of the file under o.mu.
			n.o.retime(uint64(now.Ino), statMtimeNs(&was), statMtimeNs(&now))
		}
	}
	return 0
}

// setattrOrphan changes an unlinked file through its open file; nothing is
// recorded, the path is gone.
func (n *node) setattrOrphan(in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f := n.anyFile()
	if f == nil {
		return syscall.ENOENT
	}
	fd := int(f.Fd())
	if m, ok := in.GetMode(); ok {
		if err := unix.Fchmod(fd, m&0o7777); err != nil {
			return toErrno(err)
		}
	}
	if sz, ok := in.GetSize(); ok {
		if err := unix.Ftruncate(fd, int64(sz)); err != nil {
			return toErrno(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return toErrno(err)
	}
	fillAttr(&out.Attr, &st, n.StableAttr().Ino)
	return 0
}

// openUpper opens a file of the upper tree, never following a final symlink.
func openUpper(up string, flags int) (*os.File, error) {
	return os.OpenFile(up, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
}
