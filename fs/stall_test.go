//go:build linux

package fs

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

// gatedStore is the real journal, except that storing a blob whose content
// starts with gatePrefix waits, after its first read, until release is
// closed: the copy-up or hash of that file lasts exactly as long as the
// test wants.
type gatedStore struct {
	*journal.Journal
	started chan struct{} // closed when a gated blob is being read
	once    sync.Once
	release chan struct{}
	reads   atomic.Int32 // gated blobs read
}

const gatePrefix = "GATED-CONTENT"

func (s *gatedStore) PutBlob(r io.Reader) (journal.BlobRef, error) {
	return s.Journal.PutBlob(&gatedReader{r: r, s: s})
}

type gatedReader struct {
	r       io.Reader
	s       *gatedStore
	checked bool
}

func (g *gatedReader) Read(b []byte) (int, error) {
	k, err := g.r.Read(b)
	if !g.checked && k > 0 {
		g.checked = true
		if bytes.HasPrefix(b[:k], []byte(gatePrefix)) {
			g.s.reads.Add(1)
			g.s.once.Do(func() { close(g.s.started) })
			<-g.s.release
		}
	}
	return k, err
}

// fillStall is fillSample plus big/a.bin, whose blob the gated store holds
// up, and other/b.txt, an unrelated file in another directory.
func fillStall(root string) {
	fillSample(root)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "big/dir"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "other"), 0o755))
	content := append([]byte(gatePrefix), bytes.Repeat([]byte("a"), 1<<20)...)
	must(os.WriteFile(filepath.Join(root, "big/a.bin"), content, 0o644))
	must(os.WriteFile(filepath.Join(root, "big/dir/c.bin"), content[:1000], 0o644))
	must(os.WriteFile(filepath.Join(root, "other/b.txt"), []byte("unrelated\n"), 0o644))
}

// While the content of one file is read into the journal or copied up (held
// up by the gated store), a read of an unrelated file in another process
// completes: the copy-up cannot finish before that read does, so a read
// that waits for it fails the test. A second change of the same file waits
// for the first and then sees its result.
func TestContentIOOutsideLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(root string) error // the change of big/a.bin that reads its content
		same func(root string) error // a second change of the same path, run meanwhile
		want string                  // big/a.bin afterwards ("" = absent)
		// reads is how often the gated content is read in all (0: not
		// checked): a second change of the path reads nothing again.
		reads int32
	}{
		{"rm (before-state hash)", func(root string) error {
			return os.Remove(filepath.Join(root, "big/a.bin"))
		}, func(root string) error {
			err := os.Remove(filepath.Join(root, "big/a.bin"))
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}, "", 1},
		{"open for writing (copy-up)", func(root string) error {
			return appendTo(filepath.Join(root, "big/a.bin"), "+1")
		}, func(root string) error {
			return appendTo(filepath.Join(root, "big/a.bin"), "+1")
		}, "+1+1", 0},
		{"chmod (copy-up)", func(root string) error {
			return os.Chmod(filepath.Join(root, "big/a.bin"), 0o600)
		}, func(root string) error {
			return appendTo(filepath.Join(root, "big/a.bin"), "+1")
		}, "+1", 0},
		{"touch (copy-up; new times keep the content's blob)", func(root string) error {
			return os.Chtimes(filepath.Join(root, "big/a.bin"), time.Unix(1e9, 0), time.Unix(1e9, 0))
		}, func(root string) error {
			return os.Chtimes(filepath.Join(root, "big/a.bin"), time.Unix(2e9, 0), time.Unix(2e9, 0))
		}, "", 1},
		{"rename of its directory (copy-up of a subtree)", func(root string) error {
			return os.Rename(filepath.Join(root, "big"), filepath.Join(root, "moved"))
		}, func(root string) error {
			err := os.Chmod(filepath.Join(root, "big/a.bin"), 0o600)
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := &gatedStore{started: make(chan struct{}), release: make(chan struct{})}
			o, cleanup := setupOverlayStore(t, fillStall, func(j *journal.Journal) store {
				gs.Journal = j
				return gs
			})
			defer cleanup()
			released := false
			release := func() {
				if !released {
					released = true
					close(gs.release)
				}
			}
			defer release()
			// The kernel knows other/b.txt already: a lookup in the root
			// would wait for a rename's lock on the root in the kernel.
			if _, err := os.Stat(filepath.Join(o.root, "other/b.txt")); err != nil {
				t.Fatal(err)
			}
			opDone := make(chan error, 2)
			go func() { opDone <- tc.op(o.root) }()
			select {
			case <-gs.started:
			case err := <-opDone:
				t.Fatalf("the change finished without reading the gated content: %v", err)
			case <-time.After(60 * time.Second):
				t.Fatal("the gated content was never read")
			}
			// The same path again: it must wait for the first (no second
			// read of the content starts), and must not hold up the read.
			go func() { opDone <- tc.same(o.root) }()
			// A read of an unrelated file from another process, while the
			// first change cannot finish. Generous: on a loaded machine a
			// cat takes well under a second; the gate never opens by itself.
			cat := exec.Command("cat", filepath.Join(o.root, "other/b.txt"))
			var out bytes.Buffer
			cat.Stdout, cat.Stderr = &out, &out
			if err := cat.Start(); err != nil {
				t.Fatal(err)
			}
			catDone := make(chan error, 1)
			go func() { catDone <- cat.Wait() }()
			select {
			case err := <-catDone:
				if err != nil || out.String() != "unrelated\n" {
					t.Fatalf("read of an unrelated file: %q, %v", out.String(), err)
				}
			case <-time.After(30 * time.Second):
				// A FUSE request the server has read cannot be killed:
				// open the gate, so the read (and the test) can end.
				release()
				<-catDone
				t.Fatalf("a read of an unrelated file waited for the content of big/a.bin to be read")
			}
			release()
			for i := 0; i < 2; i++ {
				if err := <-opDone; err != nil {
					t.Fatal(err)
				}
			}
			if n := gs.reads.Load(); tc.reads != 0 && n != tc.reads {
				t.Errorf("the gated content was read %d times, want %d", n, tc.reads)
			}
			if strings.HasPrefix(tc.name, "touch") {
				return
			}
			got, err := os.ReadFile(filepath.Join(o.root, "big/a.bin"))
			if tc.want == "" {
				if !os.IsNotExist(err) {
					t.Fatalf("big/a.bin: %v, want absent", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte(gatePrefix)) || !bytes.HasSuffix(got, []byte("a"+tc.want)) || len(got) != len(gatePrefix)+1<<20+len(tc.want) {
				t.Fatalf("big/a.bin: %d bytes ending %q, want the lower content and %q", len(got), got[len(got)-8:], tc.want)
			}
		})
	}
}

func appendTo(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
