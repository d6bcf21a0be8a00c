package cow

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// StagingPrefix starts the name of the temporary file an apply writes beside
// its target before renaming it over the target.
const StagingPrefix = ".timeagent-tmp-"

// applyHook, when set (by tests), is called before every change Apply makes
// to the tree; an error stops the apply there, as a crash would.
var applyHook func(op, path string) error

// Apply makes every path of target have its target state on root: files by
// temp file + fsync + rename in the same directory, deletions deepest first,
// directories created top down and removed bottom up, modes and symlink
// targets restored. Every step is idempotent so a crashed apply can be re-run.
// It returns the new stat entries of the paths it wrote (for the stat cache):
// one for every path whose target is not absent.
func Apply(root *os.Root, blobs Blobs, target map[string]NodeState, progress Progress) (Manifest, error) {
	paths := sortedKeys(target)
	for _, p := range paths {
		if !ValidPath(p) {
			return nil, fmt.Errorf("apply %q: %w", p, ErrBadPath)
		}
	}
	if progress != nil {
		progress.Start("applying", int64(len(paths)))
		defer progress.Done()
	}
	a := &applier{root: root, blobs: blobs, target: target, progress: progress, touched: map[string]bool{}, writable: map[string]*os.FileMode{}}
	parents := map[string]bool{}
	for _, p := range paths {
		parents[path.Dir(p)] = true
	}
	if err := CleanStaging(root, sortedKeys(parents)); err != nil {
		return nil, err
	}
	steps := []func([]string) error{a.removeAll, a.makeDirs, a.writeLeaves, a.setDirModes}
	for _, step := range steps {
		if err := step(paths); err != nil {
			return nil, err
		}
	}
	if err := a.syncTouched(); err != nil {
		return nil, err
	}
	m, err := a.manifest(paths)
	if err != nil {
		return nil, err
	}
	if len(a.unsupported) > 0 {
		return m, fmt.Errorf("apply: %w, skipped: %s", ErrUnsupported, strings.Join(a.unsupported, ", "))
	}
	return m, nil
}

type applier struct {
	root     *os.Root
	blobs    Blobs
	target   map[string]NodeState
	progress Progress
	touched  map[string]bool // directories whose entries changed
	// writable holds the directories checked to be owner-writable, with
	// the mode to restore for those that were made so.
	writable map[string]*os.FileMode
	// unsupported lists the paths of kinds this system cannot create.
	unsupported []string
}

// ensureWritable makes dir owner-writable before an entry in it changes, so
// a read-only directory still gets its children; setDirModes restores it.
func (a *applier) ensureWritable(dir string) error {
	if _, ok := a.writable[dir]; ok {
		return nil
	}
	st, ok, err := a.lstat(dir)
	if err != nil {
		return err
	}
	if !ok || st.kind != dirKind || st.mode&0o700 == 0o700 {
		a.writable[dir] = nil
		return nil
	}
	if err := a.hook("chmod", dir); err != nil {
		return err
	}
	if err := a.root.Chmod(dir, st.mode|0o700); err != nil {
		return fmt.Errorf("apply: chmod %s: %w", dir, err)
	}
	mode := st.mode
	a.writable[dir] = &mode
	return nil
}

func (a *applier) hook(op, p string) error {
	if applyHook != nil {
		return applyHook(op, p)
	}
	return nil
}

func (a *applier) done() {
	if a.progress != nil {
		a.progress.Add(1)
	}
}

// lstat returns the real state of p; ok is false when it does not exist.
func (a *applier) lstat(p string) (st statInfo, ok bool, err error) {
	st, err = lstatRoot(a.root, p)
	if err != nil {
		if isNotExist(err) {
			return st, false, nil
		}
		return st, false, fmt.Errorf("apply %s: %w", p, err)
	}
	return st, true, nil
}

