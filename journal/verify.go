package journal

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Damage is one record or blob that failed verification.
type Damage struct {
	// Kind is the record kind: schema, root, state, intent, session counter,
	// chunk, blob, task, layer, session, action, stat, table, unknown.
	Kind string `json:"kind"`
	// Key names the record (as in error messages).
	Key string `json:"key"`
	// Detail says what is wrong.
	Detail string `json:"detail"`
	// Task, Session and Path locate a damaged record whose key names them
	// (read from the key, so they are known even when the value is
	// unreadable): a task record, a layer's change (task and path), a
	// session or action record (session), a stat cache entry (path).
	Task    tasks.ID `json:"task,omitempty"`
	Session uint64   `json:"session,omitempty"`
	Path    string   `json:"path,omitempty"`
	// UsedBy lists, for damaged or missing content (a blob or a chunk of
	// one), every record that refers to it: the paths whose state in those
	// tasks cannot be restored.
	UsedBy []BlobUse `json:"usedBy,omitempty"`
	// NeededByApply is set when the unfinished apply (the intent) needs
	// this content to finish: some use is the state it restores.
	NeededByApply bool `json:"neededByApply,omitempty"`

	blob  *BlobRef  // the damaged or missing blob, for UsedBy
	chunk *chunkRef // the damaged chunk, for UsedBy
}

// BlobUse is one reference to a blob.
type BlobUse struct {
	// In is where the reference is: "before" or "after" (the path's state
	// before or after the task, in the task's layer) or "stat cache" (the
	// last scan's entry for the path; Task is 0).
	In   string   `json:"in"`
	Task tasks.ID `json:"task,omitempty"`
	Path string   `json:"path"`
}

// String renders a blob use as "task 3 before a/b.go" or "stat cache a/b.go".
func (u BlobUse) String() string {
	if u.In == UseStat {
		return u.In + " " + u.Path
	}
	return fmt.Sprintf("task %d %s %s", u.Task, u.In, u.Path)
}

// Where a blob is used (BlobUse.In).
const (
	UseBefore = "before"
	UseAfter  = "after"
	UseStat   = "stat cache"
)

// String renders a damage as one line.
func (d Damage) String() string { return d.Key + ": " + d.Detail }

