//go:build linux || darwin

package fs

import (
	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
)

// FUSE passthrough (Linux 6.9 and later): for a file open on a passHandle
// the kernel reads and writes the node's upper file itself, so neither
// reads nor writes reach the overlay. A file is passed through only once it
// is in the upper tree, that is after its first change has been recorded
// (copy-up happens at the open for writing, as before): the lower files of
// untouched paths keep being read through the overlay and the page cache,
// because a copy-up cannot move a reader that the kernel bound to the lower
// file.
//
// The kernel binds one backing file to an inode and refuses to mix passed
// and cached opens of it, so a node opens the way its open handles already
// do (node.passed, node.cached). What the overlay no longer sees it makes
// up for where it matters:
//
//   - a passthrough writer is assumed to have written at every close,
//     fsync, checkpoint and view change (sawBlindWrites), so its content is
//     hashed and recorded then as for any written file; its release records
//     it again when the file changed since (a shared mapping can write
//     after the close);
//   - when the task changes (checkpoint, view change), the state of every
//     file open for writing is read once, recorded as its after state in
//     the old task and carried over as its before state in the new one
//     (sealWriters, carryWriters): the first write after it is not seen;
//   - the first cached open after passthrough writes drops the kernel's
//     cached pages (cacheFlags);
//   - a write fails with ENOSPC before the journal's disk fills only for
//     writes the overlay sees, so files are opened for writing with
//     passthrough only while more than passthroughMinFree is free.

// passthroughMinFree is the free space of the staging file system below
// which files are no longer opened for writing with passthrough, so that
// every write is checked against the journal's reserve (space.go).
const passthroughMinFree = 4 << 30

// passHandle is an open handle the kernel passes through to the node's
// upper file; go-fuse registers that file as the inode's backing file.
type passHandle struct{ *handle }

// PassthroughFd is the upper file, which the kernel reads and writes.
func (h passHandle) PassthroughFd() (int, bool) {
	n := h.n
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.uf == nil {
		return -1, false
	}
	return int(n.uf.Fd()), true
}

// passThrough decides whether a new open of the upper node n is passed
// through. Must hold o.mu.
func (o *Overlay) passThrough(n *node, write bool) bool {
	if !o.passthrough.Load() {
		return false
	}
	n.fmu.Lock()
	passed, cached := n.passed, n.cached
	n.fmu.Unlock()
	switch {
	case cached > 0:
		return false
	case passed > 0:
		return true
	case write:
		return o.space.room(o.upper, passthroughMinFree)
	}
	return true
}

// cacheFlags are the open flags of handle h of n: cached handles keep the
// kernel's pages across opens unless passthrough writers changed the file
// behind them. Passed-through handles have no pages.
func (n *node) cacheFlags(h *handle) uint32 {
	if h.pass {
		return 0
	}
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.passWritten {
		n.passWritten = false
		return 0
	}
	return keepCache
}

// sawBlindWrites marks n written if it is open for writing with
// passthrough, so the next record hashes its content again.
func (o *Overlay) sawBlindWrites(n *node) {
	n.fmu.Lock()
	blind := n.passWriters > 0
	ino := n.ufIno
	n.fmu.Unlock()
	if blind {
		o.wrote(ino)
		n.dirty.Store(true)
	}
}

// changedSinceHash reports whether the upper file of n may differ from its
// content as last hashed: a passthrough writer's release records the file
// again only then (a shared mapping may have written it after the close).
func (o *Overlay) changedSinceHash(n *node) bool {
	n.fmu.Lock()
	defer n.fmu.Unlock()
	if n.uf == nil {
		return true
	}
	var st unix.Stat_t
	if unix.Fstat(int(n.uf.Fd()), &st) != nil {
		return true
	}
	o.hmu.Lock()
	defer o.hmu.Unlock()
	e := o.hashed[uint64(st.Ino)]
	return e == nil || !e.valid || e.seen != stampOf(&st)
}

// sealWriters records the state of every file open for writing into the
// active task, reading each once, and returns those states: they become the
// same paths' before states in the next task (carryWriters). A passthrough
// write is not stopped by the write lock while the task changes; this way it
// belongs to exactly one of the two tasks. Must hold o.mu.
func (o *Overlay) sealWriters() (map[string]journal.NodeState, error) {
	for n := range o.writers {
		p, ok := o.writerPath(n)
		if !ok {
			continue
		}
		n.dirty.Store(false)
		if err := o.touch(p); err != nil {
			return nil, err
		}
		o.pending[p] = true
	}
	return o.flushPendingStates()
}

// carryWriters gives the paths of files open for writing, except those in
// or below skip, their sealed states as before states in the task just started: the
// first write after it may not come through Write, where a task's first
// write records one. Must hold o.mu.
func (o *Overlay) carryWriters(sealed map[string]journal.NodeState, skip map[string]bool) {
	for n := range o.writers {
		p, ok := o.writerPath(n)
		if !ok || underAny(p, skip) {
			continue
		}
		if s, ok := sealed[p]; ok {
			o.before[p] = s
		}
	}
}

// writerPath is the path of a file node open for writing. A node Create
// made is linked into go-fuse's tree only after Create returns (and before
// the kernel hears of it): a checkpoint or view change in between finds it
// by the path Create gave it, so its state is sealed and carried over like
// any writer's, and the first write after it (which the overlay does not
// see with passthrough) lands in a task that knows the file's state before
// it. Must hold o.mu.
func (o *Overlay) writerPath(n *node) (string, bool) {
	if p, ok := n.path(); ok {
		delete(o.linking, n)
		return p, true
	}
	p, ok := o.linking[n]
	return p, ok
}

// underAny reports whether p or one of its ancestors is in set.
func underAny(p string, set map[string]bool) bool {
	for ; p != ""; p = parentOf(p) {
		if set[p] {
			return true
		}
	}
	return false
}
