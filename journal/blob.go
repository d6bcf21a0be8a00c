package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/zstd"
)

// Chunks are compressed with zstd at its fastest level through one shared
// encoder and decoder (EncodeAll and DecodeAll are safe for concurrent use):
// source trees, the bulk of a journal, shrink about twice as much as with s2
// while zstd-fastest still runs at several hundred MB/s per core. A chunk
// that does not shrink by at least 1/32 is stored raw, so incompressible data
// (media, archives, random bytes) costs one flag byte and no decoding.
const (
	chunkRaw  byte = 0
	chunkZstd byte = 1
)

var (
	codecOnce sync.Once
	zenc      *zstd.Encoder
	zdec      *zstd.Decoder
	codecErr  error
)

func codec() (*zstd.Encoder, *zstd.Decoder, error) {
	codecOnce.Do(func() {
		zenc, codecErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false), // every chunk is verified by its xxhash
			zstd.WithLowerEncoderMem(true))
		if codecErr != nil {
			return
		}
		zdec, codecErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(2*ChunkSize),
			zstd.WithDecodeAllCapLimit(true), // never decode past the chunk's recorded length
			zstd.IgnoreChecksum(true))
	})
	return zenc, zdec, codecErr
}

// testHash, when set by a test, replaces every content hash (chunk and blob)
// so that collisions can be forced.
var testHash func() uint64

func chunkHash(b []byte) uint64 {
	if testHash != nil {
		return testHash()
	}
	return xxhash.Sum64(b)
}

func totalHash(d *xxhash.Digest) uint64 {
	if testHash != nil {
		return testHash()
	}
	return d.Sum64()
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

func getChunkBuf() *[]byte  { return chunkPool.Get().(*[]byte) }
func putChunkBuf(b *[]byte) { chunkPool.Put(b) }

// probeSize is the sample encodeChunk compresses to detect incompressible data.
const probeSize = 16 << 10

// encodeChunk returns the stored form of a chunk: flag byte + zstd frame, or
// flag byte + raw bytes when compression does not pay.
func encodeChunk(b []byte) ([]byte, error) {
	enc, _, err := codec()
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	out := make([]byte, 1, 1+len(b))
	if len(b) >= 4*probeSize {
		// Probe a sample first: media, archives and other compressed data
		// then cost one small compression instead of a whole chunk's.
		probe := enc.EncodeAll(b[:probeSize], out[1:1])
		if len(probe) >= probeSize-probeSize/32 {
			out[0] = chunkRaw
			return append(out, b...), nil
		}
	}
	out[0] = chunkZstd
	out = enc.EncodeAll(b, out)
	if len(out)-1 >= len(b)-len(b)/32 {
		out = append(out[:1], b...)
		out[0] = chunkRaw
	}
	return out, nil
}

// decodeChunk decodes a stored chunk of recorded length n into dst (whose
// capacity must be at least n) and returns the bytes. Any mismatch is ErrCorrupt.
func decodeChunk(v []byte, n int, dst []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, corruptf("empty chunk value")
	}
	switch v[0] {
	case chunkRaw:
		if len(v)-1 != n {
			return nil, corruptf("raw chunk of %d bytes, want %d", len(v)-1, n)
		}
		return append(dst[:0], v[1:]...), nil
	case chunkZstd:
		_, dec, err := codec()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		out, err := dec.DecodeAll(v[1:], dst[:0:n])
		if err != nil {
			return nil, corruptf("decompress chunk: %v", err)
		}
		if len(out) != n {
			return nil, corruptf("chunk decompressed to %d bytes, want %d", len(out), n)
		}
		return out, nil
	}
	return nil, corruptf("unknown chunk flag %d", v[0])
}

// PutBlob stores the content read from r (chunked, compressed, deduplicated)
// and returns its reference. It holds one chunk in memory at a time and is
// safe for concurrent use.
func (j *Journal) PutBlob(r io.Reader) (BlobRef, error) {
	bufp := getChunkBuf()
	defer putChunkBuf(bufp)
	buf := (*bufp)[:ChunkSize]
	digest := xxhash.New()
	var list []chunkRef
	var size int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if rerr == io.ErrUnexpectedEOF && list == nil {
			return j.putSmallBlob(buf[:n])
		}
		if n > 0 {
			chunk := buf[:n]
			_, _ = digest.Write(chunk)
			size += int64(n)
			c, err := j.putDataChunk(chunk)
			if err != nil {
				return BlobRef{}, fmt.Errorf("store blob: %w", err)
			}
			list = append(list, c)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return BlobRef{}, fmt.Errorf("store blob: read content: %w", rerr)
		}
	}
	ref := BlobRef{Hash: totalHash(digest), Size: size}
	ref, err := j.putBlobRecord(ref, list)
	if err != nil {
		return BlobRef{}, fmt.Errorf("store blob %s: %w", ref, err)
	}
	return ref, nil
}

