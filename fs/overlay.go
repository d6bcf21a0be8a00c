//go:build linux || darwin

package fs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// store is the part of the journal the overlay writes to.
type store interface {
	PutBlob(r io.Reader) (journal.BlobRef, error)
	WriteBlob(ref journal.BlobRef, w io.Writer) error
	PutChanges(id tasks.ID, changes []journal.Change) error
	DeleteChanges(id tasks.ID, paths []string) error
	LayerChange(id tasks.ID, path string) (journal.Change, bool, error)
	// Sync makes every record written so far durable: an fsync through
	// the mount returns only after it.
	Sync() error
}

// Overlay is a mounted copy-on-write view of a root.
type Overlay struct {
	space spaceGauge // free space of the staging file system (space.go)
	path  string
	store store
	lower *lowerTree
	upper string // StagingDir/upper: the upper tree, same shape as the view
	tmp   string // StagingDir/tmp: blobs being materialised
	logf  func(string, ...any)
	conn  *conn
	dev   uint64 // device number of the mounted file system
	root  *node

	// epoch changes whenever the task changes (checkpoint, SetView), so
	// open write handles notice that their next write is a first change.
	epoch atomic.Uint64

	// wmu orders content writes (read-locked for each write) against task
	// changes (locked by Checkpoint and SetView): a write is wholly in the
	// old task or wholly in the new one. Lock order: wmu, then mu.
	wmu sync.RWMutex

	// mu guards everything below and serialises namespace changes. No
	// content I/O of a whole file runs under it (content.go); the lock
	// order is in doc.go.
	mu            sync.Mutex
	task          tasks.ID
	layerMayExist bool                         // the task may have records from before this session
	before        map[string]journal.NodeState // first-change states of the task's paths
	written       map[string]bool              // paths with a record in the task's layer
	pending       map[string]bool              // changed paths whose records are not written yet
	flushArmed    bool                         // a timer will flush pending
	whiteout      map[string]bool              // hidden lower paths
	upperAbsent   map[string]bool              // directories known to be missing from the upper tree (view.go)
	opaque        map[string]bool              // upper dirs whose lower children are hidden
	inos          map[string]uint64            // inode numbers of upper objects
	nextIno       uint64
	lowerBlobs    map[string]journal.BlobRef // content of lower files already hashed
	writers       map[*node]int              // file nodes with open write handles
	linking       map[*node]string           // created file nodes go-fuse may not have linked into its tree yet, and their paths
	undo          *viewUndo                  // the view change in progress (move.go)
	busy          map[string]chan struct{}   // paths whose content is read outside o.mu, closed when done (content.go)
	staged        map[string]stagedCopy      // lower files copied outside o.mu, for copyUp (content.go)
	lowerFlagsOf  map[string][2]bool         // immutable, append-only of lower objects (flags.go)
	skipped       map[string]bool            // sockets and devices met by a record, not yet reported (Skipped)
	specials      map[string]bool            // every path skipped, for RemovedSpecials
	removedSpec   []string                   // RemovedSpecials, once unmounted
	unmounted     bool
	passthrough   atomic.Bool  // the kernel passes opened upper files through (passthrough.go); set once serving
	writes        atomic.Int64 // WRITE requests served (passthrough writes never come)

	hmu    sync.Mutex
	hashed map[uint64]*hashEntry // upper file inode -> content blob
}

// hashEntry caches the blob of an upper file; gen counts writes so a hash
// computed while a write ran is not kept.
type hashEntry struct {
	gen   uint64
	valid bool
	mtime int64
	blob  journal.BlobRef
	seen  fileStamp // the file as it was when it was hashed
}

// fileStamp is what a change of a file's content changes: its size and
// times. On Linux 6.13 and later a change after a stat always gets a new,
// fine-grained change time (multigrain timestamps).
type fileStamp struct{ size, mtime, ctime int64 }

func stampOf(st *unix.Stat_t) fileStamp {
	return fileStamp{st.Size, statMtimeNs(st), statCtimeNs(st)}
}

// cacheTimeout is the kernel's entry, attribute and negative-entry timeout.
// Long timeouts are safe: nothing but this overlay changes the view (the
// lower tree is hidden under the mount, the upper tree is private), every
// change made through the mount updates the kernel's caches in its reply,
// and SetView invalidates every path it changes explicitly.
const cacheTimeout = time.Hour

