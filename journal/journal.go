package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Errors callers branch on. The CLI maps them to one-line messages.
var (
	// ErrForeign: the journal records a different root.
	ErrForeign = errors.New("journal belongs to another root")
	// ErrSchema: the journal was written by an incompatible version.
	ErrSchema = errors.New("journal schema version not supported")
	// ErrCorrupt: a record or blob failed to decode or verify.
	ErrCorrupt = errors.New("journal is damaged")
	// ErrBusy: another process has the journal open.
	ErrBusy = errors.New("journal is in use by another process")
	// ErrNotFound: no such record.
	ErrNotFound = errors.New("not found")
	// ErrDeleted: the journal's directory was deleted while it was open.
	ErrDeleted = errors.New("the journal's directory was deleted while it was open")
)

// Journal is the open database of one root.
type Journal struct {
	dir  string
	root string
	db   *badger.DB

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// zeroChunk is the stored chunk of ChunkSize zero bytes once this
	// process has stored or checked it (blob.go).
	zeroChunk atomic.Pointer[chunkRef]
	// readOnly is set by OpenReadOnly: every write fails.
	readOnly bool
}

// errClosed is returned by every method called after Close.
var errClosed = errors.New("journal is closed")

// errReadOnly is returned by every write to a journal opened by
// OpenReadOnly: a command that writes must open it with Open.
var errReadOnly = errors.New("journal is open read-only (a bug: this command must open it for writing)")

// badgerOptions are tuned for a CLI that opens the journal, does a little
// and closes it, many times a minute: small memtables and caches (allocated
// at every Open), no metrics, no logging at all (badger logs to stderr by
// default, which would reach the user's terminal), one version per key.
// Writes are not synced one by one; Update and Sync call db.Sync where
// durability is promised.
func badgerOptions(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithMetricsEnabled(false).
		WithNumVersionsToKeep(1).
		WithSyncWrites(false).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(12).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithBaseTableSize(2 << 20).
		WithValueLogFileSize(256 << 20).
		// Chunks (up to 1 MiB) go to the value log; records stay in the LSM tree.
		WithValueThreshold(4 << 10).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithDetectConflicts(true).
		WithCompactL0OnClose(false)
}

// compactLevel0At is the number of level-0 tables at which a read-write
// open compacts level 0 when it closes (badger's own compactors want 4, but
// do not get the time in a command that lives 50 ms).
const compactLevel0At = 8

