package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/tasks"
)

// SalvageReport says what Salvage kept and what it lost.
type SalvageReport struct {
	// Damaged is where the old journal was moved (kept as it was).
	Damaged string `json:"damaged"`
	// Problems lists what was found wrong with the old journal's files.
	Problems []string `json:"problems"`
	// Kept counts the records copied into the new journal.
	Kept SalvageCounts `json:"kept"`
	// LostTasks lists every task that lost something, by id.
	LostTasks []LostTask `json:"lostTasks"`
	// LostRecords lists other records that were lost or dropped (state,
	// intent, sessions, actions): none of them holds file content.
	LostRecords []string `json:"lostRecords"`
}

// SalvageCounts counts the records a salvage kept.
type SalvageCounts struct {
	Tasks    int `json:"tasks"`
	Changes  int `json:"changes"`
	Blobs    int `json:"blobs"`
	Sessions int `json:"sessions"`
	Actions  int `json:"actions"`
}

// LostTask is a task that lost part of its history.
type LostTask struct {
	ID tasks.ID `json:"id"`
	// RecordLost: the task's own record was lost, and with it its parent;
	// a placeholder (a child of the base) takes its place so that its
	// children stay reachable, and moves through it are refused.
	RecordLost bool `json:"recordLost,omitempty"`
	// ChangesLost: the task cannot be walked through: changes of it whose
	// paths cannot be known were lost, or its parent (Detail says which).
	// Every move through the task is refused, since it could not restore
	// those paths.
	ChangesLost bool   `json:"changesLost,omitempty"`
	Detail      string `json:"detail,omitempty"`
	// Paths are the paths whose state before or after the task is lost
	// (their content is gone): moves that need them are refused.
	Paths []string `json:"paths"`
}

// lostMarker is the record of a task whose changes a salvage could not all
// recover: Layer refuses to return its changes.
type lostMarker struct {
	Detail   string    `json:"detail"`
	Salvaged time.Time `json:"salvaged"`
}

// ErrNothingToSalvage: every file of the journal reads and every record and
// blob verifies; Salvage left it as it was.
var ErrNothingToSalvage = errors.New("the journal reads and verifies: nothing to salvage")

// errLostChanges is returned by Layer for a task a salvage marked.
var errLostChanges = errors.New("changes of this task were lost when the damaged journal was salvaged")

