package journal

import (
	"encoding/binary"
	"fmt"

	"github.com/timeagent-dev/timeagent/tasks"
)

// Key layout. Every key starts with one byte naming the record kind; all
// integers in keys are big-endian so badger's byte order is numeric order.
// Variable-length fields appear only as the last field of a key, so a key
// never needs a length prefix and two different field tuples can never
// produce the same key.
//
//	key                                      value
//	'V'                                      schema version, 8 bytes BE
//	'R'                                      canonical root path (UTF-8 bytes)
//	'S'                                      State (JSON)
//	'N'                                      last session id handed out, 8 bytes BE
//	'I'                                      Intent (JSON); absent when no apply is unfinished
//	'c' hash(8) length(4) seq(2)             chunk: flag byte + raw or zstd bytes (encode.go)
//	'b' hash(8) size(8) seq(2)               blob: chunk list (encode.go)
//	't' task(8)                              tasks.Task (JSON)
//	'l' task(8) path                         Change before/after (binary, encode.go); path last
//	's' session(8)                           Session (JSON)
//	'a' session(8) seq(8)                    Action (JSON)
//	'f' path                                 StatEntry (binary, encode.go); path last
//	'F'                                      the stat cache is complete (one byte, 1)
//	'x' task(8)                              lostMarker (JSON): a salvage lost some of the task's changes
//	'g' name                                 tag: the task it names, 8 bytes BE; name last
//	'G'                                      GCPlan (JSON); absent when no gc is unfinished
//	'L' task(8) path                         a gc's staged new layer of a kept task (as 'l');
//	                                         'L' task(8) alone marks the staged layer complete
//
// hash is xxhash64 of the (uncompressed) bytes, length and size are byte
// counts, seq is the collision sequence number (0 unless two different
// contents share hash and length).
const (
	prefixSchema     byte = 'V'
	prefixRoot       byte = 'R'
	prefixState      byte = 'S'
	prefixSessionSeq byte = 'N'
	prefixIntent     byte = 'I'
	prefixChunk      byte = 'c'
	prefixBlob       byte = 'b'
	prefixTask       byte = 't'
	prefixLayer      byte = 'l'
	prefixSession    byte = 's'
	prefixAction     byte = 'a'
	prefixStat       byte = 'f'
	prefixStatsDone  byte = 'F'
	prefixLost       byte = 'x'
	prefixTag        byte = 'g'
	prefixGC         byte = 'G'
	prefixStaged     byte = 'L'
)

// Fixed key lengths.
const (
	chunkKeyLen   = 1 + 8 + 4 + 2
	blobKeyLen    = 1 + 8 + 8 + 2
	taskKeyLen    = 1 + 8
	sessionKeyLen = 1 + 8
	actionKeyLen  = 1 + 8 + 8
	layerKeyMin   = 1 + 8
)

var (
	keySchema     = []byte{prefixSchema}
	keyRoot       = []byte{prefixRoot}
	keyState      = []byte{prefixState}
	keySessionSeq = []byte{prefixSessionSeq}
	keyIntent     = []byte{prefixIntent}
	keyStatsDone  = []byte{prefixStatsDone}
	keyGC         = []byte{prefixGC}
)

// chunkRef names one stored chunk.
type chunkRef struct {
	Hash uint64
	Len  uint32
	Seq  uint16
}

func chunkKey(c chunkRef) []byte {
	k := make([]byte, chunkKeyLen)
	k[0] = prefixChunk
	binary.BigEndian.PutUint64(k[1:], c.Hash)
	binary.BigEndian.PutUint32(k[9:], c.Len)
	binary.BigEndian.PutUint16(k[13:], c.Seq)
	return k
}

func parseChunkKey(k []byte) (chunkRef, bool) {
	if len(k) != chunkKeyLen || k[0] != prefixChunk {
		return chunkRef{}, false
	}
	return chunkRef{
		Hash: binary.BigEndian.Uint64(k[1:]),
		Len:  binary.BigEndian.Uint32(k[9:]),
		Seq:  binary.BigEndian.Uint16(k[13:]),
	}, true
}

func blobKey(r BlobRef) []byte {
	k := make([]byte, blobKeyLen)
	k[0] = prefixBlob
	binary.BigEndian.PutUint64(k[1:], r.Hash)
	binary.BigEndian.PutUint64(k[9:], uint64(r.Size))
	binary.BigEndian.PutUint16(k[17:], r.Seq)
	return k
}