// Open opens (creating if needed) the journal in dir for root. It refuses a
// journal that records another root (ErrForeign) or another schema version
// (ErrSchema), and a directory another process holds (ErrBusy).
func Open(dir, root string) (*Journal, error) {
	if root == "" {
		return nil, fmt.Errorf("open journal %s: empty root", dir)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	if err := checkSpace(dir, 0, openReserve); err != nil {
		return nil, fmt.Errorf("open journal %s: %w", dir, err)
	}
	if err := removeEmptyLogs(dir); err != nil {
		return nil, err
	}
	db, err := openBadger(dir)
	if err != nil {
		return nil, err
	}
	restrictFiles(dir)
	j := &Journal{dir: dir, root: root, db: db}
	if err := j.checkMeta(); err != nil {
		db.Close()
		return nil, err
	}
	return j, nil
}

// ErrNeedsWrite means a journal cannot be opened read-only: it does not
// exist yet, or badger must first repair its log after a crash. Open it
// with Open.
var ErrNeedsWrite = errors.New("the journal must be opened for writing")

// OpenReadOnly opens an existing journal for reading only, for the
// commands that only read the history (status, log). A read-write open
// creates a memtable and a value-log file and syncs them away again at
// close, which costs a listing more than reading it; a read-only open does
// none of that. It refuses (ErrNeedsWrite, or the open's error) whatever
// Open would first have to write or repair: the caller then uses Open.
func OpenReadOnly(dir, root string) (*Journal, error) {
	if root == "" {
		return nil, fmt.Errorf("open journal %s: empty root", dir)
	}
	if runtime.GOOS == "windows" {
		// badger refuses read-only opens there (ErrWindowsNotSupported).
		return nil, fmt.Errorf("open journal %s read-only: %w (not on Windows)", dir, ErrNeedsWrite)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, fmt.Errorf("open journal %s read-only: %w (%v)", dir, ErrNeedsWrite, err)
	}
	if busy, perr := dirLocked(dir); perr == nil && busy {
		return nil, fmt.Errorf("open journal %s: %w", dir, ErrBusy)
	}
	db, err := openBadgerWith(dir, badgerOptions(dir).WithReadOnly(true))
	if err != nil {
		return nil, err
	}
	j := &Journal{dir: dir, root: root, db: db, readOnly: true}
	if err := j.checkMeta(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// ReadOnly reports whether j was opened by OpenReadOnly.
func (j *Journal) ReadOnly() bool { return j.readOnly }

// prepareDir creates dir 0700 (tightening an existing one) and refuses a
// non-empty directory that holds no badger manifest: it is not a journal.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("open journal %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("open journal %s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("open journal %s: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open journal %s: %w", dir, err)
	}
	var manifest bool
	var other []string
	for _, e := range entries {
		switch e.Name() {
		case "MANIFEST":
			manifest = true
		case "LOCK":
		default:
			other = append(other, e.Name())
		}
	}
	if !manifest && len(other) == 1 && other[0] == "MANIFEST-REWRITE" {
		// badger writes the first MANIFEST as MANIFEST-REWRITE and renames
		// it, before any other file: a journal whose creation was killed
		// there holds nothing, and is created again.
		if err := os.Remove(filepath.Join(dir, "MANIFEST-REWRITE")); err != nil {
			return fmt.Errorf("open journal %s: remove an unfinished MANIFEST-REWRITE: %w", dir, err)
		}
		return nil
	}
	if !manifest && len(other) > 0 {
		return fmt.Errorf("open journal %s: %w: not a journal (no MANIFEST, holds %q)", dir, ErrCorrupt, other[0])
	}
	return nil
}

// openBadger opens the database, converting badger's errors (which do not
// wrap their causes) and panics into ErrBusy, errno-carrying errors and
// ErrCorrupt.
func openBadger(dir string) (db *badger.DB, err error) {
	if busy, perr := dirLocked(dir); perr == nil && busy {
		return nil, fmt.Errorf("open journal %s: %w", dir, ErrBusy)
	}
	return openBadgerWith(dir, badgerOptions(dir))
}

// openBadgerWith opens badger with opt, its panics on damaged files turned
// into ErrCorrupt.
func openBadgerWith(dir string, opt badger.Options) (db *badger.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("open journal %s: %w: badger panicked: %v", dir, ErrCorrupt, r)
		}
	}()
	level0, err := checkTables(dir, opt)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", dir, classifyOpenError(err))
	}
	if level0 >= compactLevel0At && !opt.ReadOnly {
		// Each command that writes leaves one more table in level 0 when
		// it closes, and a command ends before badger's background
		// compaction starts: level 0 would grow without end, and every open
		// and read go through all of it. This command's close merges it.
		opt = opt.WithCompactL0OnClose(true)
	}
	db, err = badger.Open(opt)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", dir, classifyOpenError(err))
	}
	return db, nil
}

// restrictFiles makes every file in dir private (badger creates its LOCK
// file 0666 minus umask). Best effort: dir itself is already 0700.
func restrictFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(filepath.Join(dir, e.Name()), 0o600)
		}
	}
}

// checkMeta writes the schema version and root into a new journal and
// checks them in an existing one.
func (j *Journal) checkMeta() error {
	var schema, root []byte
	var empty bool
	err := j.view("open", func(txn *badger.Txn) error {
		var err error
		if schema, err = getCopy(txn, keySchema); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if root, err = getCopy(txn, keyRoot); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		it.Rewind()
		empty = !it.Valid()
		return nil
	})
	if err != nil {
		return fmt.Errorf("open journal %s: %w", j.dir, err)
	}
	if empty && j.readOnly {
		return fmt.Errorf("open journal %s read-only: %w (it is empty)", j.dir, ErrNeedsWrite)
	}
	if empty {
		err := j.db.Update(func(txn *badger.Txn) error {
			if err := txn.Set(keySchema, u64(SchemaVersion)); err != nil {
				return err
			}
			return txn.Set(keyRoot, []byte(j.root))
		})
		if err == nil {
			err = j.db.Sync()
		}
		if err != nil {
			return fmt.Errorf("open journal %s: write schema: %w", j.dir, writeError(err))
		}
		return nil
	}
	if schema == nil {
		return fmt.Errorf("open journal %s: %w: no schema version record", j.dir, ErrCorrupt)
	}
	v, err := parseU64(schema)
	if err != nil {
		return fmt.Errorf("open journal %s: schema version: %w", j.dir, err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("open journal %s: %w: journal has schema version %d, this timeagent supports %d",
			j.dir, ErrSchema, v, SchemaVersion)
	}
	if root == nil {
		return fmt.Errorf("open journal %s: %w: no root record", j.dir, ErrCorrupt)
	}
	if string(root) != j.root {
		return fmt.Errorf("open journal %s: %w: it records root %q, not %q", j.dir, ErrForeign, root, j.root)
	}
	return nil
}

// Close flushes and closes the database.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		j.closed.Store(true)
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("close journal %s: %w: badger panicked: %v", j.dir, ErrCorrupt, r)
				}
			}()
			var err error
			if cerr := j.db.Close(); cerr != nil {
				err = fmt.Errorf("close journal %s: %w", j.dir, writeError(cerr))
			}
			done <- err
		}()
		j.closeErr = j.waitClose(done)
		if !j.readOnly {
			restrictFiles(j.dir)
		}
	})
	return j.closeErr
}

