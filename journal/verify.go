package journal

import (
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Damage is one record or blob that failed verification.
type Damage struct {
	// Kind is the record kind: schema, root, state, intent, session counter,
	// chunk, blob, task, layer, session, action, stat, unknown.
	Kind string
	// Key names the record (as in error messages).
	Key string
	// Detail says what is wrong.
	Detail string
}

// String renders a damage as one line.
func (d Damage) String() string { return d.Key + ": " + d.Detail }

// verifier accumulates what one Verify pass has seen.
type verifier struct {
	j        *Journal
	damage   []Damage
	chunks   map[chunkRef]bool // chunk -> its content verified
	blobs    map[BlobRef]bool
	refs     map[BlobRef]string // blob referenced by a change or stat entry -> first referrer
	taskIDs  map[tasks.ID]bool
	parents  map[tasks.ID]tasks.ID
	state    *State
	done     int
	total    int
	progress func(done, total int)
	buf      []byte
}

func (v *verifier) add(kind string, key []byte, format string, args ...any) {
	v.damage = append(v.damage, Damage{Kind: kind, Key: describeKey(key), Detail: fmt.Sprintf(format, args...)})
}

func (v *verifier) step() {
	v.done++
	if v.progress != nil && (v.done%1024 == 0 || v.done == v.total) {
		v.progress(v.done, v.total)
	}
}

// Verify re-reads every record, re-hashes every chunk and every blob and
// checks the references between them (layers and the stat cache to blobs,
// blobs to chunks, tasks to their parents). It returns what is damaged; the
// error is for failures that stop verification itself. progress, if not nil,
// is called now and then with the number of items checked so far.
func (j *Journal) Verify(progress func(done, total int)) ([]Damage, error) {
	v := &verifier{
		j: j, progress: progress,
		chunks: map[chunkRef]bool{}, blobs: map[BlobRef]bool{}, refs: map[BlobRef]string{},
		taskIDs: map[tasks.ID]bool{}, parents: map[tasks.ID]tasks.ID{},
	}
	bufp := getChunkBuf()
	defer putChunkBuf(bufp)
	v.buf = *bufp
	if err := v.tables(); err != nil {
		return nil, fmt.Errorf("verify journal %s: %w", j.dir, err)
	}
	if err := v.count(); err != nil {
		return nil, fmt.Errorf("verify journal %s: %w", j.dir, err)
	}
	if err := v.records(); err != nil {
		return v.damage, fmt.Errorf("verify journal %s: %w", j.dir, err)
	}
	if err := v.blobContents(); err != nil {
		return v.damage, fmt.Errorf("verify journal %s: %w", j.dir, err)
	}
	v.references()
	sort.SliceStable(v.damage, func(a, b int) bool { return v.damage[a].Key < v.damage[b].Key })
	if progress != nil {
		progress(v.total, v.total)
	}
	return v.damage, nil
}

// tables verifies the checksum of every block of every table: a damaged
// block makes badger's iterators stop early without an error, so records
// could otherwise go missing unnoticed.
func (v *verifier) tables() error {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			v.damage = append(v.damage, Damage{Kind: "table", Key: "tables", Detail: fmt.Sprintf("a table block fails its checksum (badger: %v)", r)})
		}
	}()
	if err := v.j.db.VerifyChecksum(); err != nil {
		v.damage = append(v.damage, Damage{Kind: "table", Key: "tables", Detail: err.Error()})
	}
	return nil
}

// count counts the keys (and, again, the blobs, checked twice) for progress.
func (v *verifier) count() error {
	return v.j.view("count records", func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v.total++
			if k := it.Item().Key(); len(k) > 0 && k[0] == prefixBlob {
				v.total++
			}
		}
		return nil
	})
}

// records checks every record on its own.
func (v *verifier) records() error {
	return v.j.view("verify records", func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			err := item.Value(func(val []byte) error {
				v.record(key, val)
				return nil
			})
			if err != nil {
				v.add(kindOf(key), key, "unreadable: %v", err)
			}
			v.step()
		}
		return nil
	})
}

func kindOf(key []byte) string {
	if len(key) == 0 {
		return "unknown"
	}
	switch key[0] {
	case prefixSchema:
		return "schema"
	case prefixRoot:
		return "root"
	case prefixState:
		return "state"
	case prefixSessionSeq:
		return "session counter"
	case prefixIntent:
		return "intent"
	case prefixChunk:
		return "chunk"
	case prefixBlob:
		return "blob"
	case prefixTask:
		return "task"
	case prefixLayer:
		return "layer"
	case prefixSession:
		return "session"
	case prefixAction:
		return "action"
	case prefixStat:
		return "stat"
	}
	return "unknown"
}