// removeAll removes, deepest first, every path that must be absent or must
// change kind.
func (a *applier) removeAll(paths []string) error {
	order := append([]string(nil), paths...)
	sort.Slice(order, func(i, j int) bool {
		if di, dj := depth(order[i]), depth(order[j]); di != dj {
			return di > dj
		}
		return order[i] > order[j]
	})
	for _, p := range order {
		t := a.target[p]
		st, ok, err := a.lstat(p)
		if err != nil {
			return err
		}
		if ok && (t.Kind == absentKind || st.skip || st.kind != t.Kind) {
			if err := a.ensureWritable(path.Dir(p)); err != nil {
				return err
			}
			if err := a.hook("remove", p); err != nil {
				return err
			}
			if st.kind == dirKind {
				err = a.root.RemoveAll(p)
			} else {
				err = a.root.Remove(p)
			}
			if err != nil && !isNotExist(err) {
				return fmt.Errorf("apply: remove %s: %w", p, err)
			}
			a.touched[path.Dir(p)] = true
		}
		if t.Kind == absentKind {
			a.done()
		}
	}
	return nil
}

// makeDirs creates the target directories top down, owner-writable until
// setDirModes gives them their final mode.
func (a *applier) makeDirs(paths []string) error {
	// Sorted paths list a parent before its children.
	for _, p := range paths {
		t := a.target[p]
		if t.Kind != dirKind {
			continue
		}
		st, ok, err := a.lstat(p)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			if err := a.makeParents(p); err != nil {
				return err
			}
			if err := a.ensureWritable(path.Dir(p)); err != nil {
				return err
			}
			if err := a.hook("mkdir", p); err != nil {
				return err
			}
			if err := a.root.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("apply: mkdir %s: %w", p, err)
			}
			a.touched[path.Dir(p)] = true
		case st.kind != dirKind:
			return fmt.Errorf("apply: mkdir %s: a %s is in the way", p, st.kind)
		}
		a.done()
	}
	return nil
}

// makeParents creates missing parent directories of p that the target does
// not mention (mode 0755).
func (a *applier) makeParents(p string) error {
	dir := path.Dir(p)
	if dir == "." {
		return nil
	}
	st, ok, err := a.lstat(dir)
	if err != nil {
		return err
	}
	if ok {
		if st.kind != dirKind && st.kind != symlinkKind {
			return fmt.Errorf("apply %s: parent %s is a %s", p, dir, st.kind)
		}
		return nil
	}
	if err := a.makeParents(dir); err != nil {
		return err
	}
	if err := a.ensureWritable(path.Dir(dir)); err != nil {
		return err
	}
	if err := a.hook("mkdir", dir); err != nil {
		return err
	}
	if err := a.root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("apply: mkdir %s: %w", dir, err)
	}
	a.touched[path.Dir(dir)] = true
	return nil
}

// writeLeaves writes files, symlinks and fifos.
func (a *applier) writeLeaves(paths []string) error {
	for _, p := range paths {
		t := a.target[p]
		var err error
		switch t.Kind {
		case fileKind:
			err = a.writeFile(p, t)
		case symlinkKind:
			err = a.writeSymlink(p, t)
		case fifoKind:
			err = a.writeFifo(p, t)
		default:
			continue
		}
		if errors.Is(err, ErrUnsupported) {
			a.unsupported = append(a.unsupported, p)
			err = nil
		}
		if err != nil {
			return err
		}
		a.done()
	}
	return nil
}

func stagingName(p string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return joinRel(path.Dir(p), StagingPrefix+hex.EncodeToString(b[:]))
}

func (a *applier) writeFile(p string, t NodeState) error {
	st, ok, err := a.lstat(p)
	if err != nil {
		return err
	}
	if ok && st.kind == fileKind && st.size == t.Size {
		same, err := a.sameContent(p, t.Blob)
		if err != nil {
			return err
		}
		if same {
			return a.chmod(p, st.mode, t.Mode)
		}
	}
	if err := a.makeParents(p); err != nil {
		return err
	}
	if err := a.ensureWritable(path.Dir(p)); err != nil {
		return err
	}
	if err := a.hook("write", p); err != nil {
		return err
	}
	tmp := stagingName(p)
	f, err := a.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("apply %s: %w", p, err)
	}
	err = a.fillFile(f, t)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = a.hook("rename", p); err != nil {
			return err // a crash leaves the staging file for the next apply
		}
		err = a.root.Rename(tmp, p)
	}
	if err != nil {
		_ = a.root.Remove(tmp)
		return fmt.Errorf("apply %s: %w", p, err)
	}
	a.touched[path.Dir(p)] = true
	return nil
}

