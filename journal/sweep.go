package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// blobIndex is every blob with its chunks, and every chunk with its stored
// size (the bytes badger keeps for it, compressed).
type blobIndex struct {
	blobs  map[BlobRef][]chunkRef
	chunks map[chunkRef]int64
}

func (j *Journal) loadBlobIndex(op string) (blobIndex, error) {
	ix := blobIndex{blobs: map[BlobRef][]chunkRef{}, chunks: map[chunkRef]int64{}}
	err := j.view(op, func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: []byte{prefixChunk}}
		it := txn.NewIterator(opts)
		for it.Rewind(); it.Valid(); it.Next() {
			if c, ok := parseChunkKey(it.Item().Key()); ok {
				ix.chunks[c] = it.Item().ValueSize()
			}
		}
		it.Close()
		return nil
	})
	if err != nil {
		return ix, err
	}
	err = j.scan(op, []byte{prefixBlob}, func(k, v []byte) error {
		ref, ok := parseBlobKey(k)
		if !ok {
			return fmt.Errorf("%s: %w: malformed key", describeKey(k), ErrCorrupt)
		}
		list, err := decodeChunkList(v)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(k), err)
		}
		ix.blobs[ref] = list
		return nil
	})
	return ix, err
}

// stored is the stored size of the distinct chunks of refs.
func (ix blobIndex) stored(refs map[BlobRef]bool) int64 {
	seen := map[chunkRef]bool{}
	var n int64
	for r := range refs {
		for _, c := range ix.blobs[r] {
			if !seen[c] {
				seen[c] = true
				n += ix.chunks[c]
			}
		}
	}
	return n
}

// blobUse is one record's reference to a blob: the task whose layer holds
// it (0 with stat for the stat cache).
type blobUse struct {
	task tasks.ID
	stat bool
}

