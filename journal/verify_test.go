package journal

import (
	"fmt"
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
		{"layer records lost", func(BlobRef) []byte { return taskKey(1) },
			[]byte(`{"id":1,"ended":"2026-01-01T00:00:00Z","files":3}`), "holds 2 paths but it was sealed with 3"},
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

// TestVerifyLocatesDamage: every damage names, where the key or the
// references allow it, the task, session and path it concerns; damaged or
// missing content lists every record that uses it.
func TestVerifyLocatesDamage(t *testing.T) {
	cases := []struct {
		name    string
		key     []byte
		val     []byte
		kind    string
		task    tasks.ID
		session uint64
		path    string
		usedBy  []BlobUse
	}{
		{name: "layer value", key: layerKey(1, "dir/b c"), val: []byte{9, 9}, kind: "layer", task: 1, path: "dir/b c"},
		{name: "stat value", key: statKey("dir/x"), val: []byte{1}, kind: "stat", path: "dir/x"},
		{name: "task value", key: taskKey(2), val: []byte("{"), kind: "task", task: 2},
		{name: "session value", key: sessionKey(1), val: []byte("["), kind: "session", session: 1},
		{name: "action value", key: actionKey(1, 1), val: []byte("x"), kind: "action", session: 1},
		{name: "intent value", key: keyIntent, val: []byte("x"), kind: "intent"},
		{name: "intent task", key: keyIntent, val: []byte(`{"from":2,"to":9}`), kind: "intent"},
		{name: "missing blob", key: layerKey(3, "x"),
			val:  encodeChange(Change{Before: NodeState{Kind: File, Blob: BlobRef{Hash: 5, Size: 5}}, After: NodeState{Kind: File, Blob: BlobRef{Hash: 5, Size: 5}}}),
			kind: "blob", usedBy: []BlobUse{{In: UseAfter, Task: 3, Path: "x"}, {In: UseBefore, Task: 3, Path: "x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, _ := healthyJournal(t)
			if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(c.key, c.val) }); err != nil {
				t.Fatal(err)
			}
			damage, err := j.Verify(nil)
			if err != nil || len(damage) == 0 {
				t.Fatalf("Verify = %+v, %v; want damage", damage, err)
			}
			var d Damage
			for _, x := range damage {
				if x.Kind == c.kind {
					d = x // (a damaged task also leaves references to it dangling)
				}
			}
			if d.Kind != c.kind || d.Task != c.task || d.Session != c.session || d.Path != c.path || fmt.Sprint(d.UsedBy) != fmt.Sprint(c.usedBy) {
				t.Errorf("damage %+v; want kind %s task %d session %d path %q used by %v", d, c.kind, c.task, c.session, c.path, c.usedBy)
			}
		})
	}
}

// TestVerifyDamagedChunkUses: a damaged chunk is reported once, with every
// layer change and stat entry whose content contains it.
func TestVerifyDamagedChunkUses(t *testing.T) {
	j, big := healthyJournal(t)
	data := compressible(2*ChunkSize + 7)
	damageChunk(t, j, data[ChunkSize:2*ChunkSize], func(v []byte) []byte { v[len(v)/2] ^= 0xff; return v })
	damage, err := j.Verify(nil)
	if err != nil || len(damage) != 1 || damage[0].Kind != "chunk" {
		t.Fatalf("Verify = %+v, %v; want the chunk", damage, err)
	}
	want := []BlobUse{{In: UseStat, Path: "a"}, {In: UseAfter, Task: 1, Path: "a"}}
	if got := damage[0].UsedBy; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("chunk of blob %s used by %v, want %v", big, got, want)
	}
	ids, paths := damage[0].Affected()
	if fmt.Sprint(ids) != "[1]" || fmt.Sprint(paths) != "[a]" {
		t.Errorf("affected %v %v", ids, paths)
	}
}

// TestVerifyNeededByApply: damaged content that the unfinished apply
// restores is marked; content it does not restore is not.
func TestVerifyNeededByApply(t *testing.T) {
	j, _ := healthyJournal(t) // tasks 1 and 2 (child of 1), intent 1 -> 2
	needed, other := BlobRef{Hash: 7, Size: 7}, BlobRef{Hash: 8, Size: 8}
	if err := j.PutChanges(2, []Change{{Path: "c", After: NodeState{Kind: File, Size: 7, Blob: needed}}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutChanges(1, []Change{{Path: "d", Before: NodeState{Kind: File, Size: 8, Blob: other}}}); err != nil {
		t.Fatal(err)
	}
	damage, err := j.Verify(nil)
	if err != nil || len(damage) != 2 {
		t.Fatalf("Verify = %+v, %v", damage, err)
	}
	for _, d := range damage {
		want := d.Key == "blob "+needed.String()
		if d.NeededByApply != want {
			t.Errorf("%s (used by %v): needed by the apply %v, want %v", d, d.UsedBy, d.NeededByApply, want)
		}
	}
}

// TestVerifyTags: a tag naming a task that exists is healthy; one naming a
// missing task is damage that says which task and how to remove the tag.
func TestVerifyTags(t *testing.T) {
	j, _ := healthyJournal(t)
	err := j.Update(func(tx *Tx) error {
		if err := tx.PutTag("good", 2); err != nil {
			return err
		}
		return tx.PutTag("stale", 9)
	})
	if err != nil {
		t.Fatal(err)
	}
	tags, err := j.Tags()
	if err != nil || len(tags) != 2 || tags["good"] != 2 || tags["stale"] != 9 {
		t.Fatalf("Tags() = %v, %v", tags, err)
	}
	damage, err := j.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(damage) != 1 || damage[0].Kind != "tag" || !strings.Contains(damage[0].String(), "stale") || !strings.Contains(damage[0].Detail, "task 9") {
		t.Fatalf("damage: %v", damage)
	}
}
