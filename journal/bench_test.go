package journal

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestPutBlobManySmall measures storing many small files, the shape of a
// first copy-mode scan of a source tree.
func TestPutBlobManySmall(t *testing.T) {
	j := openTest(t)
	const n = 5000
	files := make([][]byte, n)
	for i := range files {
		files[i] = []byte(fmt.Sprintf("package p%d\n\nfunc F() int { return %d }\n%s", i, i, bytes.Repeat([]byte("// pad\n"), i%50)))
	}
	start := time.Now()
	for _, f := range files[:n/2] {
		if _, err := j.PutBytes(f); err != nil {
			t.Fatal(err)
		}
	}
	seq := time.Since(start)
	start = time.Now()
	var wg sync.WaitGroup
	work := make(chan []byte)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if _, err := j.PutBytes(f); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for _, f := range files[n/2:] {
		work <- f
	}
	close(work)
	wg.Wait()
	par := time.Since(start)
	t.Logf("%d small blobs: sequential %v/blob, 4 goroutines %v/blob", n/2, seq/(n/2), par/(n/2))
}

// BenchmarkPutBlob stores 64 MiB of new content per round (one byte of
// every chunk changes), and the same content again (all chunks deduplicated).
func BenchmarkPutBlob(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"compressible", compressible(64 << 20)}, {"random", randomBytes(64 << 20)}} {
		b.Run(c.name+"/new", func(b *testing.B) {
			j := openTest(b)
			b.SetBytes(int64(len(c.data)))
			for i := 0; i < b.N; i++ {
				for k := 0; k < len(c.data); k += ChunkSize {
					c.data[k+i%ChunkSize] ^= 1
				}
				if _, err := j.PutBytes(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/dedupe", func(b *testing.B) {
			j := openTest(b)
			if _, err := j.PutBytes(c.data); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := j.PutBytes(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteBlob reads a 64 MiB blob back, verified.
func BenchmarkWriteBlob(b *testing.B) {
	j := openTest(b)
	ref, err := j.PutBytes(compressible(64 << 20))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(ref.Size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var w countingWriter
		if err := j.WriteBlob(ref, &w); err != nil {
			b.Fatal(err)
		}
	}
}