// Affected returns the tasks and paths the damage concerns: its own
// location and every use of its content, each sorted and without repeats.
func (d Damage) Affected() (ids []tasks.ID, paths []string) {
	seenID, seenPath := map[tasks.ID]bool{}, map[string]bool{}
	addID := func(id tasks.ID) {
		if id != tasks.Base && !seenID[id] {
			seenID[id] = true
			ids = append(ids, id)
		}
	}
	addPath := func(p string) {
		if p != "" && !seenPath[p] {
			seenPath[p] = true
			paths = append(paths, p)
		}
	}
	addID(d.Task)
	addPath(d.Path)
	for _, u := range d.UsedBy {
		addID(u.Task)
		addPath(u.Path)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	sort.Strings(paths)
	return ids, paths
}

// verifier accumulates what one Verify pass has seen.
type verifier struct {
	j       *Journal
	damage  []Damage
	chunks  map[chunkRef]bool // chunk -> its content verified
	blobs   map[BlobRef]bool
	refs    map[BlobRef]string // blob referenced by a change or stat entry -> first referrer
	taskIDs map[tasks.ID]bool
	parents map[tasks.ID]tasks.ID
	// sealed holds the Files of every sealed task, layerLen the number of
	// records in each layer: they must agree.
	sealed   map[tasks.ID]int
	layerLen map[tasks.ID]int
	state    *State
	intent   *Intent
	tags     []tagRef
	// gc is an unfinished gc's plan: the tasks it names may be half done.
	gc *GCPlan
	// chunkBlobs maps each damaged chunk to the blobs made of it.
	chunkBlobs map[chunkRef][]BlobRef
	done       int
	total      int
	progress   func(done, total int)
	buf        []byte
}

// tagRef is a tag record seen by verify: its key and the task it names.
type tagRef struct {
	key []byte
	id  tasks.ID
}

func (v *verifier) add(kind string, key []byte, format string, args ...any) {
	d := Damage{Kind: kind, Key: describeKey(key), Detail: fmt.Sprintf(format, args...)}
	locate(&d, key)
	v.damage = append(v.damage, d)
}

// locate fills in the task, session and path a key names.
func locate(d *Damage, k []byte) {
	if len(k) == 0 {
		return
	}
	switch k[0] {
	case prefixTask, prefixLost:
		if len(k) == taskKeyLen {
			d.Task = tasks.ID(binary.BigEndian.Uint64(k[1:]))
		}
	case prefixLayer:
		if len(k) >= layerKeyMin {
			d.Task = tasks.ID(binary.BigEndian.Uint64(k[1:]))
			d.Path = string(k[layerKeyMin:])
		}
	case prefixSession:
		if len(k) == sessionKeyLen {
			d.Session = binary.BigEndian.Uint64(k[1:])
		}
	case prefixAction:
		if len(k) == actionKeyLen {
			d.Session = binary.BigEndian.Uint64(k[1:])
		}
	case prefixStat:
		d.Path = string(k[1:])
	case prefixBlob:
		if r, ok := parseBlobKey(k); ok {
			d.blob = &r
		}
	case prefixChunk:
		if c, ok := parseChunkKey(k); ok {
			d.chunk = &c
		}
	}
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
		taskIDs: map[tasks.ID]bool{}, parents: map[tasks.ID]tasks.ID{}, chunkBlobs: map[chunkRef][]BlobRef{},
		sealed: map[tasks.ID]int{}, layerLen: map[tasks.ID]int{},
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
	if err := v.uses(); err != nil {
		return v.damage, fmt.Errorf("verify journal %s: %w", j.dir, err)
	}
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
				if c, ok := parseChunkKey(key); ok {
					v.chunks[c] = false // its blobs report it as damaged, not missing
				}
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
	case prefixStatsDone:
		return "stat cache mark"
	case prefixLost:
		return "lost"
	case prefixTag:
		return "tag"
	case prefixGC:
		return "gc plan"
	case prefixStaged:
		return "staged layer"
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
		} else {
			v.intent = &in
		}
	case prefixSessionSeq:
		if _, err := parseU64(val); err != nil {
			bad(err)
		}
	case prefixStatsDone:
		if len(key) != 1 || len(val) != 1 || val[0] != 1 {
			v.add(kind, key, "malformed stat cache mark")
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
		if t, err := decodeTask(kind, val); err != nil {
			bad(err)
		} else if len(key) != taskKeyLen || !bytesEqual(taskKey(t.ID), key) {
			v.add(kind, key, "record holds task %d", t.ID)
		} else {
			v.taskIDs[t.ID] = true
			v.parents[t.ID] = t.Parent
			if !t.Ended.IsZero() {
				v.sealed[t.ID] = t.Files
			}
		}
	case prefixLayer:
		if len(key) < layerKeyMin {
			v.add(kind, key, "malformed key")
			return
		}
		v.layerLen[tasks.ID(binary.BigEndian.Uint64(key[1:]))]++
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
	case prefixLost:
		var m lostMarker
		if err := decodeJSON(kind, val, &m); err != nil {
			bad(err)
		} else {
			v.add(kind, key, "changes lost in the salvage of %s: %s", m.Salvaged.UTC().Format(time.RFC3339), m.Detail)
		}
	case prefixTag:
		if id, err := parseU64(val); err != nil {
			bad(err)
		} else {
			v.tags = append(v.tags, tagRef{key: key, id: tasks.ID(id)})
		}
	case prefixGC:
		var p GCPlan
		if len(key) != 1 {
			v.add(kind, key, "unexpected key length %d", len(key))
		} else if err := decodeJSON(kind, val, &p); err != nil {
			bad(err)
		} else {
			v.gc = &p
		}
	case prefixStaged:
		switch {
		case len(key) < layerKeyMin:
			v.add(kind, key, "malformed key")
		case len(key) == layerKeyMin:
			if len(val) != 1 || val[0] != 1 {
				v.add(kind, key, "malformed complete mark")
			}
		default:
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
		}
	default:
		v.add(kind, key, "unknown record kind %q", key[0])
	}
}

// inGC returns the tasks an unfinished gc is changing: their records and
// layers may disagree until it is finished.
func (v *verifier) inGC() map[tasks.ID]bool {
	out := map[tasks.ID]bool{}
	if v.gc == nil {
		return out
	}
	for _, id := range v.gc.Drop {
		out[id] = true
	}
	for _, r := range v.gc.Rewire {
		out[r.ID] = true
	}
	return out
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
	if len(val) == 0 && c.Len > 0 {
		// What badger gives for a value whose value-log entry it dropped
		// (damaged or cut off) when it opened the journal.
		v.add("chunk", key, "content lost: its value log entry is damaged or truncated")
		v.chunks[c] = false
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
			// Reported once, as the chunk, with this blob's uses.
			v.chunkBlobs[c] = append(v.chunkBlobs[c], ref)
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
			v.damage = append(v.damage, Damage{Kind: "blob", Key: "blob " + r.String(), Detail: "missing, referenced by " + by, blob: &r})
		}
	}
	if in := v.intent; in != nil {
		for _, id := range []tasks.ID{in.From, in.To} {
			if id != tasks.Base && !v.taskIDs[id] {
				v.add("intent", keyIntent, "the unfinished apply's task %d is missing", id)
			}
		}
	}
	inGC := v.inGC()
	for id, p := range v.parents {
		if p != tasks.Base && !v.taskIDs[p] && !inGC[id] {
			v.add("task", taskKey(id), "parent task %d missing", p)
		}
	}
	for id, files := range v.sealed {
		if n := v.layerLen[id]; n != files && !inGC[id] {
			v.add("task", taskKey(id), "its layer holds %s but it was sealed with %d: records were lost", plural.Count(n, "path"), files)
		}
	}
	for _, t := range v.tags {
		if t.id != tasks.Base && !v.taskIDs[t.id] {
			v.add("tag", t.key, "names task %d, which is missing (timeagent tag --delete %s)", t.id, t.key[1:])
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
