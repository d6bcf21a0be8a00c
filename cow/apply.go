package cow

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
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
//
// In order: leftover staging files of a crashed apply are removed from the
// parents of the target paths; files, symlinks and fifos whose directory
// exists are staged beside their path, and the blob of every other file the
// apply writes is read back and checked (prepare: until here nothing in the
// tree changed, so a damaged blob stops the apply with the tree untouched);
// paths that must be absent or change kind are removed, deepest first;
// directories are created top down (owner-writable); the remaining leaves
// are staged; everything staged is made durable (one syncfs per filesystem
// on Linux, concurrent fsyncs elsewhere) and renamed over its path;
// directories get their final modes, deepest first, so a 0555 directory
// still receives its children; the changed directories are made durable
// (fsynced, or one syncfs per filesystem when there are many). A file that
// already holds the target bytes is not rewritten; files are created and
// filled from blobs by a few workers, one directory's files together.
// Nothing is read or written through a symlink, and each directory is opened
// once per apply, relative to its parent. Paths whose kind the system cannot
// create are skipped and reported with a wrapped ErrUnsupported after
// everything else is done.
func Apply(root *os.Root, blobs Blobs, target map[string]NodeState, progress Progress) (Manifest, error) {
	a, err := newApplier(root, blobs, target, progress)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.prepare(); err != nil {
		a.discard(err)
		return nil, err
	}
	return a.finish()
}

// newApplier checks the target's paths and sets up an apply of it; close
// must be called when it is done.
func newApplier(root *os.Root, blobs Blobs, target map[string]NodeState, progress Progress) (*applier, error) {
	paths := sortedKeys(target)
	for _, p := range paths {
		if !ValidPath(p) {
			return nil, fmt.Errorf("apply %q: %w", p, ErrBadPath)
		}
	}
	if progress != nil {
		progress.Start("applying", int64(len(paths)))
	}
	a := &applier{root: root, blobs: blobs, target: target, progress: progress, paths: paths, touched: map[string]bool{},
		writable: map[string]*os.FileMode{}, dirs: newDirCache(root), handled: map[string]bool{}, tmpOf: map[string]string{}}
	for _, p := range paths {
		switch target[p].Kind {
		case fileKind, symlinkKind, fifoKind:
			a.leaves = append(a.leaves, p)
		}
	}
	return a, nil
}

// close releases what the apply holds open.
func (a *applier) close() {
	a.dirs.close()
	if a.progress != nil {
		a.progress.Done()
	}
}

// prepare does everything that leaves the tree as it is: it removes
// leftover staging files, stages every leaf whose directory exists already
// (a real, owner-writable directory that the target keeps), and reads back
// every other file's blob, checking its hash and length. An error here
// (above all a damaged blob, reported with its path) means that nothing in
// the tree changed; discard then removes what was staged.
func (a *applier) prepare() error {
	parents := map[string]bool{}
	for _, p := range a.paths {
		parents[path.Dir(p)] = true
	}
	if err := cleanStaging(a.dirs, sortedKeys(parents)); err != nil {
		return err
	}
	var now, check []string
	ready := map[string]bool{}
	for _, p := range a.leaves {
		dir := path.Dir(p)
		ok, seen := ready[dir]
		if !seen {
			ok = a.keptDir(dir)
			ready[dir] = ok
		}
		switch {
		case ok:
			now = append(now, p)
		case a.target[p].Kind == fileKind:
			check = append(check, p)
		}
	}
	a.preparing = true
	defer func() { a.preparing = false }()
	return a.stage(now, false, check)
}

// keptDir reports whether dir is now a real, owner-writable directory that
// the target keeps as one, so files can be staged in it before the apply
// changes anything.
func (a *applier) keptDir(dir string) bool {
	if t, ok := a.target[dir]; ok && t.Kind != dirKind {
		return false
	}
	st, ok, err := a.lstat(dir)
	return err == nil && ok && !st.skip && st.kind == dirKind && st.mode&0o700 == 0o700
}

