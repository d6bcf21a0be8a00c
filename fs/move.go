//go:build linux || darwin

package fs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// ErrViewMixed means a view change failed part way and what it had
// changed could not all be put back: the view shows a mix of the two
// states (the overlay still records into the task that was active).
var ErrViewMixed = errors.New("the view change could not be undone")

// ViewReader reads the mounted view while a Move holds it still.
type ViewReader interface {
	// States returns the state each path has in the view now; file
	// content is stored in the journal on the way, except for files of
	// the lower tree whose lstat matches their entry in cache (the
	// journal's stat cache of the real tree, which the lower tree is).
	States(paths []string, cache map[string]journal.StatEntry) (map[string]journal.NodeState, error)
	// Below returns every path below the view's directory dir that known
	// does not list, with its state.
	Below(dir string, known map[string]journal.NodeState) (map[string]journal.NodeState, error)
}

// ViewPlan decides a view change. It is called with the view held still:
// every change made through the mount so far is recorded in the active
// task, and no write or namespace change runs until Move returns. It
// returns the state the given paths must show and the task later first
// changes go to; an error cancels the change.
type ViewPlan func(view ViewReader) (target map[string]journal.NodeState, task tasks.ID, err error)

// viewReader is the ViewReader of a Move. Its methods run with o.mu held.
type viewReader struct{ o *Overlay }

func (r viewReader) States(paths []string, cache map[string]journal.StatEntry) (map[string]journal.NodeState, error) {
	out := make(map[string]journal.NodeState, len(paths))
	for _, p := range paths {
		if !cleanPath(p) {
			return nil, fmt.Errorf("read view %q: invalid path", p)
		}
		if e, ok := cache[p]; ok && r.lowerMatches(p, e) {
			out[p] = e.State()
			continue
		}
		s, err := r.freshState(p)
		if err != nil {
			return nil, fmt.Errorf("read view: %w", err)
		}
		out[p] = s
	}
	return out, nil
}

// lowerMatches reports whether p is a file of the lower tree, below
// directories only, that is unchanged since the stat cache's entry e.
func (r viewReader) lowerMatches(p string, e journal.StatEntry) bool {
	if e.Kind != journal.File {
		return false
	}
	for d := parentOf(p); d != ""; d = parentOf(d) {
		if ob, err := r.o.resolve(d); err != nil || !ob.isDir() {
			return false
		}
	}
	ob, err := r.o.resolve(p)
	if err != nil || ob.upper || ob.ifmt() != unix.S_IFREG {
		return false
	}
	st := &ob.st
	return st.Size == e.Size && statMtimeNs(st) == e.MtimeNs && statCtimeNs(st) == e.CtimeNs &&
		uint64(st.Ino) == e.Ino && nodeMode(uint32(st.Mode)) == e.Mode
}

// freshState is stateOf, reading a lower file again: the lower tree can
// change under the mount (a process whose directory was in the root
// before the mount), and a move must see what the view shows now.
func (r viewReader) freshState(p string) (journal.NodeState, error) {
	delete(r.o.lowerBlobs, p)
	return r.o.stateOf(p)
}

