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
	"sync"
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
//
// In order: leftover staging files of a crashed apply are removed from the
// parents of the target paths; paths that must be absent or change kind are
// removed, deepest first; directories are created top down (owner-writable);
// files, symlinks and fifos are staged beside their path (a file that
// already holds the target bytes is not rewritten; files are created and
// filled from blobs by a few workers, one directory's files together), made
// durable (one syncfs per filesystem on Linux, concurrent fsyncs elsewhere)
// and renamed over their path; directories get their final modes, deepest
// first, so a 0555 directory still receives its children; the changed
// directories are made durable (fsynced, or one syncfs per filesystem when
// there are many). Nothing is read or written through a symlink, and each
// directory is opened once per apply, relative to its parent. Paths whose
// kind the system cannot create are skipped and reported with a wrapped
// ErrUnsupported after everything else is done.
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
	a := &applier{root: root, blobs: blobs, target: target, progress: progress, touched: map[string]bool{},
		writable: map[string]*os.FileMode{}, dirs: newDirCache(root)}
	defer a.dirs.close()
	parents := map[string]bool{}
	for _, p := range paths {
		parents[path.Dir(p)] = true
	}
	if err := cleanStaging(a.dirs, sortedKeys(parents)); err != nil {
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

// writeLeaves writes files, symlinks and fifos, one directory at a time:
// each is staged beside its target, then, once every staged file is
// durable, renamed over it.
func (a *applier) writeLeaves(paths []string) error {
	var leaves []string
	for _, p := range paths {
		switch a.target[p].Kind {
		case fileKind, symlinkKind, fifoKind:
			leaves = append(leaves, p)
		}
	}
	var pending []string         // paths staged, grouped by directory
	tmpOf := map[string]string{} // path -> staging name
	a.syncer = newSyncer()
	a.filler = newPool(applyWorkers)
	err := a.byDir(leaves, true, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			if err := a.filler.failed(); err != nil {
				return err
			}
			tmp, err := a.stageLeaf(d, p, a.target[p])
			if errors.Is(err, ErrUnsupported) {
				a.unsupported = append(a.unsupported, p)
				continue
			}
			if err != nil {
				return err
			}
			if tmp == "" {
				a.done() // already right
				continue
			}
			pending = append(pending, p)
			tmpOf[p] = tmp
		}
		a.flushBatch()
		return nil
	})
	if ferr := a.filler.wait(); err == nil && ferr != nil {
		err = ferr
	}
	if serr := a.syncer.wait(); err == nil && serr != nil {
		err = fmt.Errorf("apply: %w", serr)
	}
	if err != nil {
		// Files other workers staged meanwhile are removed (best effort;
		// the next apply removes what is left).
		_ = a.byDir(pending, false, func(d *dirHandle, ps []string) error {
			for _, p := range ps {
				_ = d.remove(tmpOf[p])
			}
			return nil
		})
		return err
	}
	for _, dir := range a.syncDirs {
		if err := a.syncFS(dir); err != nil {
			return err
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return a.byDir(pending, false, func(d *dirHandle, ps []string) error {
		for _, p := range ps {
			if err := a.hook("rename", p); err != nil {
				return err // a crash leaves the staging file for the next apply
			}
			if err := d.rename(tmpOf[p], path.Base(p)); err != nil {
				_ = d.remove(tmpOf[p])
				return fmt.Errorf("apply: %w", err)
			}
			a.touched[d.rel] = true
			a.done()
		}
		return nil
	})
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

// fillFile writes the blob into f and sets the mode.
func (a *applier) fillFile(f *os.File, t NodeState) error {
	cw := &countWriter{w: f}
	if err := a.blobs.WriteBlob(t.Blob, cw); err != nil {
		return err
	}
	if cw.n != t.Size {
		return fmt.Errorf("blob %016x has %d bytes, the node state says %d", t.Blob.Hash, cw.n, t.Size)
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
			if err != nil || st.kind != t.Kind {
				return fmt.Errorf("apply %s: is not a %s after the apply (%v)", p, t.Kind, err)
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

// applyWorkers is how many staged files are created and filled at once:
// reading and decompressing one blob and the file system's work for one
// file overlap with another's.
const applyWorkers = 3

// maxBatch is how many files of one directory go to one worker at most.
const maxBatch = 64

// flushBatch hands the batched files to one worker: files of the same
// directory go together (up to maxBatch), because creating files in one
// directory at once only makes them wait for each other's locks.
func (a *applier) flushBatch() {
	batch := a.batch
	if len(batch) == 0 {
		return
	}
	a.batch = nil
	a.filler.submit(func() error {
		for _, job := range batch {
			if err := a.stageFile(job); err != nil {
				return err
			}
		}
		return nil
	})
}

// fillJob is a file to stage with its target content.
type fillJob struct {
	p        string // the target path
	dir, tmp string // the staging file's directory and name
	t        NodeState
}

// stageFile creates the staging file of job, writes the blob into it, sets
// its mode, then closes it (syncfs) or hands it to the syncer. A file that
// fails is removed.
func (a *applier) stageFile(job fillJob) error {
	d, err := a.dirs.get(job.dir)
	if err != nil {
		return fmt.Errorf("apply %s: %w", job.p, err)
	}
	defer a.dirs.release(d)
	f, err := d.createTemp(job.tmp)
	if err != nil {
		return fmt.Errorf("apply %s: %w", job.p, err)
	}
	err = a.fillFile(f, job.t)
	switch {
	case err != nil:
		f.Close()
	case useSyncFS:
		err = f.Close()
	default:
		a.syncer.add(f) // fsynced and closed in the background
	}
	if err != nil {
		_ = d.remove(job.tmp)
		return fmt.Errorf("apply %s: %w", job.p, err)
	}
	return nil
}

// pool runs jobs on a few goroutines. Once a job failed, the jobs not yet
// started are dropped; wait returns the first error.
type pool struct {
	jobs chan func() error
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

func newPool(n int) *pool {
	p := &pool{jobs: make(chan func() error, 2*n)}
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				if p.failed() != nil {
					continue
				}
				if err := job(); err != nil {
					p.mu.Lock()
					if p.err == nil {
						p.err = err
					}
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// submit queues a job (it blocks while the queue is full).
func (p *pool) submit(job func() error) { p.jobs <- job }

// failed returns the first error of a job so far.
func (p *pool) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait returns once every submitted job is done or dropped.
func (p *pool) wait() error {
	close(p.jobs)
	p.wg.Wait()
	return p.failed()
}

// useSyncFS selects syncfs (where the system has it) over per-file fsyncs;
// tests switch it off to exercise the other way.
var useSyncFS = canSyncFS

// syncWorkers is how many staged files are fsynced at once: concurrent
// fsyncs share journal commits, which makes many small files much cheaper
// to make durable than one fsync after another.
const syncWorkers = 32

// syncer fsyncs and closes staged files in the background.
type syncer struct {
	files chan *os.File
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

func newSyncer() *syncer {
	s := &syncer{files: make(chan *os.File, syncWorkers)}
	for range syncWorkers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for f := range s.files {
				err := f.Sync()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					s.mu.Lock()
					if s.err == nil {
						s.err = err
					}
					s.mu.Unlock()
				}
			}
		}()
	}
	return s
}

func (s *syncer) add(f *os.File) { s.files <- f }

// wait returns once every added file is synced and closed.
func (s *syncer) wait() error {
	close(s.files)
	s.wg.Wait()
	return s.err
}
