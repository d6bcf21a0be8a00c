//go:build linux || darwin

package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// SetView makes the mounted view show target for the given paths (content
// from journal blobs), e.g. after undo, redo or switch inside a session, and
// invalidates the kernel's entry, attribute and page caches of every path
// that changed. Later first-changes go to task. Writes made before are
// flushed into the task that was active. It is Move with a fixed target.
func (o *Overlay) SetView(target map[string]journal.NodeState, task tasks.ID) error {
	_, err := o.Move(func(ViewReader) (map[string]journal.NodeState, tasks.ID, error) {
		return target, task, nil
	})
	return err
}

// Move changes the view as plan decides (undo, redo or switch inside a
// session), in two phases. First, with the view held still, plan is asked
// for the target, every file of the target is staged from the journal (its
// content checked against its hash) and every path is checked against the
// view; then the view changes. A failure at any point leaves the view and
// the recording as they were: the overlay goes on recording into the task
// that was active, and replaced upper objects are put back from a trash
// dir. Only when the view shows the target do later first changes go to
// the task plan returned. It returns the number of paths that changed.
func (o *Overlay) Move(plan ViewPlan) (int, error) {
	changed, trash, err := o.moveView(plan)
	// Without o.wmu: invalidating a file's pages waits for a write in
	// progress, which may be waiting for o.wmu.
	o.invalidate(changed)
	if trash != "" {
		os.RemoveAll(trash)
	}
	return len(changed), err
}

