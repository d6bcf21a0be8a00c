package journal

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// Binary formats. Changes and stat entries exist by the hundred thousand, so
// they are encoded compactly; every value starts with a format byte so a
// later version can change the layout. Varints are encoding/binary's.
//
//	NodeState  = kind(1) fields(1) [mode uvarint] [size varint]
//	             [blob hash(8) blobsize varint seq uvarint] [target len uvarint, bytes]
//	             (a field is present when its bit in fields is set)
//	Change     = formatV1 NodeState(before) NodeState(after)   (the path is in the key)
//	StatEntry  = formatV1 kind(1) fields(1) size varint mtime varint ctime varint
//	             ino uvarint mode uvarint [blob] [target]
//	chunk list = formatV1 count uvarint, count × (hash(8) len uvarint seq uvarint)
//	chunk      = chunkRaw bytes | chunkZstd zstd-frame
//	Task       = formatV1 id uvarint parent uvarint session uvarint kind str summary str
//	             created time ended time files uvarint visit uvarint
//	             (str = len uvarint, bytes; time = len uvarint, time.MarshalBinary)
//	             A record starting with '{' is the JSON form journals wrote before.
const formatV1 byte = 1

// field bits of a NodeState or StatEntry.
const (
	fieldMode   = 1 << 0
	fieldSize   = 1 << 1
	fieldBlob   = 1 << 2
	fieldTarget = 1 << 3
	fieldAll    = fieldMode | fieldSize | fieldBlob | fieldTarget
)

// maxTarget bounds a decoded symlink target (Linux PATH_MAX is 4096; leave room).
const maxTarget = 1 << 16

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// decoder reads fields from b, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = corruptf("truncated or invalid %s", what)
	}
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) fixed64(what string) uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail(what)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(what string) string { return d.strMax(what, maxTarget) }

// strMax reads a length-prefixed string of at most limit bytes.
func (d *decoder) strMax(what string, limit uint64) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > limit || n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// kind reads a task's kind; the known kinds are shared strings, not one
// allocation per record of a long history.
func (d *decoder) kind() tasks.Kind {
	n := d.uvarint("task kind")
	if d.err != nil {
		return ""
	}
	if n > maxSummary || n > uint64(len(d.b)) {
		d.fail("task kind")
		return ""
	}
	b := d.b[:n]
	d.b = d.b[n:]
	for _, k := range []tasks.Kind{tasks.KindAgent, tasks.KindOutside, tasks.KindRevert} {
		if string(b) == string(k) {
			return k
		}
	}
	return tasks.Kind(b)
}

func (d *decoder) mode(what string) fs.FileMode {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail(what)
	}
	return fs.FileMode(v)
}

func (d *decoder) blob(what string) BlobRef {
	var r BlobRef
	r.Hash = d.fixed64(what)
	r.Size = d.varint(what)
	seq := d.uvarint(what)
	if seq > math.MaxUint16 || r.Size < 0 {
		d.fail(what)
	}
	r.Seq = uint16(seq)
	return r
}

func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = corruptf("%d trailing bytes after %s", len(d.b), what)
	}
	return d.err
}

func appendBlob(b []byte, r BlobRef) []byte {
	b = binary.BigEndian.AppendUint64(b, r.Hash)
	b = binary.AppendVarint(b, r.Size)
	return binary.AppendUvarint(b, uint64(r.Seq))
}

func appendNodeState(b []byte, s NodeState) []byte {
	var fields byte
	if s.Mode != 0 {
		fields |= fieldMode
	}
	if s.Size != 0 {
		fields |= fieldSize
	}
	if s.Blob != (BlobRef{}) {
		fields |= fieldBlob
	}
	if s.Target != "" {
		fields |= fieldTarget
	}
	b = append(b, byte(s.Kind), fields)
	if fields&fieldMode != 0 {
		b = binary.AppendUvarint(b, uint64(s.Mode))
	}
	if fields&fieldSize != 0 {
		b = binary.AppendVarint(b, s.Size)
	}
	if fields&fieldBlob != 0 {
		b = appendBlob(b, s.Blob)
	}
	if fields&fieldTarget != 0 {
		b = binary.AppendUvarint(b, uint64(len(s.Target)))
		b = append(b, s.Target...)
	}
	return b
}

