//go:build linux || darwin

package fs

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
)

// stateOf is the node state p has in the view now; file content is hashed
// into the journal unless its blob is already known. Must hold o.mu.
func (o *Overlay) stateOf(p string) (journal.NodeState, error) {
	// A path below a non-directory does not exist, even where resolving it
	// would follow a symlink.
	for d := parentOf(p); d != ""; d = parentOf(d) {
		ob, err := o.resolve(d)
		if err != nil || !ob.isDir() {
			return journal.NodeState{}, nil
		}
	}
	ob, err := o.resolve(p)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return journal.NodeState{}, nil
	}
	if err != nil {
		return journal.NodeState{}, fmt.Errorf("state of %s: %w", p, err)
	}
	mode := nodeMode(uint32(ob.st.Mode))
	switch ob.ifmt() {
	case unix.S_IFDIR:
		return journal.NodeState{Kind: journal.Dir, Mode: mode}, nil
	case unix.S_IFIFO:
		return journal.NodeState{Kind: journal.Fifo, Mode: mode}, nil
	case unix.S_IFLNK:
		var target string
		if ob.upper {
			target, err = os.Readlink(o.upperPath(p))
		} else {
			target, err = o.lower.readlink(p)
		}
		if err != nil {
			return journal.NodeState{}, fmt.Errorf("state of %s: %w", p, err)
		}
		return journal.NodeState{Kind: journal.Symlink, Target: target}, nil
	case unix.S_IFREG:
		ref, err := o.blobOf(p, &ob)
		if err != nil {
			return journal.NodeState{}, fmt.Errorf("state of %s: %w", p, err)
		}
		return journal.NodeState{Kind: journal.File, Mode: mode, Size: ref.Size, Blob: ref}, nil
	}
	// Sockets and devices are not recorded (design decision 5): their
	// path is reported (Skipped), as a copy-mode scan does.
	o.skipped[p], o.specials[p] = true, true
	return journal.NodeState{}, nil
}

// goneSpecials lists, sorted, the sockets and device files of the lower
// tree that the view no longer shows. Must hold o.mu.
func (o *Overlay) goneSpecials() []string {
	var gone []string
	for p := range o.specials {
		var st unix.Stat_t
		if o.lower.lstat(p, &st) != nil || !special(uint32(st.Mode)) {
			continue
		}
		if _, err := o.resolve(p); errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	return gone
}

// special reports a socket or device file mode.
func special(mode uint32) bool {
	switch mode & unix.S_IFMT {
	case unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		return true
	}
	return false
}

// RemovedSpecials returns, after Unmount, the sockets and device files of
// the real tree that the view had removed when it was unmounted. The
// journal records nothing of them; the session's end removes them from the
// real tree, as the agent would have in copy mode.
func (o *Overlay) RemovedSpecials() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.removedSpec
}

// Skipped returns, sorted, the paths of the sockets and device files the
// view created, changed or removed since the last call: the journal records
// nothing of them (design decision 5), as a copy-mode scan skips them.
func (o *Overlay) Skipped() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := make([]string, 0, len(o.skipped))
	for p := range o.skipped {
		s = append(s, p)
	}
	clear(o.skipped)
	sort.Strings(s)
	return s
}

// blobOf returns the content blob of the file p.
func (o *Overlay) blobOf(p string, ob *object) (journal.BlobRef, error) {
	if !ob.upper {
		if ref, ok := o.lowerBlobs[p]; ok {
			return ref, nil
		}
		f, err := o.lower.open(p)
		if err != nil {
			return journal.BlobRef{}, err
		}
		defer f.Close()
		ref, err := o.store.PutBlob(f)
		if err != nil {
			return ref, err
		}
		o.lowerBlobs[p] = ref
		return ref, nil
	}
	return o.hashUpper(&ob.st, func() (*os.File, error) {
		return openUpper(o.upperPath(p), os.O_RDONLY|oNoatime)
	})
}

// hashUpper returns the blob of the upper file whose attributes are st,
// opening and hashing it only when its content is not known yet. The result
// is kept unless a write came in while it was read. Safe without o.mu.
func (o *Overlay) hashUpper(st *unix.Stat_t, open func() (*os.File, error)) (journal.BlobRef, error) {
	ino := uint64(st.Ino)
	mtime := statMtimeNs(st)
	o.hmu.Lock()
	e := o.hashed[ino]
	if e == nil || e.mtime != mtime {
		e = &hashEntry{mtime: mtime}
		o.hashed[ino] = e
	}
	if e.valid {
		ref := e.blob
		o.hmu.Unlock()
		return ref, nil
	}
	gen := e.gen
	o.hmu.Unlock()
	f, err := open()
	if err != nil {
		return journal.BlobRef{}, err
	}
	defer f.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
		return journal.BlobRef{}, err
	}
	ref, err := o.store.PutBlob(sparse.NewReader(f, fst.Size)) // holes are not read
	if err != nil {
		return ref, err
	}
	o.hmu.Lock()
	if e.gen == gen {
		e.valid, e.blob, e.seen = true, ref, stampOf(&fst)
	}
	o.hmu.Unlock()
	return ref, nil
}

// prehash hashes the content of a file node written through its handles
// into the journal before its record is written under o.mu: hashing a large
// file takes seconds, and the rest of the mount must not wait for it. The
// record then finds the content known (unless more was written meanwhile,
// and then hashes again).
func (o *Overlay) prehash(n *node) {
	if !n.dirty.Load() {
		return
	}
	ino := n.upperIno()
	p, ok := n.path()
	if ino == 0 || !ok {
		return
	}
	f, err := openUpper(o.upperPath(p), os.O_RDONLY|oNoatime)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || uint64(st.Ino) != ino {
		f.Close()
		return // renamed meanwhile: the record hashes what the path names
	}
	if _, err := o.hashUpper(&st, func() (*os.File, error) { return f, nil }); err != nil {
		o.logf("%v", err)
	}
}

