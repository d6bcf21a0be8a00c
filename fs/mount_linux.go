package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/timeagent-dev/timeagent/internal/fusectl"
	"github.com/timeagent-dev/timeagent/internal/mountinfo"
)

// Supported reports whether FUSE overlays can be mounted here; the error
// says why not.
func Supported() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("fuse: cannot open /dev/fuse: %w", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return errors.New("fuse: not root and no fusermount helper installed")
			}
		}
	}
	return nil
}

// Unmount detaches a mount at path left by a dead process (recovery). A path
// that is not a mount point is not an error.
func Unmount(path string) error {
	err := unix.Unmount(path, 0)
	if err == unix.EBUSY {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	if err == nil || err == unix.EINVAL || err == unix.ENOENT {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

// abortConn aborts the FUSE connection of the file system whose device is
// dev: every reader of the device gets ENODEV, every later access to a
// copy of the mount ENOTCONN. Used only after the mount is gone from this
// namespace.
func abortConn(dev uint64) error { return fusectl.Abort(unix.Minor(dev)) }

// mountedDev is the device number of the file system mounted at path in
// this namespace, read from the mount table without touching the mount.
func mountedDev(path string) (uint64, bool) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return 0, false
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if m := mounts[i]; m.Point == path {
			var maj, min uint32
			if _, err := fmt.Sscanf(m.Dev, "%d:%d", &maj, &min); err != nil {
				return 0, false
			}
			return unix.Mkdev(maj, min), true
		}
	}
	return 0, false
}

// isMountPoint reports whether a file system of device dev is mounted at
// path in this mount namespace (from /proc/self/mountinfo, without touching
// the mount itself, whose server may be stopping).
func isMountPoint(path string, dev uint64) (bool, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return false, err
	}
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	for _, m := range mounts {
		if m.Dev == want && m.Point == path {
			return true, nil
		}
	}
	return false, nil
}

// conn is a mounted FUSE connection and the server answering it.
type conn struct {
	server *fuse.Server
	ring   *fuseRing // nil when requests are read from /dev/fuse
	path   string
	fd     bool // mounted here with the server on /dev/fd/N: unmount here too
}

// transport names how requests reach the server.
func (c *conn) transport() string {
	if c.ring != nil {
		return "io_uring"
	}
	return "/dev/fuse"
}

// passthrough reports whether the kernel takes backing files for opened
// files (FUSE passthrough), which registering needs root for.
func (c *conn) passthrough() bool {
	return !noPassthrough && os.Geteuid() == 0 && passthroughNegotiated(c.server.KernelSettings())
}

// noPassthrough makes the overlay serve as where the kernel declines FUSE
// passthrough (before Linux 6.9, or not root): every read and write of an
// upper file reaches the overlay (set by the tests of that fallback).
var noPassthrough bool

// unmount detaches the mount and waits until the server has stopped.
func (c *conn) unmount() error {
	if !c.fd {
		return c.server.Unmount()
	}
	var err error
	delay := time.Duration(0)
	for try := 0; try < 5; try++ {
		if err = unix.Unmount(c.path, 0); err != unix.EBUSY {
			break
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	if err != nil && err != unix.EINVAL {
		return fmt.Errorf("unmount %s: %w", c.path, err)
	}
	c.server.Wait()
	if c.ring != nil {
		c.ring.wait()
	}
	return nil
}

// devFuseOnly makes serve read /dev/fuse even where io_uring could be used
// (set by tests that cover both transports).
var devFuseOnly bool

// serve mounts the overlay's root at o.path and starts serving it, through
// io_uring where the kernel allows it (uring_linux.go), else by reading
// /dev/fuse. Directories are read without OPENDIR (dirReads).
func serve(o *Overlay, opts *fusefs.Options) (*conn, error) {
	if devFuseOnly {
		// tests of the /dev/fuse transport on a machine with io_uring
	} else if err := uringUsable(); err != nil {
		o.logf("%v", err)
	} else {
		c, err := serveRing(o, opts)
		if err == nil {
			return c, nil
		}
		o.logf("%v; reading /dev/fuse instead", err)
	}
	o.root = &node{o: o}
	raw := newDirReads(fusefs.NewNodeFS(o.root, opts))
	server, err := fuse.NewServer(raw, o.path, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		server.Unmount()
		return nil, err
	}
	return &conn{server: server, path: o.path}, nil
}

// serveRing mounts with a /dev/fuse descriptor of its own, so that it can
// hand the descriptor both to go-fuse's server (INIT, FORGET, INTERRUPT,
// notifications) and to the io_uring workers (every other request).
func serveRing(o *Overlay, opts *fusefs.Options) (*conn, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fuse over io_uring: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(o.path, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fuse over io_uring: %w", err)
	}
	mo := opts.MountOptions
	data := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", mo.MaxWrite),
	}
	if mo.AllowOther {
		data = append(data, "allow_other")
	}
	data = append(data, mo.Options...)
	if err := unix.Mount(mo.FsName, o.path, "fuse."+mo.Name, unix.MS_NOSUID|unix.MS_NODEV, strings.Join(data, ",")); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fuse over io_uring: mount %s: %w", o.path, err)
	}
	// From here the descriptor belongs to the server, which closes it.
	mo.DirectMount = false // /dev/fd/N: go-fuse must not mount again
	mo.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	o.root = &node{o: o}
	raw := newDirReads(fusefs.NewNodeFS(o.root, opts))
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), &mo)
	if err != nil {
		unix.Unmount(o.path, unix.MNT_DETACH)
		return nil, fmt.Errorf("fuse over io_uring: %w", err)
	}
	go server.Serve()
	c := &conn{server: server, path: o.path, fd: true}
	fail := func(err error) (*conn, error) {
		// Requests wait until the ring is complete: end the connection,
		// so that nothing waits on it.
		dev, ok := mountedDev(o.path)
		unix.Unmount(o.path, unix.MNT_DETACH)
		if ok {
			abortConn(dev)
		}
		server.Wait()
		if c.ring != nil {
			c.ring.wait()
		}
		return nil, err
	}
	k := server.KernelSettings()
	if k.Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		return c, nil // negotiated /dev/fuse: fine as it is
	}
	ps := fuse.NewProtocolServer(raw, &mo)
	initProtocol(ps, k)
	if c.ring, err = startRing(ps, fd, mo.MaxWrite, o.logf); err != nil {
		return fail(err)
	}
	pollHack(o.path)
	return c, nil
}

// pollHack makes the kernel ask once whether files of the mount can be
// polled, so go-fuse answers ENOSYS before the runtime of this process
// polls one (go-fuse does this itself for mounts it makes).
func pollHack(path string) {
	fd, err := unix.Open(filepath.Join(path, ".go-fuse-epoll-hack"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}

// passthroughNegotiated reports whether the kernel offered passthrough at
// INIT (go-fuse asks for it by default).
func passthroughNegotiated(k *fuse.InitIn) bool {
	return k.Flags64()&fuse.CAP_PASSTHROUGH != 0
}