func (d *decoder) nodeState(what string) NodeState {
	var s NodeState
	kind := d.byte1(what)
	if kind > byte(Fifo) {
		d.fail(what + " kind")
	}
	s.Kind = NodeKind(kind)
	fields := d.byte1(what)
	if fields&^fieldAll != 0 {
		d.fail(what + " fields")
	}
	if fields&fieldMode != 0 {
		s.Mode = d.mode(what)
	}
	if fields&fieldSize != 0 {
		s.Size = d.varint(what)
	}
	if fields&fieldBlob != 0 {
		s.Blob = d.blob(what)
	}
	if fields&fieldTarget != 0 {
		s.Target = d.str(what)
	}
	return s
}

// encodeChange encodes a change's before and after states (its path is in the key).
func encodeChange(c Change) []byte {
	b := make([]byte, 0, 64+len(c.Before.Target)+len(c.After.Target))
	b = append(b, formatV1)
	b = appendNodeState(b, c.Before)
	return appendNodeState(b, c.After)
}

// decodeChange decodes a change value; path comes from the key.
func decodeChange(path string, v []byte) (Change, error) {
	d := decoder{b: v}
	if f := d.byte1("change format"); d.err == nil && f != formatV1 {
		return Change{}, corruptf("change format %d", f)
	}
	c := Change{Path: path}
	c.Before = d.nodeState("before state")
	c.After = d.nodeState("after state")
	if err := d.end("change"); err != nil {
		return Change{}, err
	}
	return c, nil
}

// encodeStatEntry encodes one stat-cache entry (its path is in the key).
func encodeStatEntry(e StatEntry) []byte {
	var fields byte
	if e.Blob != (BlobRef{}) {
		fields |= fieldBlob
	}
	if e.Target != "" {
		fields |= fieldTarget
	}
	b := make([]byte, 0, 64+len(e.Target))
	b = append(b, formatV1, byte(e.Kind), fields)
	b = binary.AppendVarint(b, e.Size)
	b = binary.AppendVarint(b, e.MtimeNs)
	b = binary.AppendVarint(b, e.CtimeNs)
	b = binary.AppendUvarint(b, e.Ino)
	b = binary.AppendUvarint(b, uint64(e.Mode))
	if fields&fieldBlob != 0 {
		b = appendBlob(b, e.Blob)
	}
	if fields&fieldTarget != 0 {
		b = binary.AppendUvarint(b, uint64(len(e.Target)))
		b = append(b, e.Target...)
	}
	return b
}

// decodeStatEntry decodes one stat-cache entry.
func decodeStatEntry(v []byte) (StatEntry, error) {
	d := decoder{b: v}
	if f := d.byte1("stat format"); d.err == nil && f != formatV1 {
		return StatEntry{}, corruptf("stat entry format %d", f)
	}
	var e StatEntry
	kind := d.byte1("stat kind")
	if kind > byte(Fifo) {
		d.fail("stat kind")
	}
	e.Kind = NodeKind(kind)
	fields := d.byte1("stat fields")
	if fields&^(fieldBlob|fieldTarget) != 0 {
		d.fail("stat fields")
	}
	e.Size = d.varint("stat size")
	e.MtimeNs = d.varint("stat mtime")
	e.CtimeNs = d.varint("stat ctime")
	e.Ino = d.uvarint("stat inode")
	e.Mode = d.mode("stat mode")
	if fields&fieldBlob != 0 {
		e.Blob = d.blob("stat blob")
	}
	if fields&fieldTarget != 0 {
		e.Target = d.str("stat target")
	}
	if err := d.end("stat entry"); err != nil {
		return StatEntry{}, err
	}
	return e, nil
}

// encodeChunkList encodes the chunks of a blob in order.
func encodeChunkList(list []chunkRef) []byte {
	b := make([]byte, 0, 2+len(list)*16)
	b = append(b, formatV1)
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, c := range list {
		b = binary.BigEndian.AppendUint64(b, c.Hash)
		b = binary.AppendUvarint(b, uint64(c.Len))
		b = binary.AppendUvarint(b, uint64(c.Seq))
	}
	return b
}