// Salvage copies every record and blob it can still read from the journal
// in dir (of root), damaged or not, into a new journal: every chunk and
// blob is checked against its hash, every record decoded, and a task that
// lost changes is marked so that no move through it writes a wrong state.
// The new journal is written beside dir, synced, and only then takes its
// place; the old one is renamed to dir.damaged-<time> and never changed.
// A journal that reads and verifies whole is left alone (ErrNothingToSalvage).
// The caller holds the root's lock.
func Salvage(dir, root string, now time.Time) (*SalvageReport, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("salvage journal %s: %w", dir, err)
	}
	work, fresh := dir+".salvage-read", dir+".salvage-new"
	for _, d := range []string{work, fresh} {
		if err := os.RemoveAll(d); err != nil { // a previous attempt's
			return nil, fmt.Errorf("salvage journal %s: %w", dir, err)
		}
	}
	defer os.RemoveAll(work)
	rep, err := salvageInto(dir, work, fresh, root, now)
	if errors.Is(err, ErrNothingToSalvage) {
		return nil, err
	}
	if err != nil {
		os.RemoveAll(fresh)
		return nil, fmt.Errorf("salvage journal %s: %w", dir, err)
	}
	rep.Damaged = dir + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if err := os.Rename(dir, rep.Damaged); err != nil {
		os.RemoveAll(fresh)
		return nil, fmt.Errorf("salvage journal %s: keep the damaged journal aside: %w", dir, err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		// Put the old one back: the command can be run again.
		_ = os.Rename(rep.Damaged, dir)
		os.RemoveAll(fresh)
		return nil, fmt.Errorf("salvage journal %s: %w", dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return nil, fmt.Errorf("salvage journal %s: %w", dir, err)
	}
	return rep, nil
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be synced there; renames are durable
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

func salvageInto(dir, work, fresh, root string, now time.Time) (*SalvageReport, error) {
	rd, err := prepareRead(dir, work)
	if err != nil {
		return nil, fmt.Errorf("copy what is readable: %w", err)
	}
	db, err := openBadger(work)
	if err != nil {
		return nil, fmt.Errorf("nothing could be read: %w", err)
	}
	old := &Journal{dir: work, root: root, db: db}
	defer old.Close()
	if len(rd.problems) == 0 && len(rd.lost) == 0 {
		if damage, err := old.Verify(nil); err == nil && len(damage) == 0 && old.checkMeta() == nil {
			return nil, ErrNothingToSalvage
		}
	}
	nj, err := Open(fresh, root)
	if err != nil {
		return nil, err
	}
	s := &salvager{
		old: old, new: nj, rd: rd, now: now,
		rep:        &SalvageReport{Problems: rd.problems, LostTasks: []LostTask{}, LostRecords: []string{}},
		goodChunks: map[chunkRef]bool{}, goodBlobs: map[BlobRef]bool{},
		tasks: map[tasks.ID]tasks.Task{}, layers: map[tasks.ID]bool{}, lost: map[tasks.ID]*LostTask{},
	}
	if s.rep.Problems == nil {
		s.rep.Problems = []string{}
	}
	err = s.run()
	if cerr := nj.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return s.rep, nil
}

// salvager is one Salvage's copy from the readable old journal to the new.
type salvager struct {
	old, new *Journal
	rd       readable
	now      time.Time
	rep      *SalvageReport

	goodChunks map[chunkRef]bool
	goodBlobs  map[BlobRef]bool
	tasks      map[tasks.ID]tasks.Task
	layers     map[tasks.ID]bool // tasks that have layer records
	lost       map[tasks.ID]*LostTask
	markers    map[tasks.ID][]byte
	state      *State
	intent     *Intent
	sessionSeq uint64
	maxSession uint64
	badChunks  int
	buf        []byte
}

func (s *salvager) lostTask(id tasks.ID) *LostTask {
	if l, ok := s.lost[id]; ok {
		return l
	}
	l := &LostTask{ID: id, Paths: []string{}}
	s.lost[id] = l
	return l
}

func (s *salvager) lostRecord(format string, args ...any) {
	s.rep.LostRecords = append(s.rep.LostRecords, fmt.Sprintf(format, args...))
}

// uncertain reports whether a record may have been superseded by one in a
// lost table block.
func (s *salvager) uncertain(key []byte, version uint64) bool {
	for _, r := range s.rd.lost {
		if r.covers(key, version) {
			return true
		}
	}
	return false
}

func (s *salvager) run() error {
	bufp := getChunkBuf()
	defer putChunkBuf(bufp)
	s.buf = *bufp
	s.markers = map[tasks.ID][]byte{}
	// Chunks first (blobs, keyed 'b', sort before them), then the rest.
	err := s.new.batch("salvage chunks", func(wb *spaceBatch) error {
		return s.each([]byte{prefixChunk}, func(key, val []byte, _ uint64) error { return s.chunk(wb, key, val) })
	})
	if err != nil {
		return err
	}
	err = s.new.batch("salvage records", func(wb *spaceBatch) error {
		return s.each(nil, func(key, val []byte, version uint64) error {
			if key[0] == prefixChunk {
				return nil
			}
			return s.record(wb, key, val, version)
		})
	})
	if err != nil {
		return err
	}
	return s.finish()
}

// each calls fn with every readable record under prefix; a record whose
// value cannot be read is reported and skipped.
func (s *salvager) each(prefix []byte, fn func(key, val []byte, version uint64) error) error {
	return s.old.view("salvage", func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			if len(key) == 0 {
				continue
			}
			var inner error
			err := item.Value(func(val []byte) error {
				inner = fn(key, val, item.Version())
				return nil
			})
			if inner != nil {
				return inner
			}
			if err != nil {
				s.unreadable(key, err)
			}
		}
		return nil
	})
}

// unreadable notes a record whose value could not be read.
func (s *salvager) unreadable(key []byte, err error) {
	d := Damage{}
	locate(&d, key)
	switch key[0] {
	case prefixChunk:
		s.badChunks++ // its users are reported through the blobs they miss
	case prefixBlob:
		// Its users are reported through the content they miss.
	case prefixLayer:
		s.lostTask(d.Task).Paths = append(s.lostTask(d.Task).Paths, d.Path)
		s.layers[d.Task] = true
		l := s.lostTask(d.Task)
		l.ChangesLost = true
		l.Detail = appendDetail(l.Detail, fmt.Sprintf("the change of %q is unreadable", d.Path))
	case prefixTask:
		s.lostRecord("%s: unreadable: %v", describeKey(key), err)
	default:
		s.lostRecord("%s: unreadable: %v", describeKey(key), err)
	}
}

func appendDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (s *salvager) chunk(wb *spaceBatch, key, val []byte) error {
	c, ok := parseChunkKey(key)
	if !ok || c.Len > ChunkSize {
		return nil
	}
	got, err := decodeChunk(val, int(c.Len), s.buf)
	if err != nil || chunkHash(got) != c.Hash {
		s.badChunks++
		return nil
	}
	s.goodChunks[c] = true
	return wb.Set(key, bytes.Clone(val))
}

func (s *salvager) record(wb *spaceBatch, key, val []byte, version uint64) error {
	keep := func() error { return wb.Set(key, bytes.Clone(val)) }
	switch key[0] {
	case prefixSchema, prefixRoot, prefixStat, prefixStatsDone:
		// The new journal has its own schema and root; the stat cache and
		// its mark are left out, so the next copy-mode session scans the
		// whole tree.
		return nil
	case prefixBlob:
		ref, ok := parseBlobKey(key)
		if ok && s.blobGood(ref, val) {
			s.goodBlobs[ref] = true
			s.rep.Kept.Blobs++
			return keep()
		}
		return nil
	case prefixLayer:
		if len(key) < layerKeyMin {
			return nil
		}
		id := tasks.ID(binary.BigEndian.Uint64(key[1:]))
		path := string(key[layerKeyMin:])
		s.layers[id] = true
		c, err := decodeChange(path, val)
		if err != nil || s.uncertain(key, version) {
			l := s.lostTask(id)
			l.ChangesLost = true
			l.Paths = append(l.Paths, path)
			l.Detail = appendDetail(l.Detail, fmt.Sprintf("the change of %q is damaged", path))
			return nil
		}
		for _, st := range []NodeState{c.Before, c.After} {
			if st.Kind == File && st.Blob != (BlobRef{}) && !s.goodBlobs[st.Blob] && !s.rebuildBlob(wb, st.Blob) {
				l := s.lostTask(id)
				if len(l.Paths) == 0 || l.Paths[len(l.Paths)-1] != path {
					l.Paths = append(l.Paths, path)
				}
			}
		}
		s.rep.Kept.Changes++
		return keep()
	case prefixTask:
		t, err := decodeTask("task", val)
		if err != nil || !bytesEqual(taskKey(t.ID), key) {
			s.lostRecord("%s: damaged", describeKey(key))
			return nil
		}
		s.tasks[t.ID] = t
		s.rep.Kept.Tasks++
		return keep()
	case prefixSession:
		var ss Session
		if err := decodeJSON("session", val, &ss); err != nil || !bytesEqual(sessionKey(ss.ID), key) {
			s.lostRecord("%s: damaged", describeKey(key))
			return nil
		}
		s.maxSession = max(s.maxSession, ss.ID)
		s.rep.Kept.Sessions++
		return keep()
	case prefixAction:
		var a Action
		if err := decodeJSON("action", val, &a); err != nil || !bytesEqual(actionKey(a.Session, a.Seq), key) {
			s.lostRecord("%s: damaged", describeKey(key))
			return nil
		}
		s.rep.Kept.Actions++
		return keep()
	case prefixLost:
		if len(key) == taskKeyLen {
			s.markers[tasks.ID(binary.BigEndian.Uint64(key[1:]))] = bytes.Clone(val)
		}
		return nil
	case prefixState:
		var st State
		if err := decodeJSON("state", val, &st); err == nil {
			s.state = &st
		}
		return nil
	case prefixIntent:
		var in Intent
		if err := decodeJSON("intent", val, &in); err != nil || s.uncertain(key, version) {
			s.lostRecord("intent (the record of an unfinished apply): damaged or possibly out of date; dropped")
			return nil
		}
		s.intent = &in
		return nil
	case prefixSessionSeq:
		if n, err := parseU64(val); err == nil {
			s.sessionSeq = n
		}
		return nil
	case prefixTag:
		if _, err := parseU64(val); err != nil {
			s.lostRecord("%s: damaged", describeKey(key))
			return nil
		}
		return keep()
	case prefixGC:
		s.lostRecord("the plan of an unfinished gc: not carried over (verify names a task it had half rewired)")
		return nil
	case prefixStaged:
		return nil // a gc's staged layer: only its plan could use it
	}
	s.lostRecord("%s: unknown record kind", describeKey(key))
	return nil
}