// wrote invalidates the cached blob of an upper file inode.
func (o *Overlay) wrote(ino uint64) {
	o.hmu.Lock()
	e := o.hashed[ino]
	if e == nil {
		e = &hashEntry{}
		o.hashed[ino] = e
	}
	e.gen++
	e.valid = false
	o.hmu.Unlock()
}

// retime keeps the cached blob of an upper file inode whose modification
// time was set from mtime to now without a change of content (utimes).
func (o *Overlay) retime(ino uint64, mtime, now int64) {
	o.hmu.Lock()
	if e := o.hashed[ino]; e != nil && e.valid && e.mtime == mtime {
		e.mtime = now
	}
	o.hmu.Unlock()
}

// touch records p's state before its first change in the active task. Must
// hold o.mu, and be called before p changes.
func (o *Overlay) touch(p string) error {
	if _, ok := o.before[p]; ok || p == "" {
		return nil
	}
	if o.layerMayExist {
		c, ok, err := o.store.LayerChange(o.task, p)
		if err != nil {
			return fmt.Errorf("record %s: %w", p, err)
		}
		if ok {
			o.before[p] = c.Before
			o.written[p] = true
			return nil
		}
	}
	st, err := o.stateOf(p)
	if err != nil {
		return err
	}
	o.before[p] = st
	return nil
}

// flushDelay is how long a change made through an open file (a new file,
// written content) may wait in memory before its record is written, when
// the file is not closed or fsync'd first: a file being written is recorded
// at its close, not at every write. Namespace changes and attribute changes
// are recorded before they return (record).
const flushDelay = 50 * time.Millisecond

// mark marks paths as changed. Must hold o.mu, and p must have been touched.
func (o *Overlay) mark(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, ok := o.before[p]; !ok {
			return fmt.Errorf("record %s: no before state", p)
		}
		o.pending[p] = true
	}
	return nil
}

// record writes the after states of paths (and of every change still
// waiting) into the active task's layer before it returns: when an unlink,
// rename, mkdir or chmod returns to the agent, it is in the journal. Must
// hold o.mu, and p must have been touched.
func (o *Overlay) record(paths ...string) error {
	if err := o.mark(paths...); err != nil {
		return err
	}
	return o.flushPending()
}

// commit marks paths as changed: their after states are written into the
// active task's layer within flushDelay, or at the next close or record.
// Used for what an open file handle will record at its close anyway (a new
// file, written content). Must hold o.mu, and p must have been touched.
func (o *Overlay) commit(paths ...string) error {
	if err := o.mark(paths...); err != nil {
		return err
	}
	if len(o.pending) > 0 && !o.flushArmed {
		o.flushArmed = true
		time.AfterFunc(flushDelay, func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.flushArmed = false
			if err := o.flushPending(); err != nil {
				o.logf("%v", err)
			}
		})
	}
	return nil
}

// syncJournal makes every record written so far durable (fsync, fsyncdir).
// Records are otherwise written without a sync: that survives a kill of
// timeagent, not a power cut.
func (o *Overlay) syncJournal() syscall.Errno {
	if err := o.store.Sync(); err != nil {
		o.logf("%v", err)
		return syscall.EIO
	}
	return 0
}

// flushPending writes the after states of every pending path (their states
// now). A path back at its before state is dropped from the layer. Must
// hold o.mu.
func (o *Overlay) flushPending() error {
	_, err := o.flushPendingStates()
	return err
}

// flushPendingStates is flushPending, returning the states it read.
func (o *Overlay) flushPendingStates() (map[string]journal.NodeState, error) {
	if len(o.pending) == 0 {
		return nil, nil
	}
	var changes []journal.Change
	var drop []string
	var errs []error
	states := make(map[string]journal.NodeState, len(o.pending))
	for p := range o.pending {
		b := o.before[p]
		after, err := o.stateOf(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states[p] = after
		delete(o.pending, p)
		if after.Equal(b) {
			if o.written[p] {
				drop = append(drop, p)
				o.written[p] = false
			}
			continue
		}
		changes = append(changes, journal.Change{Path: p, Before: b, After: after})
		o.written[p] = true
	}
	if len(drop) > 0 {
		if err := o.store.DeleteChanges(o.task, drop); err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", drop[0], err))
		}
	}
	if len(changes) > 0 {
		if err := o.store.PutChanges(o.task, changes); err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", changes[0].Path, err))
		}
	}
	return states, errors.Join(errs...)
}

// commitNode records the content of a file node written through its handles.
// The dirty mark is consumed under o.mu, so a write is recorded in exactly
// the task that was active when it was made.
func (o *Overlay) commitNode(n *node) error {
	if !n.dirty.Load() {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for try := 0; ; try++ {
		p, ok := n.path()
		if !ok {
			n.dirty.Store(false)
			return nil // unlinked: its removal is already recorded
		}
		// A rename of this node may have changed the upper tree but not yet
		// go-fuse's tree: wait until the path names the node's file.
		var st unix.Stat_t
		if ino := n.upperIno(); ino != 0 && (unix.Lstat(o.upperPath(p), &st) != nil || uint64(st.Ino) != ino) {
			if try < 50 {
				o.mu.Unlock()
				time.Sleep(time.Millisecond)
				o.mu.Lock()
				continue
			}
			return nil
		}
		if !n.dirty.Swap(false) {
			return nil
		}
		if err := o.touch(p); err != nil {
			n.dirty.Store(true)
			return err
		}
		if err := o.commit(p); err != nil {
			n.dirty.Store(true)
			return err
		}
		return nil
	}
}
