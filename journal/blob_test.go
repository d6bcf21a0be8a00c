package journal

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func compressible(n int) []byte {
	var buf bytes.Buffer
	r := mrand.New(mrand.NewPCG(1, 2))
	for buf.Len() < n {
		fmt.Fprintf(&buf, "func f%d(x int) int { return x * %d } // line %d\n", r.IntN(1000), r.IntN(100), buf.Len())
	}
	return buf.Bytes()[:n]
}

// countPrefix counts the keys under prefix.
func countPrefix(t *testing.T, j *Journal, prefix byte) int {
	t.Helper()
	n := 0
	err := j.db.View(func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: []byte{prefix}}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBlobRoundTrip(t *testing.T) {
	j := openTest(t)
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{7}},
		{"chunk-1", randomBytes(ChunkSize - 1)},
		{"chunk", randomBytes(ChunkSize)},
		{"chunk+1", randomBytes(ChunkSize + 1)},
		{"5MiB random", randomBytes(5 << 20)},
		{"5MiB compressible", compressible(5 << 20)},
	}
	refs := make([]BlobRef, len(cases))
	for i, c := range cases {
		ref, err := j.PutBlob(bytes.NewReader(c.data))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ref.Size != int64(len(c.data)) {
			t.Errorf("%s: size %d", c.name, ref.Size)
		}
		refs[i] = ref
	}
	j = reopen(t, j)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := j.ReadBlob(refs[i])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.data) {
				t.Fatalf("content differs (%d vs %d bytes)", len(got), len(c.data))
			}
			var buf bytes.Buffer
			if err := j.WriteBlob(refs[i], &buf); err != nil || !bytes.Equal(buf.Bytes(), c.data) {
				t.Fatalf("WriteBlob: %v", err)
			}
			ok, err := j.HasBlob(refs[i])
			if !ok || err != nil {
				t.Fatalf("HasBlob: %v %v", ok, err)
			}
		})
	}
	if ok, err := j.HasBlob(BlobRef{Hash: 1, Size: 1}); ok || err != nil {
		t.Errorf("HasBlob(unknown) = %v %v", ok, err)
	}
	if _, err := j.ReadBlob(BlobRef{Hash: 1, Size: 1}); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadBlob(unknown) = %v", err)
	}
}

func TestBlobCompression(t *testing.T) {
	j := openTest(t)
	data := compressible(3 << 20)
	if _, err := j.PutBytes(data); err != nil {
		t.Fatal(err)
	}
	var stored int
	err := j.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixChunk}, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			stored += int(it.Item().ValueSize())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stored > len(data)/3 {
		t.Errorf("compressible 3 MiB stored as %d bytes", stored)
	}
	t.Logf("3 MiB of source-like text stored in %d bytes", stored)
}

func TestBlobDedupe(t *testing.T) {
	j := openTest(t)
	data := randomBytes(2*ChunkSize + 100)
	a, err := j.PutBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := j.PutBlob(io.MultiReader(bytes.NewReader(data[:10]), bytes.NewReader(data[10:])))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("same content, refs %v and %v", a, b)
	}
	// A blob sharing its first two chunks.
	c, err := j.PutBytes(append(append([]byte(nil), data[:2*ChunkSize]...), 'x'))
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Error("different content, same ref")
	}
	if n := countPrefix(t, j, prefixChunk); n != 4 {
		t.Errorf("%d chunks stored, want 4", n)
	}
	if n := countPrefix(t, j, prefixBlob); n != 2 {
		t.Errorf("%d blob records, want 2", n)
	}
}

func TestBlobCollision(t *testing.T) {
	j := openTest(t)
	testHash = func() uint64 { return 42 }
	defer func() { testHash = nil }()
	contents := [][]byte{[]byte("alpha"), []byte("bravo"), []byte("charl"), []byte("alpha")}
	refs := make([]BlobRef, len(contents))
	for i, c := range contents {
		ref, err := j.PutBytes(c)
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = ref
	}
	if refs[0].Seq != 0 || refs[1].Seq != 1 || refs[2].Seq != 2 || refs[3] != refs[0] {
		t.Errorf("refs %v", refs)
	}
	for i, c := range contents {
		got, err := j.ReadBlob(refs[i])
		if err != nil || !bytes.Equal(got, c) {
			t.Errorf("blob %d: %q %v", i, got, err)
		}
	}
	if n := countPrefix(t, j, prefixChunk); n != 3 {
		t.Errorf("%d chunks, want 3", n)
	}
	// Equal chunk lists under different hashes cannot happen with a real
	// hash; two different contents made of the same colliding chunks must
	// still get distinct blob records.
	ab, err := j.PutBytes(append(bytes.Repeat([]byte{1}, ChunkSize), 2))
	if err != nil {
		t.Fatal(err)
	}
	ba, err := j.PutBytes(append(bytes.Repeat([]byte{3}, ChunkSize), 4))
	if err != nil {
		t.Fatal(err)
	}
	if ab == ba {
		t.Errorf("collision: %v", ab)
	}
	for _, r := range []BlobRef{ab, ba} {
		if _, err := j.ReadBlob(r); err != nil {
			t.Error(err)
		}
	}
}

