package cow

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/timeagent-dev/timeagent/journal"
)

// memBlobs is a content store in memory, for tests that do not need a journal.
type memBlobs struct {
	mu sync.Mutex
	m  map[BlobRef][]byte
}

func newMemBlobs() *memBlobs { return &memBlobs{m: map[BlobRef][]byte{}} }

func (b *memBlobs) PutBlob(r io.Reader) (BlobRef, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return BlobRef{}, err
	}
	ref := BlobRef{Hash: xxhash.Sum64(data), Size: int64(len(data))}
	b.mu.Lock()
	b.m[ref] = data
	b.mu.Unlock()
	return ref, nil
}

func (b *memBlobs) WriteBlob(ref BlobRef, w io.Writer) error {
	b.mu.Lock()
	data, ok := b.m[ref]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("blob %x: %w", ref.Hash, journal.ErrNotFound)
	}
	_, err := w.Write(data)
	return err
}

func (b *memBlobs) bytes(ref BlobRef) []byte {
	var buf bytes.Buffer
	_ = b.WriteBlob(ref, &buf)
	return buf.Bytes()
}

// openRoot opens dir as an os.Root closed at the end of the test.
func openRoot(t tb, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// write creates a file (and its parents) with content and mode.
func write(t tb, dir, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// states returns the node states of a manifest.
func states(m Manifest) map[string]NodeState {
	out := make(map[string]NodeState, len(m))
	for p, e := range m {
		out[p] = e.State()
	}
	return out
}

// scanStates scans root and returns its node states.
func scanStates(t tb, root *os.Root, blobs Blobs) map[string]NodeState {
	t.Helper()
	m, _, err := Scan(root, blobs, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return states(m)
}

// diffStates describes how two trees differ, "" when they are equal.
func diffStates(want, got map[string]NodeState) string {
	var b strings.Builder
	seen := map[string]bool{}
	var keys []string
	for k := range want {
		keys = append(keys, k)
		seen[k] = true
	}
	for k := range got {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, g := want[k], got[k]
		if !w.Equal(g) {
			fmt.Fprintf(&b, "%s: want %s, got %s\n", k, fmtState(w), fmtState(g))
		}
	}
	return b.String()
}

func fmtState(s NodeState) string {
	switch s.Kind {
	case fileKind:
		return fmt.Sprintf("file %v %d %x", s.Mode, s.Size, s.Blob.Hash)
	case dirKind, fifoKind:
		return fmt.Sprintf("%s %v", s.Kind, s.Mode)
	case symlinkKind:
		return fmt.Sprintf("symlink -> %q", s.Target)
	}
	return s.Kind.String()
}

// withoutAbsent drops absent states.
func withoutAbsent(m map[string]NodeState) map[string]NodeState {
	out := map[string]NodeState{}
	for p, s := range m {
		if s.Kind != absentKind {
			out[p] = s
		}
	}
	return out
}

func pathClean(p string) string { return path.Clean(p) }

func splitSlash(p string) []string { return strings.Split(p, "/") }

func fsMode(m uint32) os.FileMode { return os.FileMode(m) }

func hashString(s string) uint64 { return xxhash.Sum64String(s) }

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// tempDir makes a directory removed at the end of the test.
func tempDir(t tb) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cowtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// countReads counts file reads by scans and drift checks during the test.
func countReads(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	readHook = func(string) { n.Add(1) }
	t.Cleanup(func() { readHook = nil })
	return &n
}

// settle makes files written so far old enough to be trusted by the cache.
func settle(t *testing.T) {
	old := racyWindow
	racyWindow = 20 * time.Millisecond
	t.Cleanup(func() { racyWindow = old })
	time.Sleep(50 * time.Millisecond)
}

func mustDo(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