// finish changes the tree, after prepare: removals, directories, the leaves
// prepare left, the renames, the directory modes and the syncs.
func (a *applier) finish() (Manifest, error) {
	for _, step := range []func([]string) error{a.removeAll, a.makeDirs, a.writeLeaves, a.setDirModes} {
		if err := step(a.paths); err != nil {
			return nil, err
		}
	}
	if err := a.syncTouched(); err != nil {
		return nil, err
	}
	m, err := a.manifest(a.paths)
	if err != nil {
		return nil, err
	}
	if len(a.unsupported) > 0 {
		return m, fmt.Errorf("apply: %w, skipped: %s", ErrUnsupported, strings.Join(a.unsupported, ", "))
	}
	return m, nil
}

// discard removes the staging files not yet renamed after err stopped the
// apply (best effort; the next apply removes what is left). A simulated
// crash leaves them, as a real one would.
func (a *applier) discard(err error) {
	if errors.Is(err, errCrash) {
		return
	}
	_ = a.byDir(a.pending, false, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			_ = d.remove(a.tmpOf[p])
		}
		return nil
	})
	a.pending = nil
}

type applier struct {
	root     *os.Root
	dirs     *dirCache // the directories opened so far, closed at the end
	blobs    Blobs
	target   map[string]NodeState
	progress Progress
	touched  map[string]bool // directories whose entries changed
	// writable holds the directories checked to be owner-writable, with
	// the mode to restore for those that were made so.
	writable map[string]*os.FileMode
	// unsupported lists the paths of kinds this system cannot create.
	unsupported []string
	syncer      *syncer
	filler      *pool
	batch       []fillJob  // the files of the directory being staged
	progressMu  sync.Mutex // done is called from workers
	// syncDirs holds one staged directory per filesystem (Linux: syncfs).
	syncDirs map[uint64]string
	// noted holds the directories whose filesystem is in syncDirs.
	noted map[string]bool
	paths []string // the target's paths, sorted
	// leaves are the paths whose target is a file, symlink or fifo.
	leaves []string
	// handled holds the leaves staged (or found right) by prepare.
	handled map[string]bool
	// pending lists the staged leaves not yet renamed, tmpOf their
	// staging names.
	pending []string
	tmpOf   map[string]string
	// preparing is set while prepare stages: nothing in the tree may
	// change then (a mode-only change waits for finish).
	preparing bool
}

// errCrash is what test hooks (applyHook) return to stand for a crash: the
// apply stops where it is and cleans nothing up, as a killed process would.
var errCrash = errors.New("simulated crash")

// errLater is how stageLeaf, during prepare, leaves a leaf whose change
// would touch the tree itself (a mode) for finish.
var errLater = errors.New("changes the tree: left for after prepare")

// blobError is content an apply needs that cannot be read back intact (a
// damaged or missing blob): it names the path that needs it.
type blobError struct {
	path string
	blob BlobRef
	err  error
}

func (e *blobError) Error() string { return fmt.Sprintf("apply %s: %v", e.path, e.err) }

func (e *blobError) Unwrap() error { return e.err }

// checkBlob wraps an error met writing or reading p's blob with the path,
// as a blobError when it says the content is damaged or missing.
func checkBlob(p string, ref BlobRef, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, journal.ErrCorrupt) || errors.Is(err, journal.ErrNotFound) {
		return &blobError{path: p, blob: ref, err: err}
	}
	return fmt.Errorf("apply %s: %w", p, err)
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
		a.progressMu.Lock()
		a.progress.Add(1)
		a.progressMu.Unlock()
	}
}