func (v *verifier) record(key, val []byte) {
	kind := kindOf(key)
	bad := func(err error) { v.add(kind, key, "%v", err) }
	switch key[0] {
	case prefixSchema:
		if n, err := parseU64(val); err != nil {
			bad(err)
		} else if n != SchemaVersion {
			v.add(kind, key, "schema version %d, want %d", n, SchemaVersion)
		}
	case prefixRoot:
		if string(val) != v.j.root {
			v.add(kind, key, "root %q, want %q", val, v.j.root)
		}
	case prefixState, prefixIntent:
		var s State
		var in Intent
		var dst any = &s
		if key[0] == prefixIntent {
			dst = &in
		}
		if len(key) != 1 {
			v.add(kind, key, "unexpected key length %d", len(key))
		} else if err := decodeJSON(kind, val, dst); err != nil {
			bad(err)
		} else if key[0] == prefixState {
			v.state = &s
		}
	case prefixSessionSeq:
		if _, err := parseU64(val); err != nil {
			bad(err)
		}
	case prefixChunk:
		v.chunk(key, val)
	case prefixBlob:
		ref, ok := parseBlobKey(key)
		if !ok {
			v.add(kind, key, "malformed key")
			return
		}
		if _, err := decodeChunkList(val); err != nil {
			bad(err)
			return
		}
		v.blobs[ref] = true
	case prefixTask:
		var t tasks.Task
		if err := decodeJSON(kind, val, &t); err != nil {
			bad(err)
		} else if len(key) != taskKeyLen || !bytesEqual(taskKey(t.ID), key) {
			v.add(kind, key, "record holds task %d", t.ID)
		} else {
			v.taskIDs[t.ID] = true
			v.parents[t.ID] = t.Parent
		}
	case prefixLayer:
		if len(key) < layerKeyMin {
			v.add(kind, key, "malformed key")
			return
		}
		c, err := decodeChange(string(key[layerKeyMin:]), val)
		if err != nil {
			bad(err)
			return
		}
		for _, s := range []NodeState{c.Before, c.After} {
			if s.Kind == File {
				v.ref(s.Blob, key)
			}
		}
	case prefixSession:
		var s Session
		if err := decodeJSON(kind, val, &s); err != nil {
			bad(err)
		} else if !bytesEqual(sessionKey(s.ID), key) {
			v.add(kind, key, "record holds session %d", s.ID)
		}
	case prefixAction:
		var a Action
		if err := decodeJSON(kind, val, &a); err != nil {
			bad(err)
		} else if !bytesEqual(actionKey(a.Session, a.Seq), key) {
			v.add(kind, key, "record holds action %d/%d", a.Session, a.Seq)
		}
	case prefixStat:
		e, err := decodeStatEntry(val)
		if err != nil {
			bad(err)
		} else if e.Kind == File {
			v.ref(e.Blob, key)
		}
	default:
		v.add(kind, key, "unknown record kind %q", key[0])
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

func (v *verifier) ref(r BlobRef, key []byte) {
	if r == (BlobRef{}) {
		return // no content recorded (not a reference)
	}
	if _, ok := v.refs[r]; !ok {
		v.refs[r] = describeKey(key)
	}
}

func (v *verifier) chunk(key, val []byte) {
	c, ok := parseChunkKey(key)
	if !ok || c.Len > ChunkSize {
		v.add("chunk", key, "malformed key")
		return
	}
	got, err := decodeChunk(val, int(c.Len), v.buf)
	if err != nil {
		v.add("chunk", key, "%v", err)
		v.chunks[c] = false
		return
	}
	if h := chunkHash(got); h != c.Hash {
		v.add("chunk", key, "content hash %016x", h)
		v.chunks[c] = false
		return
	}
	v.chunks[c] = true
}

// blobContents checks that every blob's chunks exist and verified, and
// re-hashes the content of multi-chunk blobs (a one-chunk blob's hash is its
// chunk's, already checked).
func (v *verifier) blobContents() error {
	return v.j.view("verify blobs", func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{prefixBlob}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			ref, ok := parseBlobKey(key)
			if ok && v.blobs[ref] {
				val, err := item.ValueCopy(nil)
				if err == nil {
					v.blob(key, ref, val)
				}
			}
			v.step()
		}
		return nil
	})
}

func (v *verifier) blob(key []byte, ref BlobRef, val []byte) {
	list, err := decodeChunkList(val)
	if err != nil {
		return // reported by records
	}
	var total int64
	good := true
	for _, c := range list {
		total += int64(c.Len)
		ok, seen := v.chunks[c]
		switch {
		case !seen:
			v.add("blob", key, "chunk %016x/%d/%d missing", c.Hash, c.Len, c.Seq)
			good = false
		case !ok:
			v.add("blob", key, "chunk %016x/%d/%d damaged", c.Hash, c.Len, c.Seq)
			good = false
		}
	}
	if total != ref.Size {
		v.add("blob", key, "chunks hold %d bytes, blob is %d", total, ref.Size)
		return
	}
	if !good {
		return
	}
	switch len(list) {
	case 0:
		if h := totalHash(xxhash.New()); h != ref.Hash {
			v.add("blob", key, "empty content hash %016x", h)
		}
		return
	case 1:
		if list[0].Hash != ref.Hash {
			v.add("blob", key, "content hash %016x", list[0].Hash)
		}
		return
	}
	d := xxhash.New()
	for _, c := range list {
		b, err := v.j.readChunk(c, v.buf)
		if err != nil {
			v.add("blob", key, "%v", err)
			return
		}
		_, _ = d.Write(b)
	}
	if h := totalHash(d); h != ref.Hash {
		v.add("blob", key, "content hash %016x", h)
	}
}

// references checks links between records.
func (v *verifier) references() {
	for r, by := range v.refs {
		if !v.blobs[r] {
			v.damage = append(v.damage, Damage{Kind: "blob", Key: "blob " + r.String(), Detail: "missing, referenced by " + by})
		}
	}
	for id, p := range v.parents {
		if p != tasks.Base && !v.taskIDs[p] {
			v.add("task", taskKey(id), "parent task %d missing", p)
		}
	}
	if s := v.state; s != nil {
		for _, id := range []tasks.ID{s.Active, s.Applied} {
			if id != tasks.Base && !v.taskIDs[id] {
				v.add("state", keyState, "task %d missing", id)
			}
		}
	}
}