// waitClose waits for badger's close to end. Badger retries a memtable
// flush that fails forever, so the close of a journal whose directory was
// deleted would never end: the directory is looked at every second, and
// its absence ends the wait with ErrDeleted (badger's goroutines end with
// the process).
func (j *Journal) waitClose(done <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if _, err := os.Stat(filepath.Join(j.dir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("close journal %s: %w", j.dir, ErrDeleted)
			}
		}
	}
}

// Dir is the directory the database lives in.
func (j *Journal) Dir() string { return j.dir }

// Root is the canonical root path the journal belongs to.
func (j *Journal) Root() string { return j.root }

// Sync makes everything written so far durable.
func (j *Journal) Sync() error {
	if j.closed.Load() {
		return fmt.Errorf("sync journal %s: %w", j.dir, errClosed)
	}
	if j.readOnly {
		return nil // nothing was written
	}
	if err := j.db.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.dir, writeError(err))
	}
	restrictFiles(j.dir)
	return nil
}

// view runs fn in a read transaction, turning a panic (badger can panic on
// damaged tables) or a memory fault on a damaged mmapped file into ErrCorrupt.
func (j *Journal) view(op string, fn func(txn *badger.Txn) error) (err error) {
	if j.closed.Load() {
		return fmt.Errorf("%s: %w", op, errClosed)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: badger panicked: %v", op, ErrCorrupt, r)
		}
	}()
	return j.db.View(fn)
}

// getCopy returns a copy of key's value, or ErrNotFound.
func getCopy(txn *badger.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, readError(err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, readError(err)
	}
	return v, nil
}

// scan calls fn for every key under prefix in key order. key and value are
// only valid during the call.
func (j *Journal) scan(op string, prefix []byte, fn func(key, val []byte) error) error {
	return j.view(op, func(txn *badger.Txn) error {
		// Records are small and sit in the LSM tree beside their keys:
		// prefetching them would only copy each one once more.
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()
			if err := item.Value(func(v []byte) error { return fn(key, v) }); err != nil {
				return fmt.Errorf("%s: %s: %w", op, describeKey(key), readError(err))
			}
		}
		return nil
	})
}