func (r viewReader) Below(dir string, known map[string]journal.NodeState) (map[string]journal.NodeState, error) {
	out := map[string]journal.NodeState{}
	if !cleanPath(dir) {
		return nil, fmt.Errorf("read view %q: invalid path", dir)
	}
	if s, err := r.o.stateOf(dir); err != nil || s.Kind != journal.Dir {
		return out, err
	}
	err := r.o.walk(dir, func(p string, _ *object) error {
		if _, ok := known[p]; ok || p == dir {
			return nil
		}
		s, err := r.freshState(p)
		if err != nil {
			return err
		}
		out[p] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read view below %s: %w", dir, err)
	}
	return out, nil
}

// stagedView is the first phase of a view change: the content of every
// file the view will show, written beside the upper tree and read back
// whole from the journal, before anything in the view changes.
type stagedView struct {
	files map[string]string // view path -> staged file with its target content
}

// discard removes the staged files a change did not use.
func (s *stagedView) discard() {
	for _, f := range s.files {
		os.Remove(f)
	}
}

// stageView checks that target can be shown and stages its files. Nothing
// in the view changes; on error nothing is left behind. Must hold o.mu.
func (o *Overlay) stageView(paths []string, target map[string]journal.NodeState) (*stagedView, error) {
	sv := &stagedView{files: map[string]string{}}
	var need int64
	var files []string
	for _, p := range paths {
		s := target[p]
		if s.Kind == journal.Absent {
			continue
		}
		if err := o.checkParents(p, target); err != nil {
			return nil, err
		}
		cur, err := o.stateOf(p)
		if err != nil {
			return nil, err
		}
		if s.Kind == journal.File && !cur.Equal(s) {
			files = append(files, p)
			need += s.Size
		}
	}
	if len(files) > 0 && !o.space.room(o.upper, need) {
		return nil, fmt.Errorf("stage %s, %d bytes, in %s: %w (the journal keeps %d MiB free on that file system)",
			plural.Count(len(files), "file"), need, o.tmp, syscall.ENOSPC, spaceReserve>>20)
	}
	for _, p := range files {
		f, err := o.stageBlob(target[p])
		if err != nil {
			sv.discard()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		sv.files[p] = f
	}
	return sv, nil
}

// checkParents refuses a target path whose parent would not be a
// directory: every ancestor must be a directory in the target or, where
// the target does not name it, in the view (not a symlink, whose target
// the upper tree would follow). Must hold o.mu.
func (o *Overlay) checkParents(p string, target map[string]journal.NodeState) error {
	for d := parentOf(p); d != ""; d = parentOf(d) {
		if s, ok := target[d]; ok {
			if s.Kind != journal.Dir {
				return fmt.Errorf("%s: its parent %s would be %s, not a directory (the journal's states disagree)", p, d, kindName(s.Kind))
			}
			continue
		}
		ob, err := o.resolve(d)
		if err != nil {
			return fmt.Errorf("%s: its parent %s: %w", p, d, err)
		}
		if !ob.isDir() {
			return fmt.Errorf("%s: its parent %s is not a directory in the view (it was replaced since its task; move or remove it and try again)", p, d)
		}
	}
	return nil
}

func kindName(k journal.NodeKind) string {
	switch k {
	case journal.Absent:
		return "absent"
	case journal.File:
		return "a file"
	case journal.Symlink:
		return "a symlink"
	case journal.Fifo:
		return "a fifo"
	}
	return "kind " + strconv.Itoa(int(k))
}

// stageBlob writes a file state's content into a new file in o.tmp, with
// its mode; the content is checked against its hash on the way.
func (o *Overlay) stageBlob(s journal.NodeState) (string, error) {
	f, err := os.CreateTemp(o.tmp, "blob")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	sw := sparse.NewWriter(f) // zero blocks stay holes
	err = o.store.WriteBlob(s.Blob, sw)
	if err == nil {
		err = sw.Finish()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Chmod(tmp, statMode(s.Mode))
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// viewUndo is what the second phase of a view change did to the upper
// tree and the overlay's maps, so a failure part way is undone: upper
// objects it replaced wait in a trash dir, objects it made are removed.
type viewUndo struct {
	trash    string
	steps    []undoStep
	whiteout map[string]bool
	opaque   map[string]bool
	inos     map[string]uint64
	nextIno  uint64
}

// undoStep undoes one change of the upper tree: a made object is removed,
// a trashed one put back, a changed mode restored.
type undoStep struct {
	up    string
	saved string // trashed: where it waits
	mode  uint32
	chmod bool
}

// beginUndo starts recording the changes of a view change. Must hold o.mu.
func (o *Overlay) beginUndo() {
	o.undo = &viewUndo{
		whiteout: maps.Clone(o.whiteout),
		opaque:   maps.Clone(o.opaque),
		inos:     maps.Clone(o.inos),
		nextIno:  o.nextIno,
	}
}

// noteMade notes that up was just created in the upper tree.
func (o *Overlay) noteMade(up string) {
	if o.undo != nil {
		o.undo.steps = append(o.undo.steps, undoStep{up: up})
	}
}

// noteChmod notes up's mode before a change of it.
func (o *Overlay) noteChmod(up string) error {
	if o.undo == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(up, &st); err != nil {
		return err
	}
	o.undo.steps = append(o.undo.steps, undoStep{up: up, mode: uint32(st.Mode) & 0o7777, chmod: true})
	return nil
}

// trashUpper moves the upper object up out of the way, into the trash of
// the view change in progress. It reports false when no change is in
// progress (the caller removes up itself).
func (o *Overlay) trashUpper(up string) (bool, error) {
	u := o.undo
	if u == nil {
		return false, nil
	}
	if u.trash == "" {
		d, err := os.MkdirTemp(o.tmp, "trash")
		if err != nil {
			return true, err
		}
		u.trash = d
	}
	saved := filepath.Join(u.trash, strconv.Itoa(len(u.steps)))
	if err := os.Rename(up, saved); err != nil {
		return true, err
	}
	u.steps = append(u.steps, undoStep{up: up, saved: saved})
	return true, nil
}

// endUndo stops recording; with rollback it first undoes every recorded
// change, last first, and restores the maps. It returns the trash dir to
// remove (after o.mu is released) and an error when the rollback itself
// failed. Must hold o.mu.
func (o *Overlay) endUndo(rollback bool) (string, error) {
	u := o.undo
	o.undo = nil
	if u == nil || !rollback {
		if u == nil {
			return "", nil
		}
		return u.trash, nil
	}
	var errs []error
	for i := len(u.steps) - 1; i >= 0; i-- {
		s := u.steps[i]
		var err error
		switch {
		case s.chmod:
			err = unix.Chmod(s.up, s.mode)
		case s.saved != "":
			err = os.Rename(s.saved, s.up)
		default:
			var st unix.Stat_t
			if unix.Lstat(s.up, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				o.forgetHash(&st) // its inode number may be given out again
			}
			err = os.RemoveAll(s.up)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	o.whiteout, o.opaque, o.inos, o.nextIno = u.whiteout, u.opaque, u.inos, u.nextIno
	o.upperAbsent = map[string]bool{}
	if len(errs) > 0 {
		// What could not be put back stays in the trash.
		return "", fmt.Errorf("%w (what it replaced is kept in %s): %w", ErrViewMixed, u.trash, errors.Join(errs...))
	}
	return u.trash, nil
}
