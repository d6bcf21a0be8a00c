//go:build linux || darwin

package fs

import (
	"context"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirHandle is an open directory: the merged listing taken at open, with the
// stat of every entry so READDIRPLUS needs no second lookup.
type dirHandle struct {
	n      *node
	ents   []dirent
	loaded bool
	pos    int
}

var _ = (fusefs.NodeOpendirHandler)((*node)(nil))

// OpendirHandle lists the merged directory. The kernel may keep the listing
// (FOPEN_CACHE_DIR, FOPEN_KEEP_CACHE): it drops it itself when an entry is
// created, removed or renamed through the mount, and SetView invalidates the
// directory of every path it changes.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if _, ok := n.path(); !ok {
		return nil, 0, syscall.ENOENT
	}
	// The listing is taken at the first read: when the kernel's cache
	// answers, nothing is read at all.
	return &dirHandle{n: n}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

func (d *dirHandle) load() syscall.Errno {
	if d.loaded {
		return 0
	}
	n, o := d.n, d.n.o
	p, ok := n.path()
	if !ok {
		return syscall.ENOENT
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ob, err := n.resolveSelf(p)
	if err != nil {
		return toErrno(err)
	}
	if d.ents, err = o.readDir(p, &ob); err != nil {
		return toErrno(err)
	}
	d.loaded = true
	return 0
}

var _ = (fusefs.FileReaddirenter)((*dirHandle)(nil))

// Readdirent returns the next entry.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := d.load(); errno != 0 {
		return nil, errno
	}
	if d.pos >= len(d.ents) {
		return nil, 0
	}
	e := &d.ents[d.pos]
	d.pos++
	return &fuse.DirEntry{Name: e.name, Mode: e.mode, Ino: e.ino, Off: uint64(d.pos)}, 0
}

var _ = (fusefs.FileSeekdirer)((*dirHandle)(nil))

// Seekdir moves to the entry after offset off.
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := d.load(); errno != 0 {
		return errno
	}
	if off > uint64(len(d.ents)) {
		off = uint64(len(d.ents))
	}
	d.pos = int(off)
	return 0
}

var _ = (fusefs.FileReleasedirer)((*dirHandle)(nil))

// Releasedir drops the listing.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) { d.ents = nil }

var _ = (fusefs.FileLookuper)((*dirHandle)(nil))

// Lookup answers READDIRPLUS from the stat taken with the listing.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	if d.pos > 0 && d.pos <= len(d.ents) && d.ents[d.pos-1].name == name {
		e := &d.ents[d.pos-1]
		ob := object{st: e.st}
		return d.n.child(ctx, &ob, e.ino, out), 0
	}
	return d.n.Lookup(ctx, name, out)
}

var _ = (fusefs.FileFsyncdirer)((*dirHandle)(nil))

// Fsyncdir records every pending change and syncs the journal, so the
// directory's entries as the agent sees them survive a power cut.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	o := d.n.o
	o.mu.Lock()
	err := o.flushPending()
	o.mu.Unlock()
	if err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	return o.syncJournal()
}
