package journal

import (
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

// healthyJournal fills a journal with one of every record kind.
func healthyJournal(t *testing.T) (*Journal, BlobRef) {
	t.Helper()
	j := openTest(t)
	small, err := j.PutBytes([]byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	big, err := j.PutBytes(compressible(2*ChunkSize + 7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.PutBytes(nil); err != nil {
		t.Fatal(err)
	}
	file := NodeState{Kind: File, Mode: 0o644, Size: big.Size, Blob: big}
	if err := j.PutChanges(1, []Change{{Path: "a", After: file}, {Path: "b", Before: NodeState{Kind: File, Size: 6, Blob: small}}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutStats(map[string]StatEntry{"a": {Kind: File, Size: big.Size, Blob: big}, "d": {Kind: Dir}}, nil); err != nil {
		t.Fatal(err)
	}
	err = j.Update(func(tx *Tx) error {
		id, err := tx.NextSessionID()
		if err != nil {
			return err
		}
		for _, f := range []func() error{
			func() error { return tx.PutSession(Session{ID: id, Tasks: []tasks.ID{1}}) },
			func() error { return tx.PutTask(tasks.Task{ID: 1, Session: id}) },
			func() error { return tx.PutTask(tasks.Task{ID: 2, Parent: 1}) },
			func() error { return tx.SetState(State{Active: 2, Applied: 2, Current: 2}) },
			func() error { return tx.PutIntent(Intent{From: 1, To: 2}) },
			func() error { return tx.PutAction(Action{Session: id, Seq: 1}) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return j, big
}

func TestVerifyHealthy(t *testing.T) {
	j, _ := healthyJournal(t)
	var calls, lastDone, lastTotal int
	damage, err := j.Verify(func(done, total int) { calls++; lastDone, lastTotal = done, total })
	if err != nil || len(damage) != 0 {
		t.Fatalf("healthy journal: %v %v", damage, err)
	}
	if calls == 0 || lastDone != lastTotal || lastTotal == 0 {
		t.Errorf("progress: %d calls, last %d/%d", calls, lastDone, lastTotal)
	}
}

func TestVerifyFindsDamage(t *testing.T) {
	cases := []struct {
		name string
		key  func(big BlobRef) []byte
		val  []byte
		want string
	}{
		{"task json", func(BlobRef) []byte { return taskKey(1) }, []byte("{not json"), "task 1"},
		{"task id mismatch", func(BlobRef) []byte { return taskKey(1) }, []byte(`{"id":9}`), "record holds task 9"},
		{"missing parent", func(BlobRef) []byte { return taskKey(5) }, []byte(`{"id":5,"parent":4}`), "parent task 4 missing"},
		{"layer", func(BlobRef) []byte { return layerKey(1, "a") }, []byte{9, 9}, `layer 1 "a"`},
		{"stat", func(BlobRef) []byte { return statKey("a") }, []byte{1}, `stat "a"`},
		{"state", func(BlobRef) []byte { return keyState }, []byte("[]"), "state"},
		{"state task", func(BlobRef) []byte { return keyState }, []byte(`{"Active":77}`), "task 77 missing"},
		{"session counter", func(BlobRef) []byte { return keySessionSeq }, []byte{1}, "session counter"},
		{"blob list", func(b BlobRef) []byte { return blobKey(b) }, []byte{formatV1, 1}, "chunk count 1 exceeds"},
		{"blob size", func(b BlobRef) []byte { return blobKey(b) }, encodeChunkList([]chunkRef{{Hash: 1, Len: 5}}), "bytes, blob is"},
		{"dangling blob ref", func(BlobRef) []byte { return layerKey(3, "x") },
			encodeChange(Change{After: NodeState{Kind: File, Blob: BlobRef{Hash: 5, Size: 5}}}), "referenced by layer 3"},
		{"unknown kind", func(BlobRef) []byte { return []byte("zzz") }, []byte("x"), "unknown record kind"},
		{"root", func(BlobRef) []byte { return keyRoot }, []byte("/elsewhere"), "root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, big := healthyJournal(t)
			if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(c.key(big), c.val) }); err != nil {
				t.Fatal(err)
			}
			damage, err := j.Verify(nil)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			found := false
			for _, d := range damage {
				all = append(all, d.String())
				if strings.Contains(d.String(), c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no damage mentions %q: %q", c.want, all)
			}
		})
	}
}

func TestVerifyMultiChunkHash(t *testing.T) {
	j, big := healthyJournal(t)
	// Swap two chunks of the big blob's list: every chunk verifies, the
	// total hash does not.
	list, err := j.chunkList(big)
	if err != nil {
		t.Fatal(err)
	}
	list[0], list[1] = list[1], list[0]
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(blobKey(big), encodeChunkList(list)) }); err != nil {
		t.Fatal(err)
	}
	damage, err := j.Verify(nil)
	if err != nil || len(damage) != 1 || !strings.Contains(damage[0].Detail, "content hash") {
		t.Fatalf("%v %v", damage, err)
	}
	var w countingWriter
	if err := j.WriteBlob(big, &w); err == nil {
		t.Fatal("WriteBlob of a reordered blob succeeded")
	}
}