// lstat returns the real state of p; ok is false when it does not exist.
func (a *applier) lstat(p string) (st statInfo, ok bool, err error) {
	st, err = a.dirs.lstat(p)
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
				a.dirs.forget(p)
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
		if st.kind != dirKind {
			// Never write through a symlink or over unknown content.
			return fmt.Errorf("apply %s: parent %s is a %s, not a directory", p, dir, st.kind)
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

// writeLeaves stages the leaves prepare left (their directories exist now)
// and then, once every staged file is durable, renames every staged leaf
// over its path, one directory at a time.
func (a *applier) writeLeaves([]string) error {
	var rest []string
	for _, p := range a.leaves {
		if !a.handled[p] {
			rest = append(rest, p)
		}
	}
	if err := a.stage(rest, true, nil); err != nil {
		a.discard(err)
		return err
	}
	for _, dir := range a.syncDirs {
		if err := a.syncFS(dir); err != nil {
			return err
		}
	}
	if len(a.pending) == 0 {
		return nil
	}
	return a.byDir(a.pending, false, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			if err := a.hook("rename", p); err != nil {
				return err // a crash leaves the staging file for the next apply
			}
			if err := d.rename(a.tmpOf[p], path.Base(p)); err != nil {
				_ = d.remove(a.tmpOf[p])
				return fmt.Errorf("apply: %w", err)
			}
			a.touched[d.rel] = true
			a.done()
		}
		return nil
	})
}

// stage stages leaves beside their paths (with create, missing parents are
// made first) and reads back the blobs of the files in check; it returns
// once every staged file is written and, where there is no syncfs, fsynced.
// The staged leaves are added to pending; on an error the caller discards
// them.
func (a *applier) stage(leaves []string, create bool, check []string) error {
	a.syncer = newSyncer()
	a.filler = newPool(applyWorkers)
	err := a.byDir(leaves, create, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			if err := a.filler.failed(); err != nil {
				return err
			}
			tmp, err := a.stageLeaf(d, p, a.target[p])
			switch {
			case errors.Is(err, errLater):
				continue
			case errors.Is(err, ErrUnsupported):
				a.unsupported = append(a.unsupported, p)
				a.handled[p] = true
				continue
			case err != nil:
				return err
			}
			a.handled[p] = true
			if tmp == "" {
				a.done() // already right
				continue
			}
			a.pending = append(a.pending, p)
			a.tmpOf[p] = tmp
		}
		a.flushBatch()
		return nil
	})
	for i := 0; err == nil && i < len(check); i += maxBatch {
		if err = a.filler.failed(); err == nil {
			a.filler.submit(a.checkJob(check[i:min(i+maxBatch, len(check))]))
		}
	}
	if ferr := a.filler.wait(); err == nil && ferr != nil {
		err = ferr
	}
	if serr := a.syncer.wait(); err == nil && serr != nil {
		err = fmt.Errorf("apply: %w", serr)
	}
	return err
}

// checkJob reads back the blobs of files (hash and length) without writing
// anything.
func (a *applier) checkJob(files []string) func() error {
	return func() error {
		for _, p := range files {
			t := a.target[p]
			cw := &countWriter{w: io.Discard}
			err := a.blobs.WriteBlob(t.Blob, cw)
			if err == nil && cw.n != t.Size {
				err = fmt.Errorf("%w: blob %s has %d bytes, the node state says %d", journal.ErrCorrupt, t.Blob, cw.n, t.Size)
			}
			if err != nil {
				return checkBlob(p, t.Blob, err)
			}
		}
		return nil
	}
}

// noteFS remembers d's filesystem as one to syncfs before the renames.
func (a *applier) noteFS(d *dirHandle) error {
	if a.noted[d.rel] {
		return nil
	}
	dev, err := d.dev()
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if a.syncDirs == nil {
		a.syncDirs = map[uint64]string{}
	}
	if _, ok := a.syncDirs[dev]; !ok {
		a.syncDirs[dev] = d.rel
	}
	if a.noted == nil {
		a.noted = map[string]bool{}
	}
	a.noted[d.rel] = true
	return nil
}

// syncFS makes everything written on dir's filesystem durable.
func (a *applier) syncFS(dir string) error {
	if err := a.hook("sync", dir); err != nil {
		return err
	}
	d, err := a.dirs.get(dir)
	if err != nil {
		return fmt.Errorf("apply: sync %s: %w", dir, err)
	}
	err = d.syncFS()
	a.dirs.release(d)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return nil
}