// Mount opens the root directory as the lower tree and mounts the overlay
// over it.
func Mount(opts Options) (*Overlay, error) {
	if opts.Journal == nil {
		return nil, fmt.Errorf("mount %s: no journal", opts.RootPath)
	}
	return mount(opts, opts.Journal)
}

func mount(opts Options, st store) (*Overlay, error) {
	if !filepath.IsAbs(opts.RootPath) || !filepath.IsAbs(opts.StagingDir) {
		return nil, fmt.Errorf("mount %s: root and staging dir must be absolute", opts.RootPath)
	}
	o := &Overlay{
		path:         filepath.Clean(opts.RootPath),
		store:        st,
		upper:        filepath.Join(opts.StagingDir, "upper"),
		tmp:          filepath.Join(opts.StagingDir, "tmp"),
		logf:         opts.Logf,
		task:         opts.Task,
		before:       map[string]journal.NodeState{},
		written:      map[string]bool{},
		pending:      map[string]bool{},
		whiteout:     map[string]bool{},
		upperAbsent:  map[string]bool{},
		opaque:       map[string]bool{},
		inos:         map[string]uint64{},
		nextIno:      1 << 63,
		lowerBlobs:   map[string]journal.BlobRef{},
		writers:      map[*node]int{},
		linking:      map[*node]string{},
		busy:         map[string]chan struct{}{},
		staged:       map[string]stagedCopy{},
		lowerFlagsOf: map[string][2]bool{},
		skipped:      map[string]bool{},
		specials:     map[string]bool{},
		hashed:       map[uint64]*hashEntry{},
	}
	if o.logf == nil {
		o.logf = func(string, ...any) {}
	}
	o.layerMayExist = true
	// The upper tree is reached by path: inside the root it would be under
	// the mount, and every access would come back into the overlay.
	if rel, err := filepath.Rel(o.path, filepath.Clean(opts.StagingDir)); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("mount %s: staging dir %s: %w", o.path, opts.StagingDir, ErrStagingInRoot)
	}
	for _, d := range []string{o.upper, o.tmp} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("mount %s: clear %s: %w", o.path, d, err)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("mount %s: %w", o.path, err)
		}
	}
	if err := os.Chmod(opts.StagingDir, 0o700); err != nil {
		return nil, fmt.Errorf("mount %s: %w", o.path, err)
	}
	lower, err := openLower(o.path)
	if err != nil {
		return nil, err
	}
	o.lower = lower
	var rst unix.Stat_t
	if err := lower.lstat("", &rst); err != nil {
		lower.close()
		return nil, fmt.Errorf("mount %s: %w", o.path, err)
	}
	// The upper root stands for the lower root: same inode, mode, owner, times.
	o.inos[""] = uint64(rst.Ino)
	unix.Chmod(o.upper, uint32(rst.Mode)&0o7777)
	unix.Lchown(o.upper, int(rst.Uid), int(rst.Gid))
	unix.UtimesNanoAt(unix.AT_FDCWD, o.upper, []unix.Timespec{statAtime(&rst), statMtime(&rst)}, 0)
	timeout := cacheTimeout
	fopts := &fusefs.Options{
		MountOptions:    mountOptions(o.path),
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		NullPermissions: true,
		RootStableAttr:  &fusefs.StableAttr{Ino: uint64(rst.Ino)},
	}
	c, err := serve(o, fopts)
	if err != nil {
		lower.close()
		return nil, fmt.Errorf("mount %s: %w", o.path, err)
	}
	o.conn = c
	o.passthrough.Store(c.passthrough())
	var mst unix.Stat_t
	if err := unix.Stat(o.path, &mst); err == nil {
		o.dev = uint64(mst.Dev)
	}
	return o, nil
}

// mountOptions are the FUSE mount options of every overlay.
func mountOptions(root string) fuse.MountOptions {
	return fuse.MountOptions{
		DirectMount:      true,
		DirectMountFlags: directMountFlags(root),
		// As root, others (the agent running as the user) must see the
		// mount, and the kernel checks permissions against our attributes.
		// A normal user's agent runs as that user: no allow_other, which
		// fusermount3 refuses unless /etc/fuse.conf has user_allow_other.
		AllowOther: os.Geteuid() == 0,
		Options:    []string{"default_permissions"},
		FsName:     "timeagent",
		Name:       "timeagent",
		MaxWrite:   1 << 20,
		// Directory listings are served from Readdir; Lookup answers READDIRPLUS.
		DisableXAttrs: false,
	}
}