// rebuildBlob writes the record of a blob of one chunk (or none) whose
// record was lost but whose chunk was kept: such a blob's hash is its
// chunk's, so the chunk key names it. It reports whether it could.
func (s *salvager) rebuildBlob(wb *spaceBatch, ref BlobRef) bool {
	var list []chunkRef
	switch {
	case ref.Size == 0:
		if totalHash(xxhash.New()) != ref.Hash {
			return false
		}
	case ref.Size <= ChunkSize:
		found := false
		for seq := uint16(0); seq < 4 && !found; seq++ {
			c := chunkRef{Hash: ref.Hash, Len: uint32(ref.Size), Seq: seq}
			if s.goodChunks[c] {
				list, found = []chunkRef{c}, true
			}
		}
		if !found {
			return false
		}
	default:
		return false
	}
	if err := wb.Set(blobKey(ref), encodeChunkList(list)); err != nil {
		return false
	}
	s.goodBlobs[ref] = true
	s.rep.Kept.Blobs++
	return true
}

// blobGood reports whether every chunk of a blob was kept and the content
// matches the blob's hash and size.
func (s *salvager) blobGood(ref BlobRef, val []byte) bool {
	list, err := decodeChunkList(val)
	if err != nil {
		return false
	}
	var total int64
	for _, c := range list {
		if !s.goodChunks[c] {
			return false
		}
		total += int64(c.Len)
	}
	if total != ref.Size {
		return false
	}
	switch len(list) {
	case 0:
		return totalHash(xxhash.New()) == ref.Hash
	case 1:
		return list[0].Hash == ref.Hash
	}
	d := xxhash.New()
	for _, c := range list {
		b, err := s.old.readChunk(c, s.buf)
		if err != nil {
			return false
		}
		_, _ = d.Write(b)
	}
	return totalHash(d) == ref.Hash
}

// finish writes what the copied records need to hold together: a
// placeholder for every lost task record something refers to, a marker on
// every task that lost changes, the state, the intent and the session
// counter; then it fills the report.
func (s *salvager) finish() error {
	known := map[tasks.ID]bool{}
	for id, t := range s.tasks {
		known[id] = true
		known[t.Parent] = true
	}
	for id := range s.layers {
		known[id] = true
	}
	if s.state != nil {
		known[s.state.Active], known[s.state.Applied] = true, true
	}
	delete(known, tasks.Base)
	whole := false
	for _, r := range s.rd.lost {
		whole = whole || r.whole
	}
	for id := range known {
		if _, ok := s.tasks[id]; !ok {
			l := s.lostTask(id)
			l.RecordLost, l.ChangesLost = true, true
			l.Detail = appendDetail(l.Detail, "its record was lost, and with it its parent: the tasks before it are unknown")
		}
		for _, r := range s.rd.lost {
			if r.whole {
				l := s.lostTask(id)
				l.ChangesLost = true
				l.Detail = appendDetail(l.Detail, "table "+r.table+" is unreadable: any of its changes may be lost")
				continue
			}
			// (A lost task record alone loses no change: it is rebuilt as
			// a placeholder above when nothing else holds it.)
			if rangeHolds(r, layerPrefix(id), layerPrefix(id+1)) {
				l := s.lostTask(id)
				l.ChangesLost = true
				l.Detail = appendDetail(l.Detail, fmt.Sprintf("a damaged block of table %s held records from %s to %s",
					r.table, describeKey(r.lo), describeKey(r.hi)))
			}
		}
	}
	for _, r := range s.rd.lost {
		if !r.whole {
			s.rep.Problems = append(s.rep.Problems, fmt.Sprintf("table %s: records from %s to %s are lost", r.table, describeKey(r.lo), describeKey(r.hi)))
		}
	}
	if s.badChunks > 0 {
		s.rep.Problems = append(s.rep.Problems, fmt.Sprintf("%s of content %s damaged or cut off (in a value log or a table)", plural.Count(s.badChunks, "chunk"), plural.Verb(s.badChunks, "are")))
	}
	for id, v := range s.markers { // marks of an earlier salvage stay
		var m lostMarker
		if decodeJSON("lost marker", v, &m) == nil {
			l := s.lostTask(id)
			l.ChangesLost = true
			l.Detail = appendDetail(l.Detail, m.Detail)
		}
	}
	if whole && s.intent != nil {
		s.lostRecord("intent (the record of an unfinished apply): possibly out of date; dropped")
		s.intent = nil
	}
	return s.new.Update(func(tx *Tx) error { return s.writeFixes(tx) })
}