// getJSON reads and decodes one JSON record.
func (j *Journal) getJSON(op string, key []byte, v any) error {
	var val []byte
	err := j.view(op, func(txn *badger.Txn) error {
		var err error
		val, err = getCopy(txn, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := decodeJSON(describeKey(key), val, v); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// State returns the root's position in history (zero State for a new journal).
func (j *Journal) State() (State, error) {
	var s State
	err := j.getJSON("read state", keyState, &s)
	if errors.Is(err, ErrNotFound) {
		return State{}, nil
	}
	return s, err
}

// Tasks returns every task record.
func (j *Journal) Tasks() ([]tasks.Task, error) {
	out := make([]tasks.Task, 0, j.taskCountHint())
	err := j.scan("read tasks", []byte{prefixTask}, func(k, v []byte) error {
		t, err := decodeTask("task", v)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(k), err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// taskCountHint is a capacity for the list of tasks: the highest task id
// (ids only grow, so it bounds their number), at most 1<<16. One seek, so a
// history of thousands of tasks is read into one allocation.
func (j *Journal) taskCountHint() int {
	const most = 1 << 16
	n := 256
	_ = j.view("read tasks", func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixTask}, Reverse: true, PrefetchValues: false})
		defer it.Close()
		it.Seek(append([]byte{prefixTask}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
		if it.Valid() {
			if id, ok := taskIDOf(it.Item().Key()); ok {
				n = int(min(uint64(id)+1, most))
			}
		}
		return nil
	})
	return n
}

// Task returns one task (ErrNotFound if missing).
func (j *Journal) Task(id tasks.ID) (tasks.Task, error) {
	op := fmt.Sprintf("read task %d", id)
	var val []byte
	err := j.view(op, func(txn *badger.Txn) error {
		var err error
		val, err = getCopy(txn, taskKey(id))
		return err
	})
	if err != nil {
		return tasks.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	t, err := decodeTask(describeKey(taskKey(id)), val)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	return t, nil
}

// Tree loads every task into a tasks.Tree.
func (j *Journal) Tree() (*tasks.Tree, error) {
	list, err := j.Tasks()
	if err != nil {
		return nil, err
	}
	return tasks.AdoptTree(list)
}

// Layer returns the changes of task id sorted by path.
func (j *Journal) Layer(id tasks.ID) ([]Change, error) {
	if err := j.checkLost(id); err != nil {
		return nil, err
	}
	var out []Change
	err := j.scan(fmt.Sprintf("read layer %d", id), layerPrefix(id), func(k, v []byte) error {
		c, err := decodeChange(string(k[layerKeyMin:]), v)
		if err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// checkLost refuses a task whose changes a salvage could not all recover:
// a move through it would leave the lost paths in a wrong state.
func (j *Journal) checkLost(id tasks.ID) error {
	var m lostMarker
	err := j.getJSON(fmt.Sprintf("read layer %d", id), lostKey(id), &m)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("read layer %d: %w: %w (%s)", id, ErrCorrupt, errLostChanges, m.Detail)
}

// LayerChange returns one path's change in task id, if any.
func (j *Journal) LayerChange(id tasks.ID, path string) (Change, bool, error) {
	var val []byte
	op := fmt.Sprintf("read layer %d %s", id, path)
	err := j.view(op, func(txn *badger.Txn) error {
		var err error
		val, err = getCopy(txn, layerKey(id, path))
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return Change{}, false, nil
	}
	if err != nil {
		return Change{}, false, fmt.Errorf("%s: %w", op, err)
	}
	c, err := decodeChange(path, val)
	if err != nil {
		return Change{}, false, fmt.Errorf("%s: %w", op, err)
	}
	return c, true, nil
}

// PutChanges writes changes into task id's layer (replacing the same paths)
// in batches. Not atomic by itself: a layer counts once its task record is
// committed, so write changes first, then the task in an Update.
func (j *Journal) PutChanges(id tasks.ID, changes []Change) error {
	op := fmt.Sprintf("write layer %d", id)
	return j.batch(op, func(wb *spaceBatch) error {
		for _, c := range changes {
			if err := wb.Set(layerKey(id, c.Path), encodeChange(c)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteChanges removes paths from task id's layer.
func (j *Journal) DeleteChanges(id tasks.ID, paths []string) error {
	op := fmt.Sprintf("delete from layer %d", id)
	return j.batch(op, func(wb *spaceBatch) error {
		for _, p := range paths {
			if err := wb.Delete(layerKey(id, p)); err != nil {
				return err
			}
		}
		return nil
	})
}

// batch runs fn over a WriteBatch (which splits itself into transactions of
// the allowed size) and flushes it.
func (j *Journal) batch(op string, fn func(wb *spaceBatch) error) error {
	if j.closed.Load() {
		return fmt.Errorf("%s: %w", op, errClosed)
	}
	if j.readOnly {
		return fmt.Errorf("%s: %w", op, errReadOnly)
	}
	if err := checkSpace(j.dir, 0, spaceReserve); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	wb := j.db.NewWriteBatch()
	defer wb.Cancel()
	if err := fn(&spaceBatch{wb: wb, dir: j.dir}); err != nil {
		return fmt.Errorf("%s: %w", op, writeError(err))
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("%s: %w", op, writeError(err))
	}
	return nil
}

// spaceBatch is a WriteBatch that re-checks the free space every 4 MiB.
type spaceBatch struct {
	wb      *badger.WriteBatch
	dir     string
	pending int64
}

func (b *spaceBatch) add(n int) error {
	b.pending += int64(n)
	if b.pending < 4<<20 {
		return nil
	}
	b.pending = 0
	return checkSpace(b.dir, 4<<20, spaceReserve)
}

// Set adds a write to the batch.
func (b *spaceBatch) Set(k, v []byte) error {
	if err := b.add(len(k) + len(v)); err != nil {
		return err
	}
	return b.wb.Set(k, v)
}

// Delete adds a deletion to the batch.
func (b *spaceBatch) Delete(k []byte) error {
	if err := b.add(len(k) + 16); err != nil {
		return err
	}
	return b.wb.Delete(k)
}

// Sessions returns every session ordered by id.
func (j *Journal) Sessions() ([]Session, error) {
	var out []Session
	err := j.scan("read sessions", []byte{prefixSession}, func(k, v []byte) error {
		var s Session
		if err := decodeJSON(describeKey(k), v, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Session returns one session (ErrNotFound if missing).
func (j *Journal) Session(id uint64) (Session, error) {
	var s Session
	if err := j.getJSON(fmt.Sprintf("read session %d", id), sessionKey(id), &s); err != nil {
		return Session{}, err
	}
	return s, nil
}

// LatestSession returns the session with the highest id (ErrNotFound if none).
func (j *Journal) LatestSession() (Session, error) {
	var val, key []byte
	const op = "read latest session"
	err := j.view(op, func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Reverse = true
		opts.Prefix = []byte{prefixSession}
		it := txn.NewIterator(opts)
		defer it.Close()
		it.Seek(sessionKey(^uint64(0)))
		if !it.Valid() {
			return ErrNotFound
		}
		key = it.Item().KeyCopy(nil)
		var err error
		if val, err = it.Item().ValueCopy(nil); err != nil {
			return readError(err)
		}
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", op, err)
	}
	var s Session
	if err := decodeJSON(describeKey(key), val, &s); err != nil {
		return Session{}, fmt.Errorf("%s: %w", op, err)
	}
	return s, nil
}

// Intent returns the unfinished apply, or nil when there is none.
func (j *Journal) Intent() (*Intent, error) {
	var in Intent
	err := j.getJSON("read intent", keyIntent, &in)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// StatCache returns the copy-mode stat cache: every path of the last known
// tree with the stat fields and the node state seen then.
func (j *Journal) StatCache() (map[string]StatEntry, error) {
	out := make(map[string]StatEntry)
	err := j.scan("read stat cache", []byte{prefixStat}, func(k, v []byte) error {
		e, err := decodeStatEntry(v)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(k), err)
		}
		out[string(k[1:])] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsComplete reports whether the stat cache held every path of the tree
// after a full scan (MarkStatsComplete), kept up to date since by every
// apply. Only then may a path the cache lacks be taken as new: a cache
// filled by applies alone (fuse sessions, undo) knows only the paths they
// wrote.
func (j *Journal) StatsComplete() (bool, error) {
	err := j.view("read stat cache mark", func(txn *badger.Txn) error {
		_, err := getCopy(txn, keyStatsDone)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read stat cache mark: %w", err)
	}
	return true, nil
}

// MarkStatsComplete records that the stat cache now holds every path of the
// tree (written after a full scan's entries are saved).
func (j *Journal) MarkStatsComplete() error {
	return j.Update(func(tx *Tx) error {
		if err := tx.txn.Set(keyStatsDone, []byte{1}); err != nil {
			return fmt.Errorf("write stat cache mark: %w", err)
		}
		return nil
	})
}

// Stats returns the stat-cache entries of the given paths, looked up one by
// one in a single read transaction: paths without an entry are left out of
// the map. For a few paths it is much cheaper than loading the whole cache.
func (j *Journal) Stats(paths []string) (map[string]StatEntry, error) {
	out := make(map[string]StatEntry, len(paths))
	err := j.view("read stat cache", func(txn *badger.Txn) error {
		for _, p := range paths {
			key := statKey(p)
			item, err := txn.Get(key)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read stat cache: %s: %w", describeKey(key), readError(err))
			}
			err = item.Value(func(v []byte) error {
				e, err := decodeStatEntry(v)
				if err != nil {
					return err
				}
				out[p] = e
				return nil
			})
			if err != nil {
				return fmt.Errorf("read stat cache: %s: %w", describeKey(key), readError(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutStats upserts and deletes stat-cache entries in batches.
func (j *Journal) PutStats(upsert map[string]StatEntry, deleted []string) error {
	return j.batch("write stat cache", func(wb *spaceBatch) error {
		for _, p := range deleted {
			if _, ok := upsert[p]; ok {
				continue
			}
			if err := wb.Delete(statKey(p)); err != nil {
				return err
			}
		}
		for p, e := range upsert {
			if err := wb.Set(statKey(p), encodeStatEntry(e)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Actions returns the action log of a session ordered by seq.
func (j *Journal) Actions(session uint64) ([]Action, error) {
	var out []Action
	err := j.scan(fmt.Sprintf("read actions of session %d", session), actionPrefix(session), func(k, v []byte) error {
		var a Action
		if err := decodeJSON(describeKey(k), v, &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}
