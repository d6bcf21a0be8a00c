//go:build linux

package fs

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// syncedStore is the real journal, noting which paths have records that
// no Sync has made durable yet.
type syncedStore struct {
	*journal.Journal
	mu       sync.Mutex
	unsynced map[string]bool
}

func (s *syncedStore) PutChanges(id tasks.ID, changes []journal.Change) error {
	err := s.Journal.PutChanges(id, changes)
	s.mu.Lock()
	for _, c := range changes {
		s.unsynced[c.Path] = true
	}
	s.mu.Unlock()
	return err
}

func (s *syncedStore) DeleteChanges(id tasks.ID, paths []string) error {
	err := s.Journal.DeleteChanges(id, paths)
	s.mu.Lock()
	for _, p := range paths {
		s.unsynced[p] = true
	}
	s.mu.Unlock()
	return err
}

func (s *syncedStore) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.Journal.Sync()
	if err == nil {
		clear(s.unsynced)
	}
	return err
}

func (s *syncedStore) isUnsynced(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unsynced[p]
}

// fsync and fdatasync of a file (through any of its descriptors) and fsync
// of a directory return only when what they cover is recorded and the
// journal is synced, so it survives a power cut, not only a kill.
func TestFsyncIsDurable(t *testing.T) {
	sync := func(f *os.File) error { return unix.Fsync(int(f.Fd())) }
	datasync := func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
	for _, tc := range []struct {
		name string
		// do changes the view and syncs it, returning the path whose
		// record must be durable and the content it must have.
		do func(t *testing.T, root string) (string, string)
	}{
		{"fsync of the writer", func(t *testing.T, root string) (string, string) {
			f := create(t, filepath.Join(root, "new.txt"))
			write(t, f, "fsync'd")
			mustDo(t, sync(f))
			return "new.txt", "fsync'd"
		}},
		{"fdatasync of a lower file", func(t *testing.T, root string) (string, string) {
			f, err := os.OpenFile(filepath.Join(root, "lower/a.txt"), os.O_WRONLY|os.O_APPEND, 0)
			mustDo(t, err)
			t.Cleanup(func() { f.Close() })
			write(t, f, "more")
			mustDo(t, datasync(f))
			return "lower/a.txt", "hello lower\nmore"
		}},
		{"fsync of a reader while another descriptor writes", func(t *testing.T, root string) (string, string) {
			p := filepath.Join(root, "shared.txt")
			w := create(t, p)
			write(t, w, "from the writer")
			r, err := os.Open(p)
			mustDo(t, err)
			t.Cleanup(func() { r.Close() })
			mustDo(t, sync(r))
			return "shared.txt", "from the writer"
		}},
		{"fsync of a directory after a rename", func(t *testing.T, root string) (string, string) {
			mustDo(t, os.Rename(filepath.Join(root, "top.txt"), filepath.Join(root, "renamed.txt")))
			d, err := os.Open(root)
			mustDo(t, err)
			defer d.Close()
			mustDo(t, sync(d))
			return "renamed.txt", "top\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *syncedStore
			o, cleanup := setupOverlayStore(t, fillSample, func(j *journal.Journal) store {
				s = &syncedStore{Journal: j, unsynced: map[string]bool{}}
				return s
			})
			// Registered first, so it runs last: the files the case opened
			// are closed before the unmount.
			t.Cleanup(cleanup)
			p, want := tc.do(t, o.root)
			// Read the record before anything else can record or sync.
			if s.isUnsynced(p) {
				t.Errorf("%s: the sync returned before the journal was synced", p)
			}
			c, ok, err := o.j.LayerChange(1, p)
			if err != nil || !ok {
				t.Fatalf("%s: no record after the sync (ok=%v, err=%v)", p, ok, err)
			}
			if got := blob(t, o.j, c.After); got != want {
				t.Errorf("%s: recorded %q, want %q", p, got, want)
			}
		})
	}
}

func create(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Create(p)
	mustDo(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func write(t *testing.T, f *os.File, s string) {
	t.Helper()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