// rangeHolds reports whether a lost range may hold a key in [a, b).
func rangeHolds(r lostRange, a, b []byte) bool {
	return bytes.Compare(r.lo, b) < 0 && bytes.Compare(r.hi, a) >= 0
}

func (s *salvager) writeFixes(tx *Tx) error {
	var maxID tasks.ID
	var clock uint64
	for id, t := range s.tasks {
		maxID = max(maxID, id)
		clock = max(clock, t.Visit)
	}
	ids := make([]tasks.ID, 0, len(s.lost))
	for id := range s.lost {
		ids = append(ids, id)
		maxID = max(maxID, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		l := s.lost[id]
		sort.Strings(l.Paths)
		l.Paths = compactStrings(l.Paths)
		if l.RecordLost {
			t := tasks.Task{ID: id, Summary: "(lost: its record was damaged)", Kind: tasks.KindAgent, Created: s.now}
			if err := tx.PutTask(t); err != nil {
				return err
			}
			s.tasks[id] = t
		}
		if l.ChangesLost {
			v, err := encodeJSON(lostMarker{Detail: l.Detail, Salvaged: s.now})
			if err != nil {
				return err
			}
			if err := tx.txn.Set(lostKey(id), v); err != nil {
				return err
			}
		}
		s.rep.LostTasks = append(s.rep.LostTasks, *l)
	}
	st := State{Active: maxID, Applied: maxID, Current: maxID, Clock: clock}
	if s.state == nil {
		if maxID != tasks.Base {
			s.lostRecord("state (the active and applied task): lost; task %d is taken as both (the drift rule keeps anything that differs)", maxID)
		}
	} else {
		st = *s.state
		st.Current = max(st.Current, maxID)
		st.Clock = max(st.Clock, clock)
		for _, p := range []*tasks.ID{&st.Active, &st.Applied} {
			if _, ok := s.tasks[*p]; !ok && *p != tasks.Base {
				s.lostRecord("state: task %d is lost; task %d is taken instead", *p, maxID)
				*p = maxID
			}
		}
	}
	if l, ok := s.lost[st.Active]; ok && l.ChangesLost {
		s.rep.Problems = append(s.rep.Problems, fmt.Sprintf(
			"the active task %d lost changes: undo, redo and switch from it are refused; your files are as they were", st.Active))
	}
	if err := tx.SetState(st); err != nil {
		return err
	}
	if in := s.intent; in != nil {
		_, fromOK := s.tasks[in.From]
		_, toOK := s.tasks[in.To]
		switch {
		case !(fromOK || in.From == tasks.Base) || !(toOK || in.To == tasks.Base):
			s.lostRecord("intent (the record of an unfinished apply): its tasks are lost; dropped")
		case s.walkLost(in.From, in.To) != tasks.Base:
			s.lostRecord("intent (the record of an unfinished apply from task %d to %d): task %d on its way lost data, so it cannot be finished; dropped (what it had written differs from task %d and is kept as an outside task by the next undo, redo or switch)",
				in.From, in.To, s.walkLost(in.From, in.To), in.From)
		default:
			if err := tx.PutIntent(*in); err != nil {
				return err
			}
		}
	}
	return tx.txn.Set(keySessionSeq, u64(max(s.sessionSeq, s.maxSession)))
}

// walkLost returns a task on the walk from a to b that lost something, or
// the base when none did (or the walk cannot be made).
func (s *salvager) walkLost(a, b tasks.ID) tasks.ID {
	list := make([]tasks.Task, 0, len(s.tasks))
	for _, t := range s.tasks {
		list = append(list, t)
	}
	tree, err := tasks.NewTree(list)
	if err != nil {
		return tasks.Base
	}
	w, err := tree.Path(a, b)
	if err != nil {
		return tasks.Base
	}
	for _, id := range append(append([]tasks.ID{}, w.Up...), w.Down...) {
		if _, lost := s.lost[id]; lost {
			return id
		}
	}
	return tasks.Base
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
