//go:build linux

package fs

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnixSocketInView binds a unix socket inside the view, talks through
// it, and removes it and a socket that was in the real tree before the
// mount: nothing of them reaches the journal, and the overlay reports them
// as skipped, like a copy-mode scan does.
func TestUnixSocketInView(t *testing.T) {
	o := mountTest(t, func(root string) {
		fillSample(root)
		if err := unix.Mknod(filepath.Join(root, "lower/old.sock"), unix.S_IFSOCK|0o755, 0); err != nil {
			t.Fatal(err)
		}
	})
	sock := filepath.Join(o.root, "lower/app.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen in the view: %v", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	defer l.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, 5))
		c.Write(bytes.ToUpper(b))
		got <- b
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial in the view: %v", err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 5)
	if _, err := io.ReadFull(c, reply); err != nil || string(reply) != "HELLO" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	c.Close()
	if b := <-got; string(b) != "hello" {
		t.Fatalf("server read %q", b)
	}
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("stat of the socket in the view: %v %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(o.root, "lower/old.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the real tree's socket in the view: %v %v", fi, err)
	}
	l.Close()
	for _, p := range []string{"lower/app.sock", "lower/old.sock"} {
		if err := os.Remove(filepath.Join(o.root, p)); err != nil {
			t.Fatalf("remove %s: %v", p, err)
		}
		if _, err := os.Lstat(filepath.Join(o.root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after its removal: %v", p, err)
		}
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lower/app.sock", "lower/old.sock"} {
		if c, ok, err := o.j.LayerChange(1, p); err != nil || ok {
			t.Fatalf("%s is in the journal: %+v %v", p, c, err)
		}
	}
	if s := o.Skipped(); !slices.Equal(s, []string{"lower/app.sock", "lower/old.sock"}) {
		t.Fatalf("skipped %q, want both sockets", s)
	}
	if s := o.Skipped(); len(s) != 0 {
		t.Fatalf("skipped reported twice: %q", s)
	}
	// The session's end removes from the real tree what the view removed
	// of it: the socket it had before the mount.
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	if s := o.RemovedSpecials(); !slices.Equal(s, []string{"lower/old.sock"}) {
		t.Fatalf("removed specials %q, want lower/old.sock", s)
	}
}

// TestDeviceNodes makes device nodes in the view: root may, like on a
// local filesystem, and they are skipped by the journal; another user gets
// EPERM.
func TestDeviceNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	o := mountTest(t, fillSample)
	// Another user reaches the view (the temporary directory is 0700).
	if err := os.Chmod(filepath.Dir(o.root), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(o.root, "lower"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind string
		mode       uint32
		uid        uint32
		capMknod   bool
		ok         bool
	}{
		{"char.dev", "c", unix.S_IFCHR, 0, false, true},
		{"block.dev", "b", unix.S_IFBLK, 0, false, true},
		{"user-char.dev", "c", unix.S_IFCHR, 65534, false, false},
		{"user-block.dev", "b", unix.S_IFBLK, 65534, false, false},
		// With CAP_MKNOD the kernel lets another user's request through:
		// the overlay refuses it.
		{"user-capable.dev", "c", unix.S_IFCHR, 65534, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(o.root, "lower", tc.name)
			cmd := exec.Command("mknod", "-m", "0640", p, tc.kind, "1", "3")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.uid}}
			if tc.capMknod {
				cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_MKNOD}
			}
			out, err := cmd.CombinedOutput()
			if !tc.ok {
				if err == nil || !bytes.Contains(out, []byte("Operation not permitted")) {
					t.Fatalf("mknod as uid %d: %v %s, want EPERM", tc.uid, err, out)
				}
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("refused node exists: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("mknod: %v %s", err, out)
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&unix.S_IFMT != tc.mode || st.Mode&0o777 != 0o640 || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
				t.Fatalf("node: mode %o rdev %d:%d", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
			}
			if err := o.Flush(); err != nil {
				t.Fatal(err)
			}
			rel := "lower/" + tc.name
			if c, ok, err := o.j.LayerChange(1, rel); err != nil || ok {
				t.Fatalf("%s is in the journal: %+v %v", rel, c, err)
			}
			if s := o.Skipped(); !slices.Equal(s, []string{rel}) {
				t.Fatalf("skipped %q, want %s", s, rel)
			}
		})
	}
	// The character device is /dev/null's: it works through the view.
	if err := os.WriteFile(filepath.Join(o.root, "lower/char.dev"), []byte("gone"), 0); err != nil {
		t.Fatalf("write to the device: %v", err)
	}
}

// TestXattrsCopyUp changes lower objects without touching their extended
// attributes: the copy-up keeps them.
func TestXattrsCopyUp(t *testing.T) {
	attrs := map[string]string{"user.origin": "lower", "user.empty": ""}
	if os.Geteuid() == 0 {
		attrs["trusted.tag"] = "t1"
		attrs["security.tag"] = "s1"
	}
	o := mountTest(t, func(root string) {
		fillSample(root)
		for _, p := range []string{"top.txt", "lower/a.txt", "lower/sub/b.bin", "lower/sub"} {
			for k, v := range attrs {
				if err := unix.Lsetxattr(filepath.Join(root, p), k, []byte(v), 0); err != nil {
					t.Fatalf("setxattr %s %s: %v", p, k, err)
				}
			}
		}
	})
	for _, tc := range []struct {
		name, path string
		change     func(p string) error
	}{
		{"rewrite", "top.txt", func(p string) error { return os.WriteFile(p, []byte("new\n"), 0o644) }},
		{"append", "lower/a.txt", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("more\n"))
			return errors.Join(err, f.Close())
		}},
		{"chmod", "lower/sub/b.bin", func(p string) error { return os.Chmod(p, 0o640) }},
		{"directory", "lower/sub", func(p string) error { return os.Chmod(p, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(o.root, tc.path)
			if err := tc.change(p); err != nil {
				t.Fatal(err)
			}
			if err := o.Flush(); err != nil {
				t.Fatal(err)
			}
			for k, v := range attrs {
				buf := make([]byte, 64)
				n, err := unix.Lgetxattr(p, k, buf)
				if err != nil || string(buf[:n]) != v {
					t.Errorf("%s %s after the change: %q, %v; want %q", tc.path, k, buf[:max(n, 0)], err, v)
				}
			}
			// The object was copied up: a new attribute goes to the copy
			// and leaves the real file as it was.
			if err := unix.Lsetxattr(p, "user.new", []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Lgetxattr(p, "user.new", nil); err != nil {
				t.Fatalf("new attribute: %v", err)
			}
		})
	}
}