// PutBytes stores b as a blob.
func (j *Journal) PutBytes(b []byte) (BlobRef, error) { return j.PutBlob(bytes.NewReader(b)) }

// retryConflicts runs a write transaction, rerunning it when a concurrent
// writer of the same key made it conflict, and converts badger panics.
func (j *Journal) retryConflicts(need int, fn func(txn *badger.Txn) error) error {
	if j.closed.Load() {
		return errClosed
	}
	if j.readOnly {
		return errReadOnly
	}
	if err := checkSpace(j.dir, int64(need), spaceReserve); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt <= maxConflictRetries; attempt++ {
		err = func() (err error) {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%w: badger panicked: %v", ErrCorrupt, r)
				}
			}()
			return j.db.Update(fn)
		}()
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
		conflictPause(attempt)
	}
	return err
}

// putChunk stores one chunk in a transaction of its own.
func (j *Journal) putChunk(chunk []byte) (chunkRef, error) {
	w := newChunkWrite(chunk)
	defer w.release()
	var out chunkRef
	err := j.retryConflicts(len(chunk), func(txn *badger.Txn) error {
		var err error
		out, err = w.put(txn)
		return err
	})
	if err != nil {
		return chunkRef{}, fmt.Errorf("store chunk %016x/%d: %w", w.base.Hash, w.base.Len, writeError(err))
	}
	return out, nil
}

// zeroBlock is compared against, a block at a time, to find chunks of zeros.
var zeroBlock [4096]byte

// isZero reports whether b holds only zero bytes.
func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroBlock))
		if !bytes.Equal(b[:n], zeroBlock[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// putDataChunk is putChunk with a shortcut for whole chunks of zeros: sparse
// files and preallocated images are mostly such chunks, and each would
// otherwise be compressed, looked up and decoded to compare with the stored
// copy. After the first, this process knows where the zero chunk is.
func (j *Journal) putDataChunk(chunk []byte) (chunkRef, error) {
	zero := len(chunk) == ChunkSize && isZero(chunk)
	if zero {
		if c := j.zeroChunk.Load(); c != nil {
			return *c, nil
		}
	}
	c, err := j.putChunk(chunk)
	if err == nil && zero {
		j.zeroChunk.Store(&c)
	}
	return c, err
}

// putSmallBlob stores a blob of one chunk: chunk and blob record in one
// transaction (most files of a source tree are smaller than a chunk).
func (j *Journal) putSmallBlob(chunk []byte) (BlobRef, error) {
	w := newChunkWrite(chunk)
	defer w.release()
	ref := BlobRef{Hash: w.base.Hash, Size: int64(len(chunk))}
	var out BlobRef
	err := j.retryConflicts(len(chunk), func(txn *badger.Txn) error {
		c, err := w.put(txn)
		if err != nil {
			return err
		}
		out, err = putBlobTxn(txn, ref, encodeChunkList([]chunkRef{c}))
		return err
	})
	if err != nil {
		return BlobRef{}, fmt.Errorf("store blob %s: %w", ref, writeError(err))
	}
	return out, nil
}

// chunkWrite is one chunk on its way into the store.
type chunkWrite struct {
	chunk    []byte
	base     chunkRef
	stored   []byte // encoded form, made once on first need
	scratchp *[]byte
}

func newChunkWrite(chunk []byte) *chunkWrite {
	return &chunkWrite{
		chunk:    chunk,
		base:     chunkRef{Hash: chunkHash(chunk), Len: uint32(len(chunk))},
		scratchp: getChunkBuf(),
	}
}

func (w *chunkWrite) release() { putChunkBuf(w.scratchp) }

// put stores the chunk under the first sequence number whose slot is free
// or already holds the same bytes. A slot whose stored bytes are damaged
// (they do not decode to the key's hash and length) is repaired by
// overwriting it with these bytes.
func (w *chunkWrite) put(txn *badger.Txn) (chunkRef, error) {
	for seq := 0; seq <= math.MaxUint16; seq++ {
		c := w.base
		c.Seq = uint16(seq)
		key := chunkKey(c)
		item, err := txn.Get(key)
		same := false
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return chunkRef{}, readError(err)
		default:
			var damaged bool
			verr := item.Value(func(v []byte) error {
				got, err := decodeChunk(v, len(w.chunk), *w.scratchp)
				if err != nil || chunkHash(got) != c.Hash {
					damaged = true
					return nil
				}
				same = bytes.Equal(got, w.chunk)
				return nil
			})
			if verr != nil && !errors.Is(readError(verr), ErrCorrupt) {
				return chunkRef{}, readError(verr)
			}
			if !damaged && verr == nil && !same {
				continue // a collision: try the next slot
			}
		}
		if same {
			return c, nil
		}
		if w.stored == nil {
			if w.stored, err = encodeChunk(w.chunk); err != nil {
				return chunkRef{}, err
			}
		}
		return c, txn.Set(key, w.stored)
	}
	return chunkRef{}, fmt.Errorf("chunk %016x/%d: every collision slot is taken", w.base.Hash, w.base.Len)
}

// putBlobRecord stores the chunk list of a blob in a transaction of its own.
func (j *Journal) putBlobRecord(ref BlobRef, list []chunkRef) (BlobRef, error) {
	val := encodeChunkList(list)
	var out BlobRef
	err := j.retryConflicts(len(val), func(txn *badger.Txn) error {
		var err error
		out, err = putBlobTxn(txn, ref, val)
		return err
	})
	if err != nil {
		return ref, writeError(err)
	}
	return out, nil
}

// putBlobTxn stores a blob's encoded chunk list under the first sequence
// number that is free or already holds the same list (a damaged record in
// the way is overwritten).
func putBlobTxn(txn *badger.Txn, ref BlobRef, val []byte) (BlobRef, error) {
	for seq := 0; seq <= math.MaxUint16; seq++ {
		r := ref
		r.Seq = uint16(seq)
		key := blobKey(r)
		item, err := txn.Get(key)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return ref, readError(err)
		default:
			var same, damaged bool
			verr := item.Value(func(v []byte) error {
				if _, err := decodeChunkList(v); err != nil {
					damaged = true
				}
				same = bytes.Equal(v, val)
				return nil
			})
			if verr != nil && !errors.Is(readError(verr), ErrCorrupt) {
				return ref, readError(verr)
			}
			if same {
				return r, nil
			}
			if !damaged && verr == nil {
				continue
			}
		}
		return r, txn.Set(key, val)
	}
	return ref, fmt.Errorf("every collision slot is taken")
}

