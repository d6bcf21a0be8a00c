package sparse

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// write writes parts through a Writer into a new file and returns its
// content and allocated bytes.
func write(t *testing.T, parts [][]byte) ([]byte, int64) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f)
	for _, b := range parts {
		if n, err := w.Write(b); err != nil || n != len(b) {
			t.Fatalf("write: n=%d err=%v", n, err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return got, allocated(t, p)
}

func TestWriter(t *testing.T) {
	data := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	zeros := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name     string
		parts    [][]byte
		maxAlloc int64 // allocated bytes at most
	}{
		{"empty", nil, 0},
		{"small data", [][]byte{data(10, 'a')}, 1 << 20},
		{"only zeros", [][]byte{zeros(8 << 20)}, 0},
		{"trailing hole", [][]byte{data(BlockSize, 'a'), zeros(4 << 20)}, 1 << 20},
		{"leading hole", [][]byte{zeros(4 << 20), data(100, 'b')}, 1 << 20},
		{"hole between", [][]byte{data(5000, 'a'), zeros(6 << 20), data(7000, 'c')}, 2 << 20},
		{"unaligned zeros are data", [][]byte{data(1, 'a'), zeros(BlockSize - 2), data(1, 'z')}, 1 << 20},
		{"zeros split across writes", [][]byte{data(100, 'a'), zeros(3000), zeros(4 << 20), data(3, 'q')}, 2 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, alloc := write(t, c.parts)
			if want := bytes.Join(c.parts, nil); !bytes.Equal(got, want) {
				t.Fatalf("content differs: got %d bytes, want %d", len(got), len(want))
			}
			if alloc > c.maxAlloc {
				t.Fatalf("allocated %d bytes, want at most %d", alloc, c.maxAlloc)
			}
		})
	}
}

// TestWriterRandom: any split of content mixing zero runs and data reads
// back the same.
func TestWriterRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 50; round++ {
		var want []byte
		for len(want) < 1<<20 {
			n := rng.Intn(3 * BlockSize)
			if rng.Intn(2) == 0 {
				want = append(want, make([]byte, n)...)
			} else {
				b := make([]byte, n)
				rng.Read(b)
				want = append(want, b...)
			}
		}
		var parts [][]byte
		for rest := want; len(rest) > 0; {
			n := 1 + rng.Intn(2*BlockSize)
			if n > len(rest) {
				n = len(rest)
			}
			parts = append(parts, rest[:n])
			rest = rest[n:]
		}
		if got, _ := write(t, parts); !bytes.Equal(got, want) {
			t.Fatalf("round %d: content differs", round)
		}
	}
}
