package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func TestTimingBreakdown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	j, _ := Open(dir, "/r")
	j.Close()
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		db, err := badger.Open(badgerOptions(dir))
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		db.Close()
		t2 := time.Now()
		t.Logf("open %v close %v", t1.Sub(t0), t2.Sub(t1))
	}
}