// chunkList reads a blob's chunk list and checks it against the reference.
func (j *Journal) chunkList(ref BlobRef) ([]chunkRef, error) {
	var val []byte
	err := j.view("read blob", func(txn *badger.Txn) error {
		var err error
		val, err = getCopy(txn, blobKey(ref))
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: blob record missing: %w", ErrCorrupt, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	list, err := decodeChunkList(val)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, c := range list {
		total += int64(c.Len)
	}
	if total != ref.Size {
		return nil, corruptf("chunks hold %d bytes, blob is %d", total, ref.Size)
	}
	return list, nil
}

// readChunk reads and verifies one chunk into dst.
func (j *Journal) readChunk(c chunkRef, dst []byte) ([]byte, error) {
	var out []byte
	err := j.view("read chunk", func(txn *badger.Txn) error {
		item, err := txn.Get(chunkKey(c))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return corruptf("chunk missing")
		}
		if err != nil {
			return readError(err)
		}
		return item.Value(func(v []byte) error {
			out, err = decodeChunk(v, int(c.Len), dst)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("chunk %016x/%d/%d: %w", c.Hash, c.Len, c.Seq, readError(err))
	}
	if chunkHash(out) != c.Hash {
		return nil, fmt.Errorf("chunk %016x/%d/%d: %w: content hash %016x", c.Hash, c.Len, c.Seq, ErrCorrupt, chunkHash(out))
	}
	return out, nil
}

// WriteBlob writes the content of ref to w, verifying every chunk's hash and
// the total length and hash; a mismatch is ErrCorrupt and nothing after it is
// written.
func (j *Journal) WriteBlob(ref BlobRef, w io.Writer) error {
	if err := j.writeBlob(ref, w); err != nil {
		return fmt.Errorf("read blob %s: %w", ref, err)
	}
	return nil
}

func (j *Journal) writeBlob(ref BlobRef, w io.Writer) error {
	list, err := j.chunkList(ref)
	if err != nil {
		return err
	}
	bufp := getChunkBuf()
	defer putChunkBuf(bufp)
	digest := xxhash.New()
	for _, c := range list {
		b, err := j.readChunk(c, *bufp)
		if err != nil {
			return err
		}
		_, _ = digest.Write(b)
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write content: %w", err)
		}
	}
	if h := totalHash(digest); h != ref.Hash {
		return fmt.Errorf("%w: content hash %016x", ErrCorrupt, h)
	}
	return nil
}

// ReadBlob returns the whole content of ref (verified). For small blobs.
func (j *Journal) ReadBlob(ref BlobRef) ([]byte, error) {
	var buf bytes.Buffer
	if ref.Size > 0 {
		// A reference read from a damaged journal may claim any size:
		// preallocate at most 64 MiB before the content proves itself.
		buf.Grow(int(min(ref.Size, 64<<20)))
	}
	if err := j.WriteBlob(ref, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// HasBlob reports whether ref is stored.
func (j *Journal) HasBlob(ref BlobRef) (bool, error) {
	err := j.view("find blob", func(txn *badger.Txn) error {
		_, err := txn.Get(blobKey(ref))
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	}
	return false, fmt.Errorf("find blob %s: %w", ref, readError(err))
}