func parseBlobKey(k []byte) (BlobRef, bool) {
	if len(k) != blobKeyLen || k[0] != prefixBlob {
		return BlobRef{}, false
	}
	size := binary.BigEndian.Uint64(k[9:])
	if size > 1<<62 {
		return BlobRef{}, false
	}
	return BlobRef{
		Hash: binary.BigEndian.Uint64(k[1:]),
		Size: int64(size),
		Seq:  binary.BigEndian.Uint16(k[17:]),
	}, true
}

func idKey(prefix byte, id uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

func taskKey(id tasks.ID) []byte { return idKey(prefixTask, uint64(id)) }

// taskIDOf is the id of a task key.
func taskIDOf(k []byte) (tasks.ID, bool) {
	if len(k) != 9 || k[0] != prefixTask {
		return 0, false
	}
	return tasks.ID(binary.BigEndian.Uint64(k[1:])), true
}
func sessionKey(id uint64) []byte     { return idKey(prefixSession, id) }
func layerPrefix(id tasks.ID) []byte  { return idKey(prefixLayer, uint64(id)) }
func lostKey(id tasks.ID) []byte      { return idKey(prefixLost, uint64(id)) }
func stagedPrefix(id tasks.ID) []byte { return idKey(prefixStaged, uint64(id)) }

// stagedKey is 'L' + task id + path, like layerKey.
func stagedKey(id tasks.ID, path string) []byte {
	k := layerKey(id, path)
	k[0] = prefixStaged
	return k
}

// layerKey is 'l' + task id + path; the path is last and needs no length.
func layerKey(id tasks.ID, path string) []byte {
	k := make([]byte, layerKeyMin, layerKeyMin+len(path))
	k[0] = prefixLayer
	binary.BigEndian.PutUint64(k[1:], uint64(id))
	return append(k, path...)
}

// tagKey is 'g' + name; the name is last and needs no length.
func tagKey(name string) []byte {
	k := make([]byte, 1, 1+len(name))
	k[0] = prefixTag
	return append(k, name...)
}

func actionPrefix(session uint64) []byte { return idKey(prefixAction, session) }

func actionKey(session, seq uint64) []byte {
	k := make([]byte, actionKeyLen)
	k[0] = prefixAction
	binary.BigEndian.PutUint64(k[1:], session)
	binary.BigEndian.PutUint64(k[9:], seq)
	return k
}

// statKey is 'f' + path; the path is last and needs no length.
func statKey(path string) []byte {
	k := make([]byte, 1, 1+len(path))
	k[0] = prefixStat
	return append(k, path...)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func parseU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: counter of %d bytes, want 8", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// describeKey renders a key for messages (Damage.Key, errors).
func describeKey(k []byte) string {
	if len(k) == 0 {
		return "empty key"
	}
	switch k[0] {
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
		if c, ok := parseChunkKey(k); ok {
			return fmt.Sprintf("chunk %016x/%d/%d", c.Hash, c.Len, c.Seq)
		}
	case prefixBlob:
		if r, ok := parseBlobKey(k); ok {
			return "blob " + r.String()
		}
	case prefixTask:
		if len(k) == taskKeyLen {
			return fmt.Sprintf("task %d", binary.BigEndian.Uint64(k[1:]))
		}
	case prefixLayer:
		if len(k) >= layerKeyMin {
			return fmt.Sprintf("layer %d %q", binary.BigEndian.Uint64(k[1:]), k[layerKeyMin:])
		}
	case prefixSession:
		if len(k) == sessionKeyLen {
			return fmt.Sprintf("session %d", binary.BigEndian.Uint64(k[1:]))
		}
	case prefixAction:
		if len(k) == actionKeyLen {
			return fmt.Sprintf("action %d/%d", binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(k[9:]))
		}
	case prefixStat:
		return fmt.Sprintf("stat %q", k[1:])
	case prefixStatsDone:
		return "stat cache mark"
	case prefixLost:
		if len(k) == taskKeyLen {
			return fmt.Sprintf("lost changes of task %d", binary.BigEndian.Uint64(k[1:]))
		}
	case prefixTag:
		return fmt.Sprintf("tag %q", k[1:])
	case prefixGC:
		return "gc plan"
	case prefixStaged:
		if len(k) == layerKeyMin {
			return fmt.Sprintf("staged layer %d (complete mark)", binary.BigEndian.Uint64(k[1:]))
		}
		if len(k) > layerKeyMin {
			return fmt.Sprintf("staged layer %d %q", binary.BigEndian.Uint64(k[1:]), k[layerKeyMin:])
		}
	}
	return fmt.Sprintf("key %x", k)
}

// String renders a blob reference as hash/size/seq.
func (r BlobRef) String() string {
	return fmt.Sprintf("%016x/%d/%d", r.Hash, r.Size, r.Seq)
}
