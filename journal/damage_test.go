package journal

import (
	"errors"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRandomDamage flips random bytes in random files of a journal, 30
// times over (fixed seed): Open and reading everything must work or fail
// with ErrCorrupt, and never crash the process.
func TestOpenRandomDamage(t *testing.T) {
	base := journalWithData(t)
	r := mrand.New(mrand.NewPCG(7, 11))
	for i := 0; i < 30; i++ {
		dir := filepath.Join(t.TempDir(), "j")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(base, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
				t.Fatal(err)
			}
			if e.Name() != "LOCK" && len(b) > 0 {
				files = append(files, e.Name())
			}
		}
		f := filepath.Join(dir, files[r.IntN(len(files))])
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		off, n := r.IntN(len(b)), 1+r.IntN(16)
		for k := off; k < off+n && k < len(b); k++ {
			b[k] ^= byte(1 + r.IntN(255))
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		err = openAndReadAll(dir)
		t.Logf("%s@%d+%d: %v", filepath.Base(f), off, n, err)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s@%d+%d: not ErrCorrupt: %v", filepath.Base(f), off, n, err)
		}
	}
}
