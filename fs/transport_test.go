//go:build linux

package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// forEachTransport runs test once over FUSE over io_uring and once over
// /dev/fuse reads. The io_uring run is skipped, saying why, only where the
// kernel cannot do it (make test turns the fuse module's enable_uring on
// where it can).
func forEachTransport(t *testing.T, test func(t *testing.T)) {
	t.Run("io_uring", func(t *testing.T) {
		if err := uringUsable(); err != nil {
			t.Skipf("not run: %v", err)
		}
		test(t)
	})
	t.Run("dev-fuse", func(t *testing.T) {
		devFuseOnly = true
		defer func() { devFuseOnly = false }()
		test(t)
	})
}

// forEachServing runs test over both transports (forEachTransport), then
// once more with passthrough declined, as an older kernel or a user who is
// not root would have it.
func forEachServing(t *testing.T, test func(t *testing.T)) {
	forEachTransport(t, test)
	t.Run("no-passthrough", func(t *testing.T) {
		noPassthrough = true
		defer func() { noPassthrough = false }()
		test(t)
	})
}

// The overlay serves through io_uring wherever the kernel allows it, and
// through /dev/fuse otherwise; both carry concurrent requests from both
// CPUs and stop cleanly at unmount while requests are still coming.
func TestTransport(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		o, cleanup := setupOverlay(t, fillSample)
		defer cleanup()
		want := "/dev/fuse"
		if !devFuseOnly {
			want = "io_uring"
		}
		if got := o.Transport(); got != want {
			t.Fatalf("transport %s, want %s", got, want)
		}
		// Parallel writers and readers, spread over the CPUs.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var set unix.CPUSet
				set.Set(w % 2)
				unix.SchedSetaffinity(0, &set) // best effort: this goroutine's thread
				dir := filepath.Join(o.root, fmt.Sprintf("w%d", w))
				if err := os.Mkdir(dir, 0o755); err != nil {
					errs <- err
					return
				}
				for i := 0; i < 200; i++ {
					p := filepath.Join(dir, fmt.Sprintf("f%d", i))
					data := strings.Repeat(fmt.Sprintf("%d-%d ", w, i), 1+i%300)
					if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
						errs <- err
						return
					}
					if got, err := os.ReadFile(p); err != nil || string(got) != data {
						errs <- fmt.Errorf("%s: read back %d bytes, err %v", p, len(got), err)
						return
					}
				}
				ents, err := os.ReadDir(dir)
				if err != nil || len(ents) != 200 {
					errs <- fmt.Errorf("%s: %d entries, err %v", dir, len(ents), err)
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// A large write and read: payloads of the largest request size.
		big := make([]byte, 5<<20+123)
		for i := range big {
			big[i] = byte(i * 7)
		}
		p := filepath.Join(o.root, "big.bin")
		if err := os.WriteFile(p, big, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != string(big) {
			t.Fatalf("big file read back %d bytes, err %v", len(got), err)
		}
		// Unmount while a reader keeps asking.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var st unix.Statfs_t
				unix.Statfs(o.root, &st)
			}
		}()
		if err := o.Unmount(); err != nil {
			t.Fatalf("unmount under load: %v", err)
		}
		close(stop)
		<-done
		if got := readFile(t, filepath.Join(o.root, "top.txt")); got != "top\n" {
			t.Fatalf("root after unmount reads %q", got)
		}
	})
}

// Directories are read without OPENDIR (dirReads): long listings that take
// several requests, readers that stop halfway, rewinds, concurrent readers
// and fsync of a directory all behave as on a local filesystem, and a
// listing always shows the directory's changes.
func TestDirReads(t *testing.T) {
	o := mountTest(t, fillSample)
	dir := filepath.Join(o.root, "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := 0; i < 1500; i++ {
		name := fmt.Sprintf("a-rather-long-file-name-to-fill-the-buffers-%04d", i)
		want[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := func() map[string]bool {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, e := range ents {
			got[e.Name()] = true
		}
		return got
	}
	same := func(what string, got map[string]bool) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
		}
		for n := range want {
			if !got[n] {
				t.Fatalf("%s: %s missing", what, n)
			}
		}
	}
	same("first listing", list())

	// A reader that stops halfway, then changes, then a full listing.
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names, err := f.Readdirnames(10); err != nil || len(names) != 10 {
		t.Fatalf("partial read: %v %v", names, err)
	}
	f.Close()
	if err := os.Remove(filepath.Join(dir, "a-rather-long-file-name-to-fill-the-buffers-0007")); err != nil {
		t.Fatal(err)
	}
	delete(want, "a-rather-long-file-name-to-fill-the-buffers-0007")
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want["new"] = true
	same("after a remove and a create", list())

	// Rewind an open directory and read it again.
	f, err = os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := f.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	again, err := f.Readdirnames(-1)
	if err != nil || len(again) != len(first) {
		t.Fatalf("after rewind: %d names (err %v), first read %d", len(again), err, len(first))
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync of a directory: %v", err)
	}
	f.Close()

	// Concurrent readers while the directory changes; then it settles.
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := os.ReadDir(dir); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("late-%d", i)
		want[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	same("after concurrent reads and creates", list())
}
