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

func BenchmarkPutBlob100MiB(b *testing.B) {
	j := openTest(b)
	data := compressible(100 << 20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		data[i] ^= 1 // new content each round
		if _, err := j.PutBytes(data); err != nil {
			b.Fatal(err)
		}
	}
}