// eachUse calls fn for every blob reference of every layer, staged layer
// and stat cache entry.
func (j *Journal) eachUse(op string, fn func(BlobRef, blobUse)) error {
	for _, prefix := range []byte{prefixLayer, prefixStaged, prefixStat} {
		err := j.scan(op, []byte{prefix}, func(k, v []byte) error {
			if prefix == prefixStat {
				e, err := decodeStatEntry(v)
				if err != nil {
					return fmt.Errorf("%s: %w", describeKey(k), err)
				}
				if e.Kind == File {
					fn(e.Blob, blobUse{stat: true})
				}
				return nil
			}
			if len(k) <= layerKeyMin {
				return nil // a staged layer's complete mark
			}
			c, err := decodeChange(string(k[layerKeyMin:]), v)
			if err != nil {
				return fmt.Errorf("%s: %w", describeKey(k), err)
			}
			id := tasks.ID(binary.BigEndian.Uint64(k[1:]))
			for _, s := range []NodeState{c.Before, c.After} {
				if s.Kind == File && s.Blob != (BlobRef{}) {
					fn(s.Blob, blobUse{task: id})
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SweepReport is what a sweep deleted.
type SweepReport struct {
	Blobs       int   `json:"blobs"`
	BlobBytes   int64 `json:"blobBytes"`
	Chunks      int   `json:"chunks"`
	StoredBytes int64 `json:"storedBytes"`
}

// Sweep deletes every blob that no layer, staged layer or stat cache entry
// refers to (mark and sweep), then every chunk no remaining blob is made of.
// Blobs go before chunks, so a crash leaves at worst chunks no blob needs,
// which the next sweep deletes. With dryRun it only counts. The caller
// holds the journal alone (no session writes blobs meanwhile).
func (j *Journal) Sweep(dryRun bool) (SweepReport, error) {
	const op = "sweep blobs"
	var rep SweepReport
	live := map[BlobRef]bool{}
	if err := j.eachUse(op, func(r BlobRef, _ blobUse) { live[r] = true }); err != nil {
		return rep, err
	}
	ix, err := j.loadBlobIndex(op)
	if err != nil {
		return rep, err
	}
	var dead [][]byte
	liveChunks := map[chunkRef]bool{}
	for r, list := range ix.blobs {
		if live[r] {
			for _, c := range list {
				liveChunks[c] = true
			}
			continue
		}
		rep.Blobs++
		rep.BlobBytes += r.Size
		dead = append(dead, blobKey(r))
	}
	var deadChunks [][]byte
	for c, n := range ix.chunks {
		if !liveChunks[c] {
			rep.Chunks++
			rep.StoredBytes += n
			deadChunks = append(deadChunks, chunkKey(c))
		}
	}
	if dryRun {
		return rep, nil
	}
	for _, keys := range [][][]byte{dead, deadChunks} {
		err := j.batch(op, func(wb *spaceBatch) error {
			for _, k := range keys {
				if err := wb.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	j.zeroChunk.Store(nil) // the zero chunk may be gone: store it again when needed
	return rep, j.Sync()
}

// StoredBytes is what every stored chunk takes: the journal's content,
// measured from the keys alone (cheap enough to check after every session).
func (j *Journal) StoredBytes() (int64, error) {
	var n int64
	err := j.view("measure content", func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: []byte{prefixChunk}}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n += it.Item().ValueSize()
		}
		return nil
	})
	return n, err
}

// ContentSize is the stored size of the distinct chunks of refs: what the
// journal needs for that content.
func (j *Journal) ContentSize(refs map[BlobRef]bool) (int64, error) {
	ix, err := j.loadBlobIndex("measure content")
	if err != nil {
		return 0, err
	}
	return ix.stored(refs), nil
}

// StatBlobs returns the blobs the stat cache refers to.
func (j *Journal) StatBlobs() (map[BlobRef]bool, error) {
	out := map[BlobRef]bool{}
	err := j.scan("read stat cache", []byte{prefixStat}, func(k, v []byte) error {
		e, err := decodeStatEntry(v)
		if err != nil {
			return fmt.Errorf("%s: %w", describeKey(k), err)
		}
		if e.Kind == File {
			out[e.Blob] = true
		}
		return nil
	})
	return out, err
}

// ReclaimSpace has badger give back the space of deleted records: it
// compacts the tables into one level (dropping deleted keys and telling the
// value log which entries are dead) and rewrites value-log files that are
// mostly dead, until none is. It returns how many files were rewritten.
// It reopens the database: the caller must be the journal's only user
// meanwhile. Badger never rewrites the value-log file it writes to (up to
// 256 MiB), so space in it comes back only once it is full.
func (j *Journal) ReclaimSpace(ratio float64) (rewritten int, err error) {
	if j.closed.Load() {
		return 0, fmt.Errorf("reclaim space of journal %s: %w", j.dir, errClosed)
	}
	if j.readOnly {
		return 0, fmt.Errorf("reclaim space of journal %s: %w", j.dir, errReadOnly)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reclaim space of journal %s: %w: badger panicked: %v", j.dir, ErrCorrupt, r)
		}
	}()
	// Closing flushes the memtables, so the deletions reach the tables
	// that the compaction below rewrites.
	if err := j.db.Close(); err != nil {
		return 0, fmt.Errorf("reclaim space of journal %s: %w", j.dir, writeError(err))
	}
	db, err := openBadger(j.dir)
	if err != nil {
		j.closed.Store(true)
		return 0, fmt.Errorf("reclaim space: reopen: %w", err)
	}
	j.db = db
	if err := j.db.Flatten(2); err != nil {
		return 0, fmt.Errorf("reclaim space of journal %s: compact: %w", j.dir, writeError(err))
	}
	for rewritten < 1000 {
		err := j.db.RunValueLogGC(ratio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break
		}
		if err != nil {
			return rewritten, fmt.Errorf("reclaim space of journal %s: value log: %w", j.dir, writeError(err))
		}
		rewritten++
	}
	return rewritten, j.Sync()
}

// DiskBytes is the space the journal's files take on disk.
func DiskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += allocated(info)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure journal %s: %w", dir, err)
	}
	return n, nil
}

// Usage is what the journal holds and what holds it.
type Usage struct {
	DiskBytes int64 `json:"diskBytes"`
	Tasks     int   `json:"tasks"`
	Sessions  int   `json:"sessionCount"`
	// Blobs and BlobBytes count distinct contents and their length;
	// Chunks and StoredBytes what is stored for them (compressed, with
	// chunks shared between blobs stored once).
	Blobs       int   `json:"blobs"`
	BlobBytes   int64 `json:"blobBytes"`
	Chunks      int   `json:"chunks"`
	StoredBytes int64 `json:"storedBytes"`
	// References counts the records (a path's before or after state in a
	// layer, a stat cache entry) that refer to a blob; SharedBlobs the
	// blobs more than one record refers to, and SavedBytes the content
	// those extra references would have taken if stored again.
	References  int   `json:"references"`
	SharedBlobs int   `json:"sharedBlobs"`
	SavedBytes  int64 `json:"savedBytes"`
	// Unreferenced blobs are garbage a gc sweeps.
	Unreferenced      int            `json:"unreferenced"`
	UnreferencedBytes int64          `json:"unreferencedBytes"`
	PerSession        []SessionUsage `json:"sessions"`
}

// SessionUsage is the share of one session (0: outside tasks and tasks of
// no session) in the journal.
type SessionUsage struct {
	Session uint64    `json:"session"`
	Started time.Time `json:"started,omitempty"`
	Tasks   int       `json:"tasks"`
	Changes int       `json:"changes"`
	// Blobs are the distinct contents its layers refer to, BlobBytes their
	// length; OwnBlobs and OwnBytes those no other session's layer and no
	// stat entry refers to: what dropping the session's tasks would free.
	Blobs     int   `json:"blobs"`
	BlobBytes int64 `json:"blobBytes"`
	OwnBlobs  int   `json:"ownBlobs"`
	OwnBytes  int64 `json:"ownBytes"`
}

// Usage measures the journal: its size on disk, its blobs and their
// sharing, and each session's share.
func (j *Journal) Usage() (Usage, error) {
	const op = "measure journal"
	var u Usage
	var err error
	if u.DiskBytes, err = DiskBytes(j.dir); err != nil {
		return u, err
	}
	list, err := j.Tasks()
	if err != nil {
		return u, err
	}
	u.Tasks = len(list)
	sessionOf := map[tasks.ID]uint64{}
	per := map[uint64]*SessionUsage{}
	get := func(s uint64) *SessionUsage {
		if per[s] == nil {
			per[s] = &SessionUsage{Session: s}
		}
		return per[s]
	}
	for _, t := range list {
		sessionOf[t.ID] = t.Session
		get(t.Session).Tasks++
	}
	sessions, err := j.Sessions()
	if err != nil {
		return u, err
	}
	u.Sessions = len(sessions)
	for _, s := range sessions {
		get(s.ID).Started = s.StartedAt
	}
	refs := map[BlobRef]int{}
	users := map[BlobRef]map[uint64]bool{}
	statUse := map[BlobRef]bool{}
	err = j.eachUse(op, func(r BlobRef, use blobUse) {
		refs[r]++
		if use.stat {
			statUse[r] = true
			return
		}
		s := sessionOf[use.task]
		if users[r] == nil {
			users[r] = map[uint64]bool{}
		}
		users[r][s] = true
	})
	if err != nil {
		return u, err
	}
	if err := j.scan(op, []byte{prefixLayer}, func(k, _ []byte) error {
		if len(k) > layerKeyMin {
			get(sessionOf[tasks.ID(binary.BigEndian.Uint64(k[1:]))]).Changes++
		}
		return nil
	}); err != nil {
		return u, err
	}
	ix, err := j.loadBlobIndex(op)
	if err != nil {
		return u, err
	}
	u.Blobs, u.Chunks = len(ix.blobs), len(ix.chunks)
	for _, n := range ix.chunks {
		u.StoredBytes += n
	}
	for r := range ix.blobs {
		u.BlobBytes += r.Size
		n := refs[r]
		u.References += n
		if n == 0 {
			u.Unreferenced++
			u.UnreferencedBytes += r.Size
		}
		if n > 1 {
			u.SharedBlobs++
			u.SavedBytes += int64(n-1) * r.Size
		}
		for s := range users[r] {
			su := get(s)
			su.Blobs++
			su.BlobBytes += r.Size
			if len(users[r]) == 1 && !statUse[r] {
				su.OwnBlobs++
				su.OwnBytes += r.Size
			}
		}
	}
	for _, su := range per {
		u.PerSession = append(u.PerSession, *su)
	}
	sort.Slice(u.PerSession, func(a, b int) bool { return u.PerSession[a].Session < u.PerSession[b].Session })
	return u, nil
}