// fillFile writes the blob into f, sets the mode and syncs.
func (a *applier) fillFile(f *os.File, t NodeState) error {
	cw := &countWriter{w: f}
	if err := a.blobs.WriteBlob(t.Blob, cw); err != nil {
		return err
	}
	if cw.n != t.Size {
		return fmt.Errorf("blob %016x has %d bytes, the node state says %d", t.Blob.Hash, cw.n, t.Size)
	}
	if err := f.Chmod(t.Mode); err != nil {
		return err
	}
	return f.Sync()
}

// sameContent reports whether the file at p holds exactly the blob's bytes.
func (a *applier) sameContent(p string, ref BlobRef) (bool, error) {
	d, err := openDirHandle(a.root, path.Dir(p))
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", p, err)
	}
	defer d.close()
	f, err := d.openFile(path.Base(p))
	if err != nil {
		if isNotExist(err) || isNotRegular(err) {
			return false, nil
		}
		return false, fmt.Errorf("apply %s: %w", p, err)
	}
	defer f.Close()
	cw := &compareWriter{r: f}
	err = a.blobs.WriteBlob(ref, cw)
	if errors.Is(err, errDiffers) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", p, err)
	}
	var one [1]byte
	if n, _ := f.Read(one[:]); n > 0 {
		return false, nil // the file is longer
	}
	return true, nil
}

func (a *applier) chmod(p string, have, want os.FileMode) error {
	if have == want {
		return nil
	}
	if err := a.hook("chmod", p); err != nil {
		return err
	}
	if err := a.root.Chmod(p, want); err != nil {
		return fmt.Errorf("apply: chmod %s: %w", p, err)
	}
	return nil
}

func (a *applier) writeSymlink(p string, t NodeState) error {
	st, ok, err := a.lstat(p)
	if err != nil {
		return err
	}
	if ok && st.kind == symlinkKind {
		cur, err := a.root.Readlink(p)
		if err != nil {
			return fmt.Errorf("apply %s: %w", p, err)
		}
		if cur == t.Target {
			return nil
		}
	}
	if err := a.makeParents(p); err != nil {
		return err
	}
	if err := a.ensureWritable(path.Dir(p)); err != nil {
		return err
	}
	if err := a.hook("symlink", p); err != nil {
		return err
	}
	tmp := stagingName(p)
	if err := a.root.Symlink(t.Target, tmp); err != nil {
		return fmt.Errorf("apply: symlink %s: %w", p, err)
	}
	if err := a.root.Rename(tmp, p); err != nil {
		_ = a.root.Remove(tmp)
		return fmt.Errorf("apply: symlink %s: %w", p, err)
	}
	a.touched[path.Dir(p)] = true
	return nil
}

func (a *applier) writeFifo(p string, t NodeState) error {
	st, ok, err := a.lstat(p)
	if err != nil {
		return err
	}
	if ok && st.kind == fifoKind {
		return a.chmod(p, st.mode, t.Mode)
	}
	if err := a.makeParents(p); err != nil {
		return err
	}
	if err := a.ensureWritable(path.Dir(p)); err != nil {
		return err
	}
	if err := a.hook("mkfifo", p); err != nil {
		return err
	}
	d, err := openDirHandle(a.root, path.Dir(p))
	if err != nil {
		return fmt.Errorf("apply: mkfifo %s: %w", p, err)
	}
	defer d.close()
	tmp := stagingName(p)
	if err := d.mkfifo(path.Base(tmp)); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	err = a.root.Chmod(tmp, t.Mode)
	if err == nil {
		err = a.root.Rename(tmp, p)
	}
	if err != nil {
		_ = a.root.Remove(tmp)
		return fmt.Errorf("apply: mkfifo %s: %w", p, err)
	}
	a.touched[path.Dir(p)] = true
	return nil
}

