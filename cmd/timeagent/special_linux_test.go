//go:build linux

package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFuseSessionSockets runs a fuse session in which a server binds a
// unix socket in the view and a client talks to it, the agent removes a
// socket the real tree had and makes a device file: the session ends with
// exit 0, reports the sockets and the device as not recorded (as copy mode
// does), and the real tree holds what the journal recorded: no new socket
// or device, the removed socket gone.
func TestFuseSessionSockets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fuse sessions and device files need root here")
	}
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	if err := unix.Mknod(e.path("old.sock"), unix.S_IFSOCK|0o755, 0); err != nil {
		t.Fatal(err)
	}
	// The agent waits for the test's server and client to be done.
	cmd := e.cmd("run", "--mode", "fuse", "--", "sh", "-c",
		`touch ready && while [ ! -e "$SCRATCH/done" ]; do sleep 0.05; done; `+
			`rm old.sock && mknod null.dev c 1 3 && echo x > null.dev && echo b > b.txt`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(e.path("ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the agent did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The root is now the view: the test is a process in the session.
	l, err := net.Listen("unix", e.path("run.sock"))
	if err != nil {
		os.WriteFile(e.scratch+"/done", nil, 0o644)
		<-exited
		t.Fatalf("listen in the session: %v", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // the socket stays to the session's end
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, 4))
		c.Write(append(b, '!'))
	}()
	c, err := net.Dial("unix", e.path("run.sock"))
	if err == nil {
		c.Write([]byte("ping"))
		reply := make([]byte, 5)
		_, err = io.ReadFull(c, reply)
		if string(reply) != "ping!" && err == nil {
			err = errors.New("reply " + string(reply))
		}
		c.Close()
	}
	l.Close()
	if err := os.WriteFile(e.scratch+"/done", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		<-exited
		t.Fatalf("talk through the socket in the session: %v", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the session did not end:\n%s", stderr.String())
	}
	want := "timeagent: not recorded (sockets or device files): null.dev, old.sock, run.sock\n"
	if !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
	}
	// The journal has no socket or device: the real tree gets none, and
	// keeps none the agent removed.
	for _, p := range []string{"run.sock", "null.dev", "old.sock"} {
		if _, err := os.Lstat(e.path(p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s in the real tree after the session: %v", p, err)
		}
	}
	if got := e.read("b.txt"); got != "b\n" {
		t.Fatalf("b.txt after the session: %q", got)
	}
}

// TestFuseSessionKeepsXattrs: a file whose content the agent changes keeps
// its extended attributes in the view and in the real tree after the
// session's apply, and after undo and redo.
func TestFuseSessionKeepsXattrs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fuse sessions need root here")
	}
	t.Parallel()
	attrs := map[string]string{"user.origin": "real", "trusted.tag": "t1"}
	e := newEnv(t)
	for _, p := range []string{"edit.txt", "append.txt"} {
		e.write(p, "old\n", 0o640)
		for k, v := range attrs {
			if err := unix.Lsetxattr(e.path(p), k, []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := e.sh("fuse", `echo new > edit.txt && echo more >> append.txt && `+
		`test "$(cat edit.txt)" = new`)
	check := func(when string, content map[string]string) {
		t.Helper()
		for p, want := range content {
			if got := e.read(p); got != want {
				t.Fatalf("%s %s: %q, want %q\n%s", when, p, got, want, r)
			}
			for k, v := range attrs {
				buf := make([]byte, 64)
				n, err := unix.Lgetxattr(e.path(p), k, buf)
				if err != nil || string(buf[:n]) != v {
					t.Errorf("%s %s %s: %q, %v; want %q", when, p, k, buf[:max(n, 0)], err, v)
				}
			}
		}
	}
	check("after the session", map[string]string{"edit.txt": "new\n", "append.txt": "old\nmore\n"})
	e.ok("undo")
	check("after undo", map[string]string{"edit.txt": "old\n", "append.txt": "old\n"})
	e.ok("redo")
	check("after redo", map[string]string{"edit.txt": "new\n", "append.txt": "old\nmore\n"})
}
