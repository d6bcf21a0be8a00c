package journal

import (
	"bytes"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"
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

// journalOnDisk writes a closed journal holding three tasks: task 1 creates
// src/big.bin (bigContent, random, so stored raw in a value log), task 2
// modifies it and creates small.txt; the stat cache has the last state.
func journalOnDisk(t *testing.T) (dir string, bigContent []byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	bigContent = randomBytes(64 << 10)
	big, err := j.PutBytes(bigContent)
	if err != nil {
		t.Fatal(err)
	}
	big2, err := j.PutBytes(randomBytes(64 << 10))
	if err != nil {
		t.Fatal(err)
	}
	small, err := j.PutBytes([]byte("small\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := func(r BlobRef) NodeState { return NodeState{Kind: File, Mode: 0o644, Size: r.Size, Blob: r} }
	if err := j.PutChanges(1, []Change{{Path: "src/big.bin", After: file(big)}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutChanges(2, []Change{{Path: "src/big.bin", Before: file(big), After: file(big2)}, {Path: "small.txt", After: file(small)}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutStats(map[string]StatEntry{"src/big.bin": {Kind: File, Size: big2.Size, Blob: big2}}, nil); err != nil {
		t.Fatal(err)
	}
	err = j.Update(func(tx *Tx) error {
		if err := tx.PutTask(tasks.Task{ID: 1}); err != nil {
			return err
		}
		if err := tx.PutTask(tasks.Task{ID: 2, Parent: 1}); err != nil {
			return err
		}
		return tx.SetState(State{Active: 2, Applied: 2, Current: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, bigContent
}

// TestVerifyFlippedValueLog flips bytes of one blob's content inside the
// value log on disk: Verify reports it with the task and path of every
// change that uses it, and the other records stay readable.
func TestVerifyFlippedValueLog(t *testing.T) {
	dir, content := journalOnDisk(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	flipped := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, content[1000:1064]); i >= 0 {
			b[i+7] ^= 0x55
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatal("the content is in no value log")
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	damage, err := j.Verify(nil)
	if err != nil || len(damage) == 0 {
		t.Fatalf("Verify = %v, %v; want damage", damage, err)
	}
	// Badger drops the value log from the damaged entry on: the flipped
	// content and what was written after it are lost.
	want := fmt.Sprint([]BlobUse{{In: UseAfter, Task: 1, Path: "src/big.bin"}, {In: UseBefore, Task: 2, Path: "src/big.bin"}})
	found := false
	for _, d := range damage {
		t.Log(d, d.UsedBy)
		if d.Kind == "chunk" && fmt.Sprint(d.UsedBy) == want {
			found = true
		}
	}
	if !found {
		t.Errorf("no damaged chunk used by %v", want)
	}
	if _, err := j.Layer(2); err != nil {
		t.Errorf("layer 2: %v", err)
	}
}

// TestVerifyTruncatedValueLog truncates the value log: opening either
// fails with ErrCorrupt or Verify reports damage naming tasks or paths;
// nothing panics.
func TestVerifyTruncatedValueLog(t *testing.T) {
	dir, _ := journalOnDisk(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 1024 {
			if err := os.Truncate(f, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}
	}
	j, err := Open(dir, "/r")
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open: %v, want ErrCorrupt", err)
		}
		return
	}
	defer j.Close()
	damage, err := j.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(damage) == 0 {
		t.Fatal("a truncated value log verified clean")
	}
	located := false
	for _, d := range damage {
		t.Log(d, d.UsedBy)
		if ids, paths := d.Affected(); len(ids) > 0 && len(paths) > 0 {
			located = true
		}
	}
	if !located {
		t.Error("no damage names a task and a path")
	}
}