// setDirModes gives directories their target modes, deepest first.
func (a *applier) setDirModes(paths []string) error {
	for i := len(paths) - 1; i >= 0; i-- {
		p := paths[i]
		t := a.target[p]
		if t.Kind != dirKind {
			continue
		}
		st, ok, err := a.lstat(p)
		if err != nil {
			return err
		}
		if !ok || st.kind != dirKind {
			return fmt.Errorf("apply %s: directory vanished during the apply", p)
		}
		if err := a.chmod(p, st.mode, t.Mode); err != nil {
			return err
		}
	}
	// Directories outside the target that were opened up get their mode back.
	for _, dir := range sortedKeys(a.writable) {
		mode := a.writable[dir]
		if mode == nil || a.target[dir].Kind == dirKind {
			continue
		}
		if err := a.root.Chmod(dir, *mode); err != nil && !isNotExist(err) {
			return fmt.Errorf("apply: chmod %s: %w", dir, err)
		}
	}
	return nil
}

// syncTouched fsyncs every directory whose entries changed.
func (a *applier) syncTouched() error {
	for _, dir := range sortedKeys(a.touched) {
		d, err := openDirHandle(a.root, dir)
		if err != nil {
			if isNotExist(err) {
				continue // removed later in the same apply
			}
			return fmt.Errorf("apply: sync %s: %w", dir, err)
		}
		err = d.sync()
		d.close()
		if err != nil {
			return fmt.Errorf("apply: sync %s: %w", dir, err)
		}
	}
	return nil
}

// manifest stats every present target path for the stat cache.
func (a *applier) manifest(paths []string) (Manifest, error) {
	m := make(Manifest, len(paths))
	now := time.Now().UnixNano()
	for _, p := range paths {
		t := a.target[p]
		if t.Kind == absentKind {
			continue
		}
		st, ok, err := a.lstat(p)
		if err != nil {
			return nil, err
		}
		if !ok || st.kind != t.Kind {
			if slices.Contains(a.unsupported, p) {
				continue
			}
			return nil, fmt.Errorf("apply %s: is not a %s after the apply", p, t.Kind)
		}
		e := st.entry(t)
		if st.ctimeNs > now-int64(racyWindow) || st.mtimeNs > now-int64(racyWindow) {
			e.CtimeNs = racyCtime
		}
		m[p] = e
	}
	return m, nil
}

// CleanStaging removes leftover staging files (StagingPrefix) of a crashed
// apply from the given directories. Missing directories are ignored.
func CleanStaging(root *os.Root, dirs []string) error {
	for _, dir := range dirs {
		d, err := openDirHandle(root, dir)
		if err != nil {
			if isNotExist(err) || !isDirErr(root, dir) {
				continue
			}
			return fmt.Errorf("clean staging files in %s: %w", dir, err)
		}
		names, err := d.names()
		d.close()
		if err != nil {
			return fmt.Errorf("clean staging files in %s: %w", dir, err)
		}
		for _, name := range names {
			if !strings.HasPrefix(name, StagingPrefix) {
				continue
			}
			if err := root.Remove(joinRel(dir, name)); err != nil && !isNotExist(err) {
				return fmt.Errorf("clean staging file %s: %w", joinRel(dir, name), err)
			}
		}
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// errDiffers stops a comparison at the first differing byte.
var errDiffers = errors.New("content differs")

// compareWriter compares what is written to it with what r holds.
type compareWriter struct {
	r   io.Reader
	buf []byte
}

func (c *compareWriter) Write(b []byte) (int, error) {
	if cap(c.buf) < len(b) {
		c.buf = make([]byte, len(b))
	}
	buf := c.buf[:len(b)]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, errDiffers
	}
	if !bytes.Equal(buf, b) {
		return 0, errDiffers
	}
	return len(b), nil
}
