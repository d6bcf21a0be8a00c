//go:build linux || darwin

package fs

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
)

// Content I/O outside o.mu. Hashing a lower file into the journal (its
// before state) and copying it to the upper tree take seconds for a large
// file; under o.mu they would stall every other request of the mount. An
// operation that needs them first lists them under o.mu (a plan: metadata
// only), does them with o.mu released (prepare), and then runs as before
// under o.mu, where copyUpFile and blobOf find the work done: a lower blob
// in o.lowerBlobs, a copy in o.staged. What changed while o.mu was released
// is seen because the operation resolves everything again; content the plan
// did not foresee is still read under o.mu, as a fallback.
//
// Per-path waits: a path whose content is being read is marked busy
// (o.busy). Another operation that needs the same path's content waits for
// the mark to go (with o.mu released) and then uses the result; operations
// on other paths go on meanwhile.

// contentNeed is content work an operation needs before it runs under o.mu.
type contentNeed struct {
	p    string
	copy bool // a copy of the lower file for the upper tree (and its blob); else its blob only
}

// stagedCopy is a lower file copied into o.tmp, renamed into the upper tree
// by copyUpFile if the lower file is still the one copied.
type stagedCopy struct {
	tmp   string
	ino   uint64
	stamp fileStamp
}

// needed reports whether nd is still to be done. Must hold o.mu.
func (o *Overlay) needed(nd contentNeed) bool {
	ob, err := o.resolve(nd.p)
	if err != nil || ob.upper || ob.ifmt() != unix.S_IFREG {
		return false
	}
	if nd.copy {
		_, ok := o.staged[nd.p]
		return !ok
	}
	_, known := o.lowerBlobs[nd.p]
	_, touched := o.before[nd.p]
	return !known && !touched
}

// needsOf lists the content work for the lower files at p and, when tree is
// set, below it. Must hold o.mu.
func (o *Overlay) needsOf(p string, copy, tree bool) []contentNeed {
	if !tree {
		if nd := (contentNeed{p, copy}); o.needed(nd) {
			return []contentNeed{nd}
		}
		return nil
	}
	var out []contentNeed
	o.walk(p, func(c string, ob *object) error {
		if nd := (contentNeed{c, copy}); !ob.upper && ob.ifmt() == unix.S_IFREG && o.needed(nd) {
			out = append(out, nd)
		}
		return nil
	})
	return out
}

// readyContent does the content work plan lists before the operation that
// called it goes on, and returns what to call when the operation ends (it
// removes the copies the operation did not use). Must hold o.mu; it is
// released while the content is read and held again when this returns.
func (o *Overlay) readyContent(plan func() []contentNeed) (done func()) {
	var all []contentNeed
	// Again while something new turned up meanwhile (a rename moved other
	// lower files under the path); after a few rounds the operation reads
	// what is left itself.
	for round := 0; round < 3; round++ {
		needs := plan()
		if len(needs) == 0 {
			break
		}
		for _, nd := range needs {
			o.prepare(nd)
		}
		all = append(all, needs...)
	}
	return func() {
		for _, nd := range all {
			if sc, ok := o.staged[nd.p]; ok {
				delete(o.staged, nd.p)
				os.Remove(sc.tmp)
			}
		}
	}
}

// prepare does nd with o.mu released, or waits for the operation already
// doing it. Must hold o.mu; it holds it again when it returns.
func (o *Overlay) prepare(nd contentNeed) {
	for o.needed(nd) {
		if ch := o.busy[nd.p]; ch != nil {
			o.mu.Unlock()
			<-ch
			o.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		o.busy[nd.p] = ch
		_, known := o.lowerBlobs[nd.p]
		o.mu.Unlock()
		ref, sc, err := o.readLower(nd, known)
		o.mu.Lock()
		delete(o.busy, nd.p)
		close(ch)
		if err != nil {
			// The operation reads it again itself and reports the error.
			o.logf("read %s: %v", nd.p, err)
			return
		}
		if !known {
			o.lowerBlobs[nd.p] = ref
		}
		if nd.copy {
			o.staged[nd.p] = sc
		}
		return
	}
}

// readLower hashes the lower file nd.p into the journal (unless its blob is
// known) and, for a copy, copies it into o.tmp, holes kept. It runs without
// o.mu: it touches nothing but the lower file, a new temporary file and the
// journal.
func (o *Overlay) readLower(nd contentNeed, known bool) (journal.BlobRef, stagedCopy, error) {
	var ref journal.BlobRef
	var sc stagedCopy
	src, err := o.lower.open(nd.p)
	if err != nil {
		return ref, sc, err
	}
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return ref, sc, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return ref, sc, unix.EINVAL
	}
	sc.ino, sc.stamp = uint64(st.Ino), stampOf(&st)
	in := sparse.NewReader(src, st.Size) // holes are not read
	if !nd.copy {
		ref, err = o.store.PutBlob(in)
		return ref, sc, err
	}
	dst, err := os.CreateTemp(o.tmp, "copyup")
	if err != nil {
		return ref, sc, err
	}
	sc.tmp = dst.Name()
	sw := sparse.NewWriter(dst) // and stay holes in the copy
	if known {
		_, err = io.Copy(sw, in)
	} else {
		ref, err = o.store.PutBlob(io.TeeReader(in, sw))
	}
	if err == nil {
		err = sw.Finish()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(sc.tmp)
	}
	return ref, sc, err
}

// takeStaged moves the staged copy of the lower file p to up, if there is
// one and the lower file is still the one copied. Must hold o.mu.
func (o *Overlay) takeStaged(p, up string) bool {
	sc, ok := o.staged[p]
	if !ok {
		return false
	}
	delete(o.staged, p)
	var st unix.Stat_t
	if o.lower.lstat(p, &st) == nil && uint64(st.Ino) == sc.ino && stampOf(&st) == sc.stamp {
		if err := os.Rename(sc.tmp, up); err == nil {
			return true
		}
	}
	os.Remove(sc.tmp)
	return false
}
