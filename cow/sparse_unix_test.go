//go:build unix

package cow

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
)

// TestApplyKeepsHoles: a file that is mostly zeros (a sparse disk image)
// comes back from the journal with the same bytes and without its zero
// blocks allocated.
func TestApplyKeepsHoles(t *testing.T) {
	blobs := newMemBlobs()
	content := append(append([]byte("head"), make([]byte, 16<<20)...), "tail"...)
	ref, err := blobs.PutBlob(bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	target := map[string]NodeState{
		"disk.img": {Kind: journal.File, Mode: 0o644, Size: int64(len(content)), Blob: ref},
	}
	if _, err := Apply(openRoot(t, dst), blobs, target, nil); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "disk.img")
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("disk.img after apply: %d bytes (err %v), want the %d written", len(got), err, len(content))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if alloc := st.Blocks * 512; alloc > 1<<20 {
		t.Fatalf("disk.img allocates %d bytes for 8 data bytes: holes written out", alloc)
	}
}