// byDir calls fn once per parent directory with that directory's paths (in
// the order given, grouped), from the applier's directory cache. With
// create, missing parents are made first.
func (a *applier) byDir(paths []string, create bool, fn func(d *dirHandle, paths []string) error) error {
	groups := map[string][]string{}
	var dirs []string
	for _, p := range paths {
		dir := path.Dir(p)
		if _, ok := groups[dir]; !ok {
			dirs = append(dirs, dir)
		}
		groups[dir] = append(groups[dir], p)
	}
	for _, dir := range dirs {
		if create {
			if err := a.makeParents(groups[dir][0]); err != nil {
				return err
			}
		}
		d, err := a.dirs.get(dir)
		if err != nil {
			return fmt.Errorf("apply: open %s: %w", dir, err)
		}
		err = fn(d, groups[dir])
		a.dirs.release(d)
		if err != nil {
			return err
		}
	}
	return nil
}

func stagingName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return StagingPrefix + hex.EncodeToString(b[:])
}

// stageLeaf writes p's target state under a staging name in d and returns
// that name, or "" when p already has its target state (after fixing its
// mode if only that differed).
func (a *applier) stageLeaf(d *dirHandle, p string, t NodeState) (string, error) {
	name := path.Base(p)
	st, err := d.lstat(name)
	ok := err == nil
	if err != nil && !isNotExist(err) {
		return "", fmt.Errorf("apply: %w", err)
	}
	switch {
	case ok && t.Kind == fileKind && st.kind == fileKind && st.size == t.Size:
		same, err := a.sameContent(d, p, t.Blob)
		if err != nil {
			return "", err
		}
		if same {
			if a.preparing && st.mode != t.Mode {
				return "", errLater
			}
			return "", a.chmod(p, st.mode, t.Mode)
		}
	case ok && t.Kind == symlinkKind && st.kind == symlinkKind:
		cur, err := d.readlink(name)
		if err != nil {
			return "", fmt.Errorf("apply: %w", err)
		}
		if cur == t.Target {
			return "", nil
		}
	case ok && t.Kind == fifoKind && st.kind == fifoKind:
		if a.preparing && st.mode != t.Mode {
			return "", errLater
		}
		return "", a.chmod(p, st.mode, t.Mode)
	}
	if err := a.ensureWritable(d.rel); err != nil {
		return "", err
	}
	if err := a.hook("write", p); err != nil {
		return "", err
	}
	tmp := stagingName()
	switch t.Kind {
	case fileKind:
		if useSyncFS {
			if err := a.noteFS(d); err != nil {
				return "", err
			}
		}
		// Created, filled and closed (or handed to the syncer) by a worker.
		a.batch = append(a.batch, fillJob{p: p, dir: d.rel, tmp: tmp, t: t})
		if len(a.batch) >= maxBatch {
			a.flushBatch()
		}
	case symlinkKind:
		if err := d.symlink(t.Target, tmp); err != nil {
			return "", fmt.Errorf("apply: %w", err)
		}
	case fifoKind:
		if err := d.mkfifo(tmp); err != nil {
			return "", fmt.Errorf("apply: %w", err)
		}
		if err := a.root.Chmod(joinRel(d.rel, tmp), t.Mode); err != nil {
			_ = d.remove(tmp)
			return "", fmt.Errorf("apply: chmod %s: %w", p, err)
		}
	}
	return tmp, nil
}

// fillFile writes the blob into f and sets the mode. Aligned blocks of
// zeros stay holes, so a sparse file comes back sparse.
func (a *applier) fillFile(f *os.File, t NodeState) error {
	sw := sparse.NewWriter(f)
	cw := &countWriter{w: sw}
	if err := a.blobs.WriteBlob(t.Blob, cw); err != nil {
		return err
	}
	if cw.n != t.Size {
		return fmt.Errorf("%w: blob %s has %d bytes, the node state says %d", journal.ErrCorrupt, t.Blob, cw.n, t.Size)
	}
	if err := sw.Finish(); err != nil {
		return err
	}
	return f.Chmod(t.Mode)
}