// serverStopWait is how long Unmount waits for the server to stop once the
// mount is gone before it aborts the connection.
const serverStopWait = 2 * time.Second

// unmountServer unmounts and waits until the server has stopped. The kernel
// keeps a connection alive while any mount namespace still holds a copy of
// the mount (another process's private namespace made while this one was
// mounted, such as another root's run --isolate): the server would then
// wait for that namespace to end. Once the mount is gone from here, the
// session is over, so the connection is aborted instead.
func (o *Overlay) unmountServer() error {
	done := make(chan error, 1)
	go func() { done <- o.conn.unmount() }()
	select {
	case err := <-done:
		return err
	case <-time.After(serverStopWait):
	}
	if still, _ := isMountPoint(o.path, o.dev); still {
		// Still mounted here: the unmount is retrying (busy); let it finish.
		return <-done
	}
	if err := abortConn(o.dev); err != nil {
		o.logf("%v", err)
	}
	return <-done
}

// Root returns the mounted path.
func (o *Overlay) Root() string { return o.path }

// LowerRoot returns the lower tree (the real files under the mount) as an
// os.Root, valid until Unmount: the session applies its final state to it.
func (o *Overlay) LowerRoot() *os.Root { return o.lower.root }

// Flush records the content of every file that is open for writing, and
// every change not yet written, into the journal.
func (o *Overlay) Flush() error {
	o.mu.Lock()
	nodes := make([]*node, 0, len(o.writers))
	for n := range o.writers {
		nodes = append(nodes, n)
	}
	o.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		o.sawBlindWrites(n)
		o.prehash(n)
		if err := o.commitNode(n); err != nil {
			errs = append(errs, err)
		}
	}
	o.mu.Lock()
	errs = append(errs, o.flushPending())
	o.mu.Unlock()
	return errors.Join(errs...)
}

// Checkpoint flushes, then attributes later first-changes to next. Nothing
// is copied.
func (o *Overlay) Checkpoint(next tasks.ID) error {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if err := o.Flush(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", o.path, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	sealed, err := o.sealWriters()
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", o.path, err)
	}
	o.setTask(next, false)
	o.carryWriters(sealed, nil)
	return nil
}

// setTask starts recording into task id. Must hold o.mu, with nothing
// pending (flushPending).
func (o *Overlay) setTask(id tasks.ID, mayExist bool) {
	o.task = id
	o.layerMayExist = mayExist
	o.before = map[string]journal.NodeState{}
	o.written = map[string]bool{}
	o.epoch.Add(1)
}

// Unmount flushes and unmounts. A busy mount is detached lazily and its
// connection aborted, so when Unmount returns the overlay records nothing
// more: the layer read next is final. It is idempotent.
func (o *Overlay) Unmount() error {
	o.mu.Lock()
	if o.unmounted {
		o.mu.Unlock()
		return nil
	}
	o.unmounted = true
	o.mu.Unlock()
	ferr := o.Flush()
	if err := o.unmountServer(); err != nil {
		o.logf("unmount %s: %v; detaching lazily", o.path, err)
		if err := Unmount(o.path); err != nil {
			return errors.Join(ferr, fmt.Errorf("unmount %s: %w", o.path, err))
		}
		// Processes still inside the mount keep it alive: cut them off,
		// so nothing is recorded once Unmount has returned.
		if err := o.conn.stopDetached(o.dev); err != nil {
			o.logf("unmount %s: %v", o.path, err)
		}
	}
	// Changes made between the flush and the unmount.
	if err := o.Flush(); err != nil && ferr == nil {
		ferr = err
	}
	o.mu.Lock()
	o.removedSpec = o.goneSpecials()
	o.mu.Unlock()
	o.lower.close()
	if ferr != nil {
		return fmt.Errorf("unmount %s: %w", o.path, ferr)
	}
	return nil
}

// Mounted reports whether the overlay is still mounted on its root (the
// agent, when it may, can unmount it under the session).
func (o *Overlay) Mounted() bool {
	ok, err := isMountPoint(o.path, o.dev)
	return err == nil && ok
}

// Transport names how the kernel's requests reach the overlay: "io_uring"
// (FUSE over io_uring) or "/dev/fuse".
func (o *Overlay) Transport() string { return o.conn.transport() }