func (o *Overlay) moveView(plan ViewPlan) (changed []string, trash string, err error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if err := o.Flush(); err != nil {
		return nil, "", fmt.Errorf("set view: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Changes still waiting belong to the old task, in the old view.
	sealed, err := o.sealWriters()
	if err != nil {
		return nil, "", fmt.Errorf("set view: %w", err)
	}
	target, task, err := plan(viewReader{o})
	if err != nil {
		return nil, "", err
	}
	paths := make([]string, 0, len(target))
	for p := range target {
		if !cleanPath(p) {
			return nil, "", fmt.Errorf("set view %q: invalid path", p)
		}
		paths = append(paths, p)
	}
	// Parents before children; deletions run deepest first below.
	sort.Slice(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/")
		if di != dj {
			return di < dj
		}
		return paths[i] < paths[j]
	})
	staged, err := o.stageView(paths, target)
	if err != nil {
		return nil, "", fmt.Errorf("set view, nothing changed: %w", err)
	}
	defer staged.discard()
	o.beginUndo()
	changed, err = o.switchView(paths, target, staged)
	trash, uerr := o.endUndo(err != nil)
	if err != nil {
		if uerr != nil {
			return changed, "", fmt.Errorf("set view: %w; %w", err, uerr)
		}
		// Put back as it was: the kernel saw nothing of it (o.mu was held).
		return nil, trash, fmt.Errorf("set view, nothing changed: %w", err)
	}
	o.setTask(task, true)
	moved := make(map[string]bool, len(changed))
	for _, p := range changed {
		moved[p] = true
	}
	o.carryWriters(sealed, moved)
	return changed, trash, nil
}

// switchView makes the view show target: removals deepest first, then the
// other states parents first. Must hold o.mu.
func (o *Overlay) switchView(paths []string, target map[string]journal.NodeState, staged *stagedView) ([]string, error) {
	var changed []string
	for i := len(paths) - 1; i >= 0; i-- {
		if p := paths[i]; target[p].Kind == journal.Absent {
			did, err := o.viewRemove(p)
			if did {
				changed = append(changed, p)
			}
			if err != nil {
				return changed, err
			}
		}
	}
	for _, p := range paths {
		if target[p].Kind != journal.Absent {
			did, err := o.viewSet(p, target[p], staged)
			if did {
				changed = append(changed, p)
			}
			if err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// viewRemove makes p absent. Must hold o.mu.
func (o *Overlay) viewRemove(p string) (bool, error) {
	// Below a non-directory p is absent already; resolving it would
	// follow a symlink.
	for d := parentOf(p); d != ""; d = parentOf(d) {
		if ob, err := o.resolve(d); err != nil || !ob.isDir() {
			return false, nil
		}
	}
	ob, err := o.resolve(p)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	o.pinPath(p)
	if ob.isDir() && !ob.upper {
		// Children the target does not list stay hidden with their parent.
		if err := o.copyUpDirOnly(p); err != nil {
			return false, err
		}
		ob.upper = true
	}
	return true, o.remove(p, &ob)
}

// copyUpDirOnly makes the directory p exist in the upper tree.
func (o *Overlay) copyUpDirOnly(p string) error { return o.copyUp(p) }

// viewSet gives p the state s, a file from its staged copy. Must hold o.mu.
func (o *Overlay) viewSet(p string, s journal.NodeState, staged *stagedView) (bool, error) {
	cur, err := o.stateOf(p)
	if err != nil {
		return false, err
	}
	if cur.Equal(s) {
		return false, nil
	}
	ob, rerr := o.resolve(p)
	exists := rerr == nil
	if s.Kind == journal.Dir && cur.Kind == journal.Dir {
		if err := o.copyUp(p); err != nil {
			return false, err
		}
		if err := o.noteChmod(o.upperPath(p)); err != nil {
			return false, err
		}
		return true, unix.Chmod(o.upperPath(p), statMode(s.Mode))
	}
	if exists {
		o.pinPath(p)
		if err := o.remove(p, &ob); err != nil {
			return false, err
		}
	}
	if err := o.copyUpParents(p); err != nil {
		return false, err
	}
	up := o.upperPath(p)
	switch s.Kind {
	case journal.Dir:
		o.upperDirsChanged()
		err = unix.Mkdir(up, 0o700)
		if err == nil {
			o.noteMade(up)
			err = unix.Chmod(up, statMode(s.Mode))
		}
	case journal.Symlink:
		if err = unix.Symlink(s.Target, up); err == nil {
			o.noteMade(up)
		}
	case journal.Fifo:
		err = unix.Mkfifo(up, 0o600)
		if err == nil {
			o.noteMade(up)
			err = unix.Chmod(up, statMode(s.Mode))
		}
	case journal.File:
		err = o.placeFile(up, s, staged.files[p])
		delete(staged.files, p)
	default:
		err = fmt.Errorf("unknown node kind %d", s.Kind)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	o.created(p, s.Kind == journal.Dir)
	return true, nil
}

// placeFile puts a file state at up: its staged copy, or (a path the first
// phase found in its target state already, which a change of its parent
// took away since) its content written now.
func (o *Overlay) placeFile(up string, s journal.NodeState, staged string) error {
	if staged == "" {
		var err error
		if staged, err = o.stageBlob(s); err != nil {
			return err
		}
	}
	if err := os.Rename(staged, up); err != nil {
		os.Remove(staged)
		return err
	}
	o.noteMade(up)
	o.knowHash(up, s.Blob)
	return nil
}

// pinPath pins the lazy handles of the node at p, if the kernel knows it,
// so they keep the content they opened. Must hold o.mu.
func (o *Overlay) pinPath(p string) {
	in := o.root.EmbeddedInode()
	for _, c := range strings.Split(p, "/") {
		if in = in.GetChild(c); in == nil {
			return
		}
	}
	if n, ok := in.Operations().(*node); ok {
		n.pin(p)
	}
}

// invalidate drops the kernel's dentries, attributes and pages of paths.
// It runs without o.mu: the kernel may need to wait for requests that want it.
func (o *Overlay) invalidate(paths []string) {
	for _, p := range paths {
		parent := o.root.EmbeddedInode()
		dir, name := parentOf(p), filepath.Base(p)
		if dir != "" {
			for _, c := range strings.Split(dir, "/") {
				if parent = parent.GetChild(c); parent == nil {
					break
				}
			}
		}
		if parent == nil {
			continue
		}
		if ch := parent.GetChild(name); ch != nil {
			ch.NotifyContent(0, 0)
		}
		parent.NotifyEntry(name)
		parent.NotifyContent(0, 0)
	}
}

var _ = fusefs.InodeEmbedder((*node)(nil))
