//go:build linux

package fs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// memStore is an in-memory journal used until the journal package is done.
type memStore struct {
	mu     sync.Mutex
	blobs  map[journal.BlobRef][]byte
	layers map[tasks.ID]map[string]journal.Change
}

func newMemStore() *memStore {
	return &memStore{blobs: map[journal.BlobRef][]byte{}, layers: map[tasks.ID]map[string]journal.Change{}}
}

func (m *memStore) PutBlob(r io.Reader) (journal.BlobRef, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return journal.BlobRef{}, err
	}
	ref := journal.BlobRef{Hash: xxhash.Sum64(b), Size: int64(len(b))}
	m.mu.Lock()
	m.blobs[ref] = b
	m.mu.Unlock()
	return ref, nil
}

func (m *memStore) WriteBlob(ref journal.BlobRef, w io.Writer) error {
	m.mu.Lock()
	b, ok := m.blobs[ref]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("blob %v: %w", ref, journal.ErrNotFound)
	}
	_, err := w.Write(b)
	return err
}

func (m *memStore) PutChanges(id tasks.ID, cs []journal.Change) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.layers[id]
	if l == nil {
		l = map[string]journal.Change{}
		m.layers[id] = l
	}
	for _, c := range cs {
		l[c.Path] = c
	}
	return nil
}

func (m *memStore) DeleteChanges(id tasks.ID, paths []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range paths {
		delete(m.layers[id], p)
	}
	return nil
}

func (m *memStore) LayerChange(id tasks.ID, p string) (journal.Change, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.layers[id][p]
	return c, ok, nil
}

func (m *memStore) Layer(id tasks.ID) ([]journal.Change, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []journal.Change
	for _, c := range m.layers[id] {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// testOverlay is a mounted overlay over a lower tree with content.
type testOverlay struct {
	*Overlay
	root  string
	store *memStore
}

// mountTest mounts an overlay over a fresh root filled by fill.
func mountTest(t testing.TB, fill func(root string)) *testOverlay {
	t.Helper()
	root := t.TempDir()
	staging := t.TempDir()
	if fill != nil {
		fill(root)
	}
	st := newMemStore()
	o, err := mount(Options{RootPath: root, StagingDir: staging, Task: 1, Logf: t.Logf}, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return &testOverlay{Overlay: o, root: root, store: st}
}

func writeFile(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

// fillSample makes a small realistic lower tree.
func fillSample(root string) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "lower/sub/deep"), 0o755))
	must(os.WriteFile(filepath.Join(root, "lower/a.txt"), []byte("hello lower\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "lower/sub/b.bin"), bytes.Repeat([]byte{0, 1, 2, 3}, 5000), 0o600))
	must(os.WriteFile(filepath.Join(root, "lower/sub/deep/c.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.Symlink("a.txt", filepath.Join(root, "lower/link")))
	must(os.WriteFile(filepath.Join(root, "top.txt"), []byte("top\n"), 0o644))
}