// decodeChunkList decodes a blob's chunk list. The count is checked against
// the bytes present before anything is allocated.
func decodeChunkList(v []byte) ([]chunkRef, error) {
	d := decoder{b: v}
	if f := d.byte1("chunk list format"); d.err == nil && f != formatV1 {
		return nil, corruptf("chunk list format %d", f)
	}
	n := d.uvarint("chunk count")
	if d.err != nil {
		return nil, d.err
	}
	const minEntry = 8 + 1 + 1
	if n > uint64(len(d.b)/minEntry) {
		return nil, corruptf("chunk count %d exceeds the %d bytes of the list", n, len(d.b))
	}
	list := make([]chunkRef, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var c chunkRef
		c.Hash = d.fixed64("chunk hash")
		l := d.uvarint("chunk length")
		s := d.uvarint("chunk seq")
		if l > ChunkSize || s > math.MaxUint16 {
			d.fail("chunk ref")
		}
		c.Len, c.Seq = uint32(l), uint16(s)
		list = append(list, c)
	}
	if err := d.end("chunk list"); err != nil {
		return nil, err
	}
	return list, nil
}

// maxSummary bounds a decoded task summary or kind (summaries are cut to
// tasks.SummaryMax runes: four bytes each at most; leave room).
const maxSummary = 4096

// encodeTask encodes a task record. Task records are read ten thousand at a
// time by log and status, so they are binary like changes: JSON took most
// of a listing's time.
func encodeTask(t tasks.Task) ([]byte, error) {
	created, ended := marshalTime(t.Created), marshalTime(t.Ended)
	if t.Files < 0 {
		return nil, fmt.Errorf("encode task %d: negative file count %d", t.ID, t.Files)
	}
	b := make([]byte, 0, 48+len(t.Summary)+len(t.Kind)+len(created)+len(ended))
	b = append(b, formatV1)
	b = binary.AppendUvarint(b, uint64(t.ID))
	b = binary.AppendUvarint(b, uint64(t.Parent))
	b = binary.AppendUvarint(b, t.Session)
	b = appendStr(b, string(t.Kind))
	b = appendStr(b, t.Summary)
	b = appendStr(b, string(created))
	b = appendStr(b, string(ended))
	b = binary.AppendUvarint(b, uint64(t.Files))
	b = binary.AppendUvarint(b, t.Visit)
	return b, nil
}

// marshalTime is t.MarshalBinary; a zone whose offset is not whole minutes
// (local mean time of old dates) is kept as the same instant in UTC.
func marshalTime(t time.Time) []byte {
	b, err := t.MarshalBinary()
	if err != nil {
		b, _ = t.UTC().MarshalBinary()
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeTask decodes a task record, binary or the older JSON form; a
// failure is ErrCorrupt and names what.
func decodeTask(what string, v []byte) (tasks.Task, error) {
	var t tasks.Task
	if len(v) > 0 && v[0] == '{' {
		if err := decodeJSON(what, v, &t); err != nil {
			return tasks.Task{}, err
		}
		if t.Files < 0 || len(t.Summary) > maxSummary || len(t.Kind) > maxSummary {
			return tasks.Task{}, fmt.Errorf("%s: %w", what, corruptf("task fields out of range"))
		}
		return t, nil
	}
	d := decoder{b: v}
	if f := d.byte1("task format"); d.err == nil && f != formatV1 {
		return tasks.Task{}, fmt.Errorf("%s: %w", what, corruptf("task format %d", f))
	}
	t.ID = tasks.ID(d.uvarint("task id"))
	t.Parent = tasks.ID(d.uvarint("task parent"))
	t.Session = d.uvarint("task session")
	t.Kind = d.kind()
	t.Summary = d.strMax("task summary", maxSummary)
	t.Created = d.time("task created")
	t.Ended = d.time("task ended")
	files := d.uvarint("task files")
	if files > math.MaxInt32 {
		d.fail("task files")
	}
	t.Files = int(files)
	t.Visit = d.uvarint("task visit")
	if err := d.end("task"); err != nil {
		return tasks.Task{}, fmt.Errorf("%s: %w", what, err)
	}
	return t, nil
}

func (d *decoder) time(what string) time.Time {
	n := d.uvarint(what)
	if d.err != nil {
		return time.Time{}
	}
	if n > 32 || n > uint64(len(d.b)) {
		d.fail(what)
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(d.b[:n]); err != nil {
		d.fail(what)
		return time.Time{}
	}
	d.b = d.b[n:]
	return t
}

// encodeJSON marshals a small record.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}

// decodeJSON unmarshals a small record; a failure is ErrCorrupt.
func decodeJSON(what string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return nil
}
