package fs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirReads lets the kernel read directories without opening them: the
// answer to its first OPENDIR is ENOSYS, after which Linux sends neither
// OPENDIR nor RELEASEDIR again and keeps every listing in its cache
// (FOPEN_CACHE_DIR), dropping it when the directory changes through the
// mount or when SetView invalidates it. A warm `find` or `git status` then
// costs no request per directory at all.
//
// The listing requests (READDIR, READDIRPLUS) then carry no handle; they
// are served through a handle that dirReads opens itself on the node, one
// per directory being read, taken afresh at every read from offset 0 and
// released when the read reaches the end.
type dirReads struct {
	fuse.RawFileSystem

	mu    sync.Mutex
	reads map[uint64]*dirRead // node id -> the read in progress
}

// dirRead is one directory read in progress: the internal handle and how
// many requests are using it now.
type dirRead struct {
	fh    uint64
	users int
	done  bool // replaced or finished: release when the last user is done
}

// maxDirReads bounds the reads left unfinished (a reader that stopped
// halfway, such as `ls | head`); older ones are released.
const maxDirReads = 256

func newDirReads(raw fuse.RawFileSystem) *dirReads {
	return &dirReads{RawFileSystem: raw, reads: map[uint64]*dirRead{}}
}

// OpenDir refuses, so the kernel stops asking (see dirReads).
func (d *dirReads) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

// ReadDir lists a directory without a kernel handle.
func (d *dirReads) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return d.read(cancel, in, out, d.RawFileSystem.ReadDir)
}

// ReadDirPlus lists a directory and looks up its entries without a kernel
// handle.
func (d *dirReads) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return d.read(cancel, in, out, d.RawFileSystem.ReadDirPlus)
}

func (d *dirReads) read(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList,
	next func(<-chan struct{}, *fuse.ReadIn, *fuse.DirEntryList) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return next(cancel, in, out)
	}
	r, st := d.acquire(cancel, in)
	if !st.Ok() {
		return st
	}
	inner := *in
	inner.Fh = r.fh
	st = next(cancel, &inner, out)
	d.releaseRead(in.NodeId, r, !st.Ok() || len(out.Bytes()) == 0)
	return st
}

// acquire returns the read of directory in.NodeId, opening a new one when
// the kernel starts from the beginning or none is open.
func (d *dirReads) acquire(cancel <-chan struct{}, in *fuse.ReadIn) (*dirRead, fuse.Status) {
	d.mu.Lock()
	r := d.reads[in.NodeId]
	if r != nil && in.Offset != 0 {
		r.users++
		d.mu.Unlock()
		return r, fuse.OK
	}
	if r != nil {
		d.retire(in.NodeId, r)
	}
	d.mu.Unlock()

	open := fuse.OpenIn{InHeader: in.InHeader, Flags: in.Flags}
	var oout fuse.OpenOut
	if st := d.RawFileSystem.OpenDir(cancel, &open, &oout); !st.Ok() {
		return nil, st
	}
	r = &dirRead{fh: oout.Fh, users: 1}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.reads[in.NodeId]; old != nil {
		d.retire(in.NodeId, old)
	}
	if len(d.reads) >= maxDirReads {
		for id, old := range d.reads {
			if old.users == 0 {
				d.retire(id, old)
			}
		}
	}
	d.reads[in.NodeId] = r
	return r, fuse.OK
}

// releaseRead ends one request's use of r; finished reads are released.
func (d *dirReads) releaseRead(id uint64, r *dirRead, finished bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.users--
	if finished && d.reads[id] == r {
		d.retire(id, r)
		return
	}
	if r.done && r.users == 0 {
		d.closeRead(id, r)
	}
}

// retire takes r out of the table and releases it once unused. Must hold d.mu.
func (d *dirReads) retire(id uint64, r *dirRead) {
	if d.reads[id] == r {
		delete(d.reads, id)
	}
	r.done = true
	if r.users == 0 {
		d.closeRead(id, r)
	}
}

func (d *dirReads) closeRead(id uint64, r *dirRead) {
	if r.fh == 0 {
		return
	}
	d.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: fuse.InHeader{NodeId: id}, Fh: r.fh})
	r.fh = 0
}

// FsyncDir syncs a directory the kernel holds no handle for, through a
// handle opened for the call.
func (d *dirReads) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return d.RawFileSystem.FsyncDir(cancel, in)
	}
	open := fuse.OpenIn{InHeader: in.InHeader}
	var oout fuse.OpenOut
	if st := d.RawFileSystem.OpenDir(cancel, &open, &oout); !st.Ok() {
		return st
	}
	inner := *in
	inner.Fh = oout.Fh
	st := d.RawFileSystem.FsyncDir(cancel, &inner)
	d.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: fuse.InHeader{NodeId: in.NodeId}, Fh: oout.Fh})
	return st
}
