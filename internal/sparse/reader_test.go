package sparse

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestReader: files mixing holes and data read back exactly, whatever the
// layout (hole first or last, data unaligned, only holes, empty).
func TestReader(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	data := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	cases := []struct {
		name  string
		parts [][]byte // written through a Writer: zero blocks become holes
	}{
		{"empty", nil},
		{"data", [][]byte{data(10000)}},
		{"hole only", [][]byte{make([]byte, 3<<20)}},
		{"hole first", [][]byte{make([]byte, 2<<20), data(5000)}},
		{"hole last", [][]byte{data(5000), make([]byte, 2<<20)}},
		{"many", [][]byte{data(100), make([]byte, 1<<20), data(70000), make([]byte, 3<<20), data(1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, _ := write(t, c.parts)
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			w := NewWriter(f)
			for _, b := range c.parts {
				w.Write(b)
			}
			if err := w.Finish(); err != nil {
				t.Fatal(err)
			}
			for _, bufSize := range []int{1, 4096, 1 << 20} {
				got, err := io.ReadAll(io.LimitReader(bufReader{NewReader(f, int64(len(want))), bufSize}, 1<<40))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("buffer %d: read %d bytes (err %v), want %d equal", bufSize, len(got), err, len(want))
				}
			}
			f.Close()
		})
	}
}

// bufReader reads at most n bytes per call.
type bufReader struct {
	r io.Reader
	n int
}

func (b bufReader) Read(p []byte) (int, error) {
	if len(p) > b.n {
		p = p[:b.n]
	}
	return b.r.Read(p)
}
