package cow

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// damageContent closes j, flips one byte of content where the journal's
// value log holds it (content must be incompressible and larger than the
// value threshold, so it is stored raw in a value log) and reopens the
// journal.
func damageContent(t *testing.T, j *journal.Journal, rootDir string, content []byte) *journal.Journal {
	t.Helper()
	dir := j.Dir()
	mustDo(t, j.Close())
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	mustDo(t, err)
	sample := content[len(content)/2 : len(content)/2+64]
	found := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		mustDo(t, err)
		if i := bytes.Index(b, sample); i >= 0 {
			b[i+10] ^= 0xff
			mustDo(t, os.WriteFile(f, b, 0o600))
			found = true
		}
	}
	if !found {
		t.Fatal("the content is in no value log")
	}
	j, err = journal.Open(dir, rootDir)
	mustDo(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

func randomContent(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestTransitionDamagedBlob: an undo that needs a damaged blob is refused
// before it changes anything: the error names the path, the task and the
// blob, the tree is unchanged, no intent and no staging file is left, and
// transitions that do not need the blob still work.
func TestTransitionDamagedBlob(t *testing.T) {
	dir := t.TempDir()
	old := randomContent(1, 64<<10)
	write(t, dir, "keep.txt", "kept\n", 0o644)
	write(t, dir, "big.bin", string(old), 0o644)
	write(t, dir, "sub/other.txt", "v0\n", 0o644)
	root := openRoot(t, dir)
	j := openJournal(t, dir)
	trees := map[tasks.ID]map[string]NodeState{0: scanStates(t, root, j)}
	id, tree := runSession(t, j, root, func() {
		write(t, dir, "big.bin", string(randomContent(2, 64<<10)), 0o644)
		write(t, dir, "sub/other.txt", "v1\n", 0o644)
		write(t, dir, "sub/new.txt", "new\n", 0o644)
	})
	trees[id] = tree
	id, tree = runSession(t, j, root, func() {
		write(t, dir, "sub/other.txt", "v2\n", 0o644)
	})
	trees[id] = tree
	ref := trees[0]["big.bin"].Blob

	j = damageContent(t, j, dir, old)
	// Undo of task 2 does not need the damaged blob.
	mustTransition(t, j, root, 1, TransitionOptions{Reason: "undo"})
	assertTree(t, root, j, trees[1])

	_, err := Transition(j, root, 0, TransitionOptions{Reason: "undo"})
	t.Logf("refused: %v", err)
	if !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("undo needing a damaged blob: err = %v, want ErrCorrupt", err)
	}
	for _, want := range []string{"big.bin", "before state in task 1", ref.String(), "nothing was changed", "undo"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	assertTree(t, root, j, trees[1]) // no staging file either
	assertState(t, j, 1, 1)          // no intent
	// Still usable: redo, and back.
	mustTransition(t, j, root, 2, TransitionOptions{Reason: "redo"})
	assertTree(t, root, j, trees[2])
	mustTransition(t, j, root, 1, TransitionOptions{Reason: "undo"})
	assertTree(t, root, j, trees[1])
}

// TestFinishStagingIntentDamaged: a crash while an apply was staging left a
// staging intent and staging files; when the blob it needs is damaged, the
// next FinishIntent cancels it: error, staging files and intent gone, tree
// and position unchanged.
func TestFinishStagingIntentDamaged(t *testing.T) {
	dir := t.TempDir()
	old := randomContent(3, 64<<10)
	write(t, dir, "big.bin", string(old), 0o644)
	root := openRoot(t, dir)
	j := openJournal(t, dir)
	trees := map[tasks.ID]map[string]NodeState{0: scanStates(t, root, j)}
	id, tree := runSession(t, j, root, func() { write(t, dir, "big.bin", "small now\n", 0o600) })
	trees[id] = tree
	j = damageContent(t, j, dir, old)
	in := journal.Intent{From: 1, To: 0, Reason: "undo", Staging: true}
	mustDo(t, j.Update(func(tx *journal.Tx) error { return tx.PutIntent(in) }))
	write(t, dir, StagingPrefix+"left-by-the-crash", "partial", 0o600)

	finished, err := FinishIntent(j, root, nil)
	if finished || !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), "big.bin") {
		t.Fatalf("FinishIntent = %v, %v; want the damaged blob of big.bin", finished, err)
	}
	assertTree(t, root, j, trees[1])
	assertState(t, j, 1, 1)
}