// sameContent reports whether the file at p (in d) holds exactly the blob's
// bytes.
func (a *applier) sameContent(d *dirHandle, p string, ref BlobRef) (bool, error) {
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
		return false, checkBlob(p, ref, err)
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
	// Directories outside the target that were opened up get their mode
	// back. One the target names is the target's to decide: it may now be
	// a file or a symlink, which must not get the old directory's mode (a
	// chmod would follow the link to its target).
	for _, dir := range sortedKeys(a.writable) {
		mode := a.writable[dir]
		if _, inTarget := a.target[dir]; mode == nil || inTarget {
			continue
		}
		st, ok, err := a.lstat(dir)
		if err != nil {
			return err
		}
		if !ok || st.kind != dirKind {
			continue
		}
		if err := a.root.Chmod(dir, *mode); err != nil {
			return fmt.Errorf("apply: chmod %s: %w", dir, err)
		}
	}
	return nil
}

// syncFSDirs is how many touched directories make one syncfs per
// filesystem cheaper than an fsync per directory (each fsync waits for a
// journal commit of its own).
const syncFSDirs = 16

// syncTouched makes the entries of every directory whose entries changed
// durable: an fsync per directory, or with syncfs and many directories, one
// syncfs per filesystem they live on.
func (a *applier) syncTouched() error {
	bulk := useSyncFS && len(a.touched) > syncFSDirs
	devs := map[uint64]string{}
	for _, dir := range sortedKeys(a.touched) {
		d, err := a.dirs.get(dir)
		if err != nil {
			if isNotExist(err) {
				continue // removed later in the same apply
			}
			return fmt.Errorf("apply: sync %s: %w", dir, err)
		}
		if bulk {
			var dev uint64
			if dev, err = d.dev(); err == nil {
				if _, ok := devs[dev]; !ok {
					devs[dev] = dir
				}
			}
		} else {
			err = d.sync()
		}
		a.dirs.release(d)
		if err != nil {
			return fmt.Errorf("apply: sync %s: %w", dir, err)
		}
	}
	for _, dir := range devs {
		d, err := a.dirs.get(dir)
		if err != nil {
			return fmt.Errorf("apply: sync %s: %w", dir, err)
		}
		err = d.syncFS()
		a.dirs.release(d)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
	}
	return nil
}

// manifest stats every present target path for the stat cache.
func (a *applier) manifest(paths []string) (Manifest, error) {
	m := make(Manifest, len(paths))
	now := time.Now().UnixNano()
	var present []string
	for _, p := range paths {
		if a.target[p].Kind != absentKind && !slices.Contains(a.unsupported, p) {
			present = append(present, p)
		}
	}
	err := a.byDir(present, false, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			t := a.target[p]
			st, err := d.lstat(path.Base(p))
			if errors.Is(err, fs.ErrNotExist) || (err == nil && st.kind != t.Kind) {
				// Another process (one the agent left running) changed the
				// path after the apply wrote it: the apply is done, and the
				// stat cache must not vouch for the path (its entry goes).
				continue
			}
			if err != nil {
				return fmt.Errorf("apply %s: stat after the apply: %w", p, err)
			}
			e := st.entry(t)
			if st.ctimeNs > now-int64(racyWindow) || st.mtimeNs > now-int64(racyWindow) {
				e.CtimeNs = racyCtime
			}
			m[p] = e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// CleanStaging removes leftover staging files (StagingPrefix) of a crashed
// apply from the given directories. Missing directories are ignored.
func CleanStaging(root *os.Root, dirs []string) error {
	c := newDirCache(root)
	defer c.close()
	return cleanStaging(c, dirs)
}

func cleanStaging(c *dirCache, dirs []string) error {
	root := c.root
	for _, dir := range dirs {
		d, err := c.get(dir)
		if err != nil {
			if isNotExist(err) || !c.isDir(dir) {
				continue
			}
			return fmt.Errorf("clean staging files in %s: %w", dir, err)
		}
		names, err := d.names()
		c.release(d)
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
