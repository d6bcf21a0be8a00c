//go:build linux

package fs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func change(t *testing.T, o *testOverlay, id tasks.ID, p string) journal.Change {
	t.Helper()
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	c, ok, err := o.j.LayerChange(id, p)
	if err != nil || !ok {
		t.Fatalf("change %s in task %d: ok=%v err=%v", p, id, ok, err)
	}
	return c
}

func blob(t *testing.T, j *journal.Journal, s journal.NodeState) string {
	t.Helper()
	b, err := j.ReadBlob(s.Blob)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A reader opened before another handle copies the file up sees the new
// content (go-fuse v1 unionfs TestUnionFsDoubleOpen).
func TestDoubleOpen(t *testing.T) {
	o := mountTest(t, fillSample)
	p := filepath.Join(o.root, "lower/a.txt")
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("HELLO"), 0); err != nil {
		t.Fatal(err)
	}
	w.Close()
	buf := make([]byte, 100)
	k, _ := r.ReadAt(buf, 0)
	if got := string(buf[:k]); got != "HELLO lower\n" {
		t.Fatalf("reader sees %q", got)
	}
}

// Closing a written file puts its content into the journal at once, with the
// lower content as before.
func TestRecordOnClose(t *testing.T) {
	o := mountTest(t, fillSample)
	p := filepath.Join(o.root, "lower/a.txt")
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := change(t, o, 1, "lower/a.txt")
	if blob(t, o.j, c.Before) != "hello lower\n" || blob(t, o.j, c.After) != "new" {
		t.Fatalf("change %+v", c)
	}
	if c.After.Mode != 0o644 || c.After.Kind != journal.File {
		t.Fatalf("after %+v", c.After)
	}
	// A second change in the same task keeps the first before.
	if err := os.WriteFile(p, []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = change(t, o, 1, "lower/a.txt")
	if blob(t, o.j, c.Before) != "hello lower\n" || blob(t, o.j, c.After) != "newer" {
		t.Fatalf("change %+v", c)
	}
	// Writing the original content back drops the path from the layer.
	if err := os.WriteFile(p, []byte("hello lower\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Flush()
	if _, ok, _ := o.j.LayerChange(1, "lower/a.txt"); ok {
		t.Fatal("a path back at its before state stays in the layer")
	}
}

// TestRecordedWhenClosed: close returning means the content is in the
// journal, without waiting for the flush timer or calling Flush (a kill -9
// right after close loses nothing).
func TestRecordedWhenClosed(t *testing.T) {
	o := mountTest(t, fillSample)
	for i, c := range []struct{ path, content string }{
		{"lower/a.txt", "changed"},
		{"new.txt", "created"},
		{"new.txt", "created and changed"},
	} {
		if err := os.WriteFile(filepath.Join(o.root, c.path), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		ch, ok, err := o.j.LayerChange(1, c.path)
		if err != nil || !ok {
			t.Fatalf("step %d: %s not in the journal after close: ok=%v err=%v", i, c.path, ok, err)
		}
		if got := blob(t, o.j, ch.After); got != c.content {
			t.Fatalf("step %d: %s recorded %q, want %q", i, c.path, got, c.content)
		}
	}
	// Namespace and attribute changes are in the journal when they return.
	steps := []struct {
		do   func(string) error
		path string
		want journal.NodeKind
	}{
		{func(r string) error { return os.Rename(r+"/new.txt", r+"/moved.txt") }, "moved.txt", journal.File},
		{func(r string) error { return os.Rename(r+"/top.txt", r+"/top2.txt") }, "top.txt", journal.Absent},
		{func(r string) error { return os.Remove(r + "/lower/sub/b.bin") }, "lower/sub/b.bin", journal.Absent},
		{func(r string) error { return os.Mkdir(r+"/dir", 0o755) }, "dir", journal.Dir},
		{func(r string) error { return os.Symlink("moved.txt", r+"/link") }, "link", journal.Symlink},
		{func(r string) error { return os.Chmod(r+"/lower/a.txt", 0o600) }, "lower/a.txt", journal.File},
	}
	for i, s := range steps {
		if err := s.do(o.root); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		ch, ok, err := o.j.LayerChange(1, s.path)
		if err != nil || !ok || ch.After.Kind != s.want {
			t.Fatalf("step %d: %s in the journal right after the call: ok=%v err=%v change=%+v, want kind %v", i, s.path, ok, err, ch, s.want)
		}
	}
	if ch, _, _ := o.j.LayerChange(1, "lower/a.txt"); ch.After.Mode != 0o600 {
		t.Fatalf("chmod not recorded at once: %+v", ch.After)
	}
}

// Checkpoint with a file open for writing: the content so far goes to the
// old task, later writes to the new one with the checkpointed before.
func TestCheckpointOpenFile(t *testing.T) {
	o := mountTest(t, fillSample)
	f, err := os.Create(filepath.Join(o.root, "new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("one"))
	if err := o.Checkpoint(2); err != nil {
		t.Fatal(err)
	}
	c1 := change(t, o, 1, "new.txt")
	if c1.Before.Kind != journal.Absent || blob(t, o.j, c1.After) != "one" {
		t.Fatalf("task 1: %+v", c1)
	}
	f.Write([]byte("two"))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	c2 := change(t, o, 2, "new.txt")
	if blob(t, o.j, c2.Before) != "one" || blob(t, o.j, c2.After) != "onetwo" {
		t.Fatalf("task 2: %+v", c2)
	}
}

// A file unlinked while open stays readable and writable through its handle.
func TestUnlinkedOpenFile(t *testing.T) {
	o := mountTest(t, fillSample)
	p := filepath.Join(o.root, "lower/a.txt")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	k, _ := f.ReadAt(buf, 0)
	if string(buf[:k]) != "Xello lower\n" {
		t.Fatalf("read %q", buf[:k])
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Size != 12 {
		t.Fatalf("fstat: %v size %d", err, st.Size)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("lstat after unlink: %v", err)
	}
	f.Close()
	c := change(t, o, 1, "lower/a.txt")
	if c.After.Kind != journal.Absent || blob(t, o.j, c.Before) != "hello lower\n" {
		t.Fatalf("change %+v", c)
	}
}

// Renaming a lower directory moves every descendant, records old paths as
// absent and new paths with the lower content.
func TestRenameLowerDir(t *testing.T) {
	o := mountTest(t, fillSample)
	if err := os.Rename(filepath.Join(o.root, "lower/sub"), filepath.Join(o.root, "moved")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(o.root, "moved/deep/c.sh")); got != "#!/bin/sh\necho hi\n" {
		t.Fatalf("moved content %q", got)
	}
	if _, err := os.Lstat(filepath.Join(o.root, "lower/sub")); !os.IsNotExist(err) {
		t.Fatalf("old dir still there: %v", err)
	}
	for _, p := range []string{"lower/sub", "lower/sub/b.bin", "lower/sub/deep", "lower/sub/deep/c.sh"} {
		if c := change(t, o, 1, p); c.After.Kind != journal.Absent || c.Before.Kind == journal.Absent {
			t.Fatalf("%s: %+v", p, c)
		}
	}
	c := change(t, o, 1, "moved/deep/c.sh")
	if c.Before.Kind != journal.Absent || blob(t, o.j, c.After) != "#!/bin/sh\necho hi\n" || c.After.Mode != 0o755 {
		t.Fatalf("moved/deep/c.sh: %+v", c)
	}
	// Recreating the old name gives an empty (opaque) directory.
	if err := os.Mkdir(filepath.Join(o.root, "lower/sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(o.root, "lower/sub"))
	if err != nil || len(ents) != 0 {
		t.Fatalf("recreated dir: %v %v", ents, err)
	}
}

// rm -rf of a lower directory and recreating it hides the lower children.
func TestOpaqueDir(t *testing.T) {
	o := mountTest(t, fillSample)
	d := filepath.Join(o.root, "lower")
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Join(d, "sub")} {
		ents, err := os.ReadDir(p)
		if err != nil {
			t.Fatal(err)
		}
		if (p == d && len(ents) != 1) || (p != d && len(ents) != 0) {
			t.Fatalf("%s lists %v", p, ents)
		}
	}
	if _, err := os.Lstat(filepath.Join(d, "sub/b.bin")); !os.IsNotExist(err) {
		t.Fatalf("lower child visible: %v", err)
	}
}

func TestRenameFlags(t *testing.T) {
	o := mountTest(t, fillSample)
	a, top := filepath.Join(o.root, "lower/a.txt"), filepath.Join(o.root, "top.txt")
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, top, unix.RENAME_NOREPLACE); err != unix.EEXIST {
		t.Fatalf("noreplace: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, top, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if readFile(t, a) != "top\n" || readFile(t, top) != "hello lower\n" {
		t.Fatal("exchange did not swap")
	}
	dir, sub := filepath.Join(o.root, "lower/sub"), filepath.Join(o.root, "lower/sub/deep")
	if err := unix.Renameat2(unix.AT_FDCWD, top, unix.AT_FDCWD, sub, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("exchange file and dir: %v", err)
	}
	if readFile(t, sub) != "hello lower\n" || readFile(t, filepath.Join(top, "c.sh")) != "#!/bin/sh\necho hi\n" {
		t.Fatal("exchange file and dir did not swap")
	}
	if err := os.Rename(filepath.Join(dir, "b.bin"), a); err != nil {
		t.Fatal(err)
	}
	c := change(t, o, 1, "lower/a.txt")
	if blob(t, o.j, c.Before) != "hello lower\n" || c.After.Size != 20000 {
		t.Fatalf("rename over: %+v", c)
	}
}

func TestFifoSymlinkChmod(t *testing.T) {
	o := mountTest(t, fillSample)
	if err := syscall.Mkfifo(filepath.Join(o.root, "fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "fifo"); c.After.Kind != journal.Fifo || c.After.Mode != 0o640 {
		t.Fatalf("fifo: %+v", c)
	}
	if err := os.Symlink("x/y", filepath.Join(o.root, "sl")); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "sl"); c.After.Kind != journal.Symlink || c.After.Target != "x/y" {
		t.Fatalf("symlink: %+v", c)
	}
	if err := os.Chmod(filepath.Join(o.root, "lower/sub/deep/c.sh"), 0o700|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(o.root, "lower/sub/deep/c.sh"))
	if err != nil || fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("chmod: %v %v", fi.Mode(), err)
	}
	c := change(t, o, 1, "lower/sub/deep/c.sh")
	if c.Before.Mode != 0o755 || c.After.Mode != 0o700|os.ModeSetuid {
		t.Fatalf("chmod: %+v", c)
	}
	if err := os.Truncate(filepath.Join(o.root, "lower/sub/b.bin"), 5); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 1, "lower/sub/b.bin"); c.After.Size != 5 || c.Before.Size != 20000 {
		t.Fatalf("truncate: %+v", c)
	}
}

// SetView shows new content at once, even for files whose pages and
// attributes the kernel has cached.
func TestSetView(t *testing.T) {
	o := mountTest(t, fillSample)
	a := filepath.Join(o.root, "lower/a.txt")
	if readFile(t, a) != "hello lower\n" {
		t.Fatal("lower content")
	}
	os.Lstat(filepath.Join(o.root, "lower/gone")) // a negative entry
	ref, err := o.j.PutBytes([]byte("from the journal"))
	if err != nil {
		t.Fatal(err)
	}
	target := map[string]journal.NodeState{
		"lower/a.txt":  {Kind: journal.File, Mode: 0o600, Size: ref.Size, Blob: ref},
		"lower/gone":   {Kind: journal.Dir, Mode: 0o755},
		"lower/gone/f": {Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref},
		"lower/sub":    {Kind: journal.Absent},
		"lower/link":   {Kind: journal.Symlink, Target: "gone/f"},
		"top.txt":      {Kind: journal.Fifo, Mode: 0o600},
	}
	if err := o.SetView(target, 7); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a); got != "from the journal" {
		t.Fatalf("a.txt reads %q", got)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != ref.Size {
		t.Fatalf("a.txt attrs %v %v", fi, err)
	}
	if got := readFile(t, filepath.Join(o.root, "lower/link")); got != "from the journal" {
		t.Fatalf("link reads %q", got)
	}
	if _, err := os.Lstat(filepath.Join(o.root, "lower/sub/b.bin")); !os.IsNotExist(err) {
		t.Fatalf("removed dir: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(o.root, "top.txt")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("fifo: %v %v", fi, err)
	}
	// Later changes go to the task given.
	if err := os.WriteFile(a, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := change(t, o, 7, "lower/a.txt"); blob(t, o.j, c.Before) != "from the journal" {
		t.Fatalf("task 7: %+v", c)
	}
}

// A staging dir inside the root is refused: it would be under the mount.
func TestStagingInRoot(t *testing.T) {
	root := t.TempDir()
	j, err := journal.Open(t.TempDir(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = Mount(Options{RootPath: root, StagingDir: filepath.Join(root, ".staging"), Journal: j, Task: 1})
	if !errors.Is(err, ErrStagingInRoot) {
		t.Fatalf("mount: %v", err)
	}
}

// Unmount while a file is open detaches lazily; no dead mount stays behind.
func TestUnmountBusy(t *testing.T) {
	o, cleanup := setupOverlay(t, fillSample)
	defer cleanup()
	f, err := os.Open(filepath.Join(o.root, "lower/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := o.Unmount(); err != nil {
		t.Fatalf("second unmount: %v", err)
	}
	f.Close()
	if got := readFile(t, filepath.Join(o.root, "top.txt")); got != "top\n" {
		t.Fatalf("root after unmount reads %q", got)
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	if bytes.Contains(mounts, []byte(o.root)) {
		t.Fatal("mount still listed")
	}
}

// TestUnmountCopiedNamespace: another process's private mount namespace made
// while the overlay is mounted (another root's run --isolate) holds a copy
// of the mount, which keeps the connection alive after the unmount here.
// Unmount must still return, and the copy must not keep serving.
func TestUnmountCopiedNamespace(t *testing.T) {
	o, cleanup := setupOverlay(t, fillSample)
	defer cleanup()
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "120")
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	self, _ := os.Readlink("/proc/self/ns/mnt")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder.Process.Pid))
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", holder.Process.Pid))
		if ns != "" && ns != self && strings.HasSuffix(exe, "/sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare did not enter its namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- o.Unmount() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("unmount: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Unmount still waiting after 30 s for a copy of the mount in another namespace")
	}
	t.Logf("unmount with a copy in another namespace took %v", time.Since(start).Round(time.Millisecond))
	if got := readFile(t, filepath.Join(o.root, "top.txt")); got != "top\n" {
		t.Fatalf("root after unmount reads %q", got)
	}
	// The copy no longer serves: the session that recorded it is over.
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(holder.Process.Pid), "-m", "cat", filepath.Join(o.root, "top.txt")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not connected") {
		t.Fatalf("copy of the mount in the other namespace: err=%v out=%q, want transport endpoint not connected", err, out)
	}
}

// Recovery's Unmount detaches a mount whose server is gone.
func TestUnmountPath(t *testing.T) {
	if err := Unmount(t.TempDir()); err != nil {
		t.Fatalf("unmount of a plain dir: %v", err)
	}
}

func TestSupported(t *testing.T) {
	if err := Supported(); err != nil {
		t.Fatalf("this machine supports fuse: %v", err)
	}
}

// A file opened for reading, never read, then truncated and unlinked still
// reads the content it had when it lost its name.
func TestLazyReaderUnlinked(t *testing.T) {
	o := mountTest(t, fillSample)
	p := filepath.Join(o.root, "lower/a.txt")
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(p, 5); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	k, _ := r.ReadAt(buf, 0)
	if string(buf[:k]) != "hello" {
		t.Fatalf("reads %q", buf[:k])
	}
}

// SetView while another process keeps writing the file it changes: every
// view change ends, and the writer goes on.
func TestSetViewDuringWrites(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		o, cleanup := setupOverlay(t, fillSample)
		defer cleanup()
		p := filepath.Join(o.root, "lower/a.txt")
		writer := exec.Command("sh", "-c", `while :; do dd if=/dev/zero of="$1" bs=1M count=8 conv=notrunc status=none || exit 1; done`, "sh", p)
		if err := writer.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { writer.Process.Kill(); writer.Wait() }()
		ref, err := o.j.PutBytes([]byte("from the journal"))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			for i := 0; i < 30; i++ {
				target := map[string]journal.NodeState{"lower/a.txt": {Kind: journal.File, Mode: 0o644, Size: ref.Size, Blob: ref}}
				if err := o.SetView(target, tasks.ID(10+i)); err != nil {
					done <- err
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("SetView hangs while a writer writes the file it changes")
		}
	})
}
