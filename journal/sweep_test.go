package journal

import (
	"bytes"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// TestSweep: blobs a layer or the stat cache refers to stay, with every
// chunk they need (also one an unreferenced blob shares); the rest go; a
// dry run only counts; the journal verifies after; usage counts sharing.
func TestSweep(t *testing.T) {
	j := openTest(t)
	shared := randomBytes(ChunkSize) // the first chunk of two blobs
	keptBig := append(bytes.Clone(shared), randomBytes(100)...)
	goneBig := append(bytes.Clone(shared), randomBytes(200)...)
	put := func(b []byte) BlobRef {
		r, err := j.PutBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kept, big, gone, goneBigRef, stat := put([]byte("kept")), put(keptBig), put([]byte("gone")), put(goneBig), put([]byte("stat"))
	file := func(r BlobRef) NodeState { return NodeState{Kind: File, Mode: 0o644, Size: r.Size, Blob: r} }
	changes := []Change{
		{Path: "a", Before: file(kept), After: file(big)},
		{Path: "b", Before: NodeState{}, After: file(kept)},
	}
	if err := j.PutChanges(1, changes); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := j.Update(func(tx *Tx) error {
		return tx.PutTask(tasks.Task{ID: 1, Summary: "one", Kind: tasks.KindAgent, Created: now, Ended: now, Files: 2})
	}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutStats(map[string]StatEntry{"s": {Kind: File, Size: stat.Size, Mode: 0o644, Blob: stat}}, nil); err != nil {
		t.Fatal(err)
	}
	u, err := j.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Blobs != 5 || u.Unreferenced != 2 || u.References != 4 || u.SharedBlobs != 1 || u.Tasks != 1 {
		t.Fatalf("usage before the sweep: %+v", u)
	}
	if n, err := j.StoredBytes(); err != nil || n != u.StoredBytes {
		t.Fatalf("StoredBytes %d (%v), usage says %d", n, err, u.StoredBytes)
	}
	if len(u.PerSession) != 1 || u.PerSession[0].Changes != 2 || u.PerSession[0].Blobs != 2 {
		t.Fatalf("per session: %+v", u.PerSession)
	}
	dry, err := j.Sweep(true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Blobs != 2 || dry.Chunks != 2 { // "gone", and goneBig's own last chunk
		t.Fatalf("dry sweep: %+v", dry)
	}
	if n := countPrefix(t, j, prefixBlob); n != 5 {
		t.Fatalf("a dry sweep deleted blobs: %d left", n)
	}
	rep, err := j.Sweep(false)
	if err != nil {
		t.Fatal(err)
	}
	if rep != dry {
		t.Fatalf("sweep %+v, dry run said %+v", rep, dry)
	}
	for _, r := range []BlobRef{kept, big, stat} {
		if _, err := j.ReadBlob(r); err != nil {
			t.Fatalf("kept blob %s: %v", r, err)
		}
	}
	for _, r := range []BlobRef{gone, goneBigRef} {
		if ok, err := j.HasBlob(r); err != nil || ok {
			t.Fatalf("blob %s still there (%v)", r, err)
		}
	}
	if damage, err := j.Verify(nil); err != nil || len(damage) > 0 {
		t.Fatalf("verify after the sweep: %v %v", damage, err)
	}
	// Content put again after the sweep is stored again (the zero-chunk
	// and dedupe shortcuts do not remember swept chunks).
	if r := put(goneBig); r != goneBigRef {
		t.Fatalf("stored again as %s, want %s", r, goneBigRef)
	}
	if b, err := j.ReadBlob(goneBigRef); err != nil || !bytes.Equal(b, goneBig) {
		t.Fatalf("read back after storing again: %v", err)
	}
	if _, err := j.ReclaimSpace(0.5); err != nil {
		t.Fatal(err)
	}
	if b, err := j.ReadBlob(big); err != nil || !bytes.Equal(b, keptBig) {
		t.Fatalf("read after reclaiming space: %v", err)
	}
}

// TestVerifyAcceptsGCInProgress: while a gc plan names a task, its layer
// may disagree with its record and its parent may be gone; without the
// plan the same state is damage.
func TestVerifyAcceptsGCInProgress(t *testing.T) {
	j := openTest(t)
	now := time.Now()
	r, err := j.PutBytes([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.PutChanges(2, []Change{{Path: "a", After: NodeState{Kind: File, Mode: 0o644, Size: 1, Blob: r}}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Update(func(tx *Tx) error {
		return tx.PutTask(tasks.Task{ID: 2, Parent: 1, Kind: tasks.KindAgent, Created: now, Ended: now, Files: 3})
	}); err != nil {
		t.Fatal(err)
	}
	damage, err := j.Verify(nil)
	if err != nil || len(damage) != 2 {
		t.Fatalf("without a plan: %v %v", damage, err)
	}
	if err := j.PutStaged(2, []Change{{Path: "b", After: NodeState{Kind: File, Mode: 0o644, Size: 1, Blob: r}}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Update(func(tx *Tx) error {
		return tx.PutGCPlan(GCPlan{Phase: GCSwitch, Drop: []tasks.ID{1}, Rewire: []Rewire{{ID: 2}}})
	}); err != nil {
		t.Fatal(err)
	}
	if damage, err := j.Verify(nil); err != nil || len(damage) > 0 {
		t.Fatalf("with the plan: %v %v", damage, err)
	}
	staged, ok, err := j.Staged(2)
	if err != nil || !ok || len(staged) != 1 || staged[0].Path != "b" {
		t.Fatalf("staged layer: %v %v %v", staged, ok, err)
	}
	task, _ := j.Task(2)
	task.Parent = 0
	if err := j.SwitchLayer(task, staged); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := j.Staged(2); ok || countPrefix(t, j, prefixStaged) != 0 {
		t.Fatal("the staged layer is left after the switch")
	}
	layer, err := j.Layer(2)
	if err != nil || len(layer) != 1 || layer[0].Path != "b" {
		t.Fatalf("layer after the switch: %v %v", layer, err)
	}
	if err := j.Update(func(tx *Tx) error { return tx.DeleteGCPlan() }); err != nil {
		t.Fatal(err)
	}
	if damage, err := j.Verify(nil); err != nil || len(damage) > 0 {
		t.Fatalf("after the switch: %v %v", damage, err)
	}
}
