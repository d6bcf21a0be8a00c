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

	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// SetView makes the mounted view show target for the given paths (content
// from journal blobs), e.g. after undo, redo or switch inside a session, and
// invalidates the kernel's entry, attribute and page caches of every path
// that changed. Later first-changes go to task. Writes made before are
// flushed into the task that was active.
func (o *Overlay) SetView(target map[string]journal.NodeState, task tasks.ID) error {
	changed, err := o.setView(target, task)
	// Without o.wmu: invalidating a file's pages waits for a write in
	// progress, which may be waiting for o.wmu.
	o.invalidate(changed)
	return err
}

func (o *Overlay) setView(target map[string]journal.NodeState, task tasks.ID) ([]string, error) {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if err := o.Flush(); err != nil {
		return nil, fmt.Errorf("set view: %w", err)
	}
	paths := make([]string, 0, len(target))
	for p := range target {
		if !cleanPath(p) {
			return nil, fmt.Errorf("set view %q: invalid path", p)
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
	o.mu.Lock()
	// Changes still waiting belong to the old task, in the old view.
	sealed, err := o.sealWriters()
	if err != nil {
		o.mu.Unlock()
		return nil, fmt.Errorf("set view: %w", err)
	}
	var changed []string
	for i := len(paths) - 1; i >= 0 && err == nil; i-- {
		if p := paths[i]; target[p].Kind == journal.Absent {
			var did bool
			if did, err = o.viewRemove(p); did {
				changed = append(changed, p)
			}
		}
	}
	for _, p := range paths {
		if err != nil {
			break
		}
		if target[p].Kind != journal.Absent {
			var did bool
			if did, err = o.viewSet(p, target[p]); did {
				changed = append(changed, p)
			}
		}
	}
	o.setTask(task, true)
	moved := make(map[string]bool, len(changed))
	for _, p := range changed {
		moved[p] = true
	}
	o.carryWriters(sealed, moved)
	o.mu.Unlock()
	if err != nil {
		return changed, fmt.Errorf("set view: %w", err)
	}
	return changed, nil
}

// viewRemove makes p absent. Must hold o.mu.
func (o *Overlay) viewRemove(p string) (bool, error) {
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

// viewSet gives p the state s. Must hold o.mu.
func (o *Overlay) viewSet(p string, s journal.NodeState) (bool, error) {
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
			err = unix.Chmod(up, statMode(s.Mode))
		}
	case journal.Symlink:
		err = unix.Symlink(s.Target, up)
	case journal.Fifo:
		err = unix.Mkfifo(up, 0o600)
		if err == nil {
			err = unix.Chmod(up, statMode(s.Mode))
		}
	case journal.File:
		err = o.writeBlob(up, s)
	default:
		err = fmt.Errorf("unknown node kind %d", s.Kind)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	o.created(p, s.Kind == journal.Dir)
	return true, nil
}

// writeBlob materialises a file state at up: written beside, then renamed.
func (o *Overlay) writeBlob(up string, s journal.NodeState) error {
	f, err := os.CreateTemp(o.tmp, "blob")
	if err != nil {
		return err
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
	if err == nil {
		err = os.Rename(tmp, up)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
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