func TestBlobConcurrent(t *testing.T) {
	j := openTest(t)
	shared := compressible(ChunkSize + 5)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	refs := make(chan BlobRef, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				ref, err := j.PutBytes(shared)
				if err != nil {
					errs <- err
					return
				}
				refs <- ref
				if _, err := j.PutBytes([]byte(fmt.Sprintf("file %d %d", g, i))); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	close(refs)
	for err := range errs {
		t.Fatal(err)
	}
	var first BlobRef
	for r := range refs {
		if first == (BlobRef{}) {
			first = r
		}
		if r != first {
			t.Errorf("refs differ: %v %v", r, first)
		}
	}
	if n := countPrefix(t, j, prefixChunk); n != 2+64 {
		t.Errorf("%d chunks, want 66", n)
	}
	got, err := j.ReadBlob(first)
	if err != nil || !bytes.Equal(got, shared) {
		t.Errorf("read back: %v", err)
	}
}

// damageChunk rewrites the stored value of the chunk with seq 0 of the
// given content through a raw badger write.
func damageChunk(t *testing.T, j *Journal, content []byte, edit func(v []byte) []byte) {
	t.Helper()
	key := chunkKey(chunkRef{Hash: chunkHash(content), Len: uint32(len(content))})
	err := j.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		return txn.Set(key, edit(v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func TestBlobCorruptChunk(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		edit func(v []byte) []byte
	}{
		{"raw byte flipped", randomBytes(ChunkSize), func(v []byte) []byte { v[len(v)/2] ^= 0x40; return v }},
		{"zstd byte flipped", compressible(ChunkSize), func(v []byte) []byte { v[len(v)/2] ^= 0x40; return v }},
		{"truncated", compressible(ChunkSize), func(v []byte) []byte { return v[:len(v)/2] }},
		{"unknown flag", compressible(ChunkSize), func(v []byte) []byte { v[0] = 9; return v }},
		{"empty value", randomBytes(ChunkSize), func(v []byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := openTest(t)
			second := randomBytes(1000)
			data := append(append([]byte(nil), second...), tc.data...)
			ref, err := j.PutBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			damageChunk(t, j, data[ChunkSize:], tc.edit) // the second chunk
			var w countingWriter
			err = j.WriteBlob(ref, &w)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("WriteBlob on damaged chunk: %v", err)
			}
			if w.n != ChunkSize {
				t.Errorf("wrote %d bytes, want only the first chunk (%d)", w.n, ChunkSize)
			}
			t.Log(err)
			damage, err := j.Verify(nil)
			if err != nil || len(damage) == 0 {
				t.Fatalf("Verify: %v %v", damage, err)
			}
			// Storing the same content again repairs the chunk.
			if _, err := j.PutBytes(data); err != nil {
				t.Fatal(err)
			}
			got, err := j.ReadBlob(ref)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("after repair: %v", err)
			}
			if damage, err := j.Verify(nil); err != nil || len(damage) != 0 {
				t.Fatalf("Verify after repair: %v %v", damage, err)
			}
		})
	}
}

func TestBlobMissingChunk(t *testing.T) {
	j := openTest(t)
	data := compressible(100)
	ref, err := j.PutBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	key := chunkKey(chunkRef{Hash: chunkHash(data), Len: 100})
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) }); err != nil {
		t.Fatal(err)
	}
	if _, err := j.ReadBlob(ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing chunk: %v", err)
	}
	damage, err := j.Verify(nil)
	if err != nil || len(damage) != 1 {
		t.Fatalf("Verify: %+v %v", damage, err)
	}
}

// TestZeroChunks: blobs made mostly of whole chunks of zeros (sparse files)
// read back exactly, and share one stored zero chunk.
func TestZeroChunks(t *testing.T) {
	j := openTest(t)
	for i, b := range [][]byte{
		append(make([]byte, 3*ChunkSize), 'x'),
		append([]byte("y"), make([]byte, 4*ChunkSize)...),
		make([]byte, 2*ChunkSize),
	} {
		ref, err := j.PutBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.ReadBlob(ref)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("blob %d: read back %d bytes (err %v), want %d", i, len(got), err, len(b))
		}
	}
	if j.zeroChunk.Load() == nil {
		t.Fatal("the zero chunk is not remembered")
	}
}
