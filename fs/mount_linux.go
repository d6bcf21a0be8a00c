package fs

import (
	"errors"
	"fmt"
	"os"
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
// says why not and what to install or change (it wraps
// fusectl.ErrNoFuse).
func Supported() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fusectl.NoFuse("no /dev/fuse: load the fuse module (modprobe fuse) or, in a container, pass the device in (--device /dev/fuse)")
	case errors.Is(err, os.ErrPermission):
		return fusectl.NoFuse("cannot open /dev/fuse (permission denied): stock systems have it 0666; as root: chmod 0666 /dev/fuse")
	case err != nil:
		return fusectl.NoFuse("cannot open /dev/fuse: %v", err)
	}
	f.Close()
	if os.Geteuid() != 0 && !mayMount() {
		if _, err := fusectl.Helper(); err != nil {
			return err
		}
	}
	return nil
}

// mayMount reports whether this process may call mount(2) itself: root, or
// an owner of its mount namespace's user namespace (run --isolate as a
// normal user), which has CAP_SYS_ADMIN there.
func mayMount() bool {
	if os.Geteuid() == 0 {
		return true
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// Unmount detaches a mount at path left by a dead process (recovery). A path
// that is not a mount point is not an error.
func Unmount(path string) error {
	err := fusectl.Unmount(path, false)
	if errors.Is(err, unix.EBUSY) {
		err = fusectl.Unmount(path, true)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
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
		if err = fusectl.Unmount(c.path, false); !errors.Is(err, unix.EBUSY) {
			break
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	c.server.Wait()
	if c.ring != nil {
		c.ring.wait()
	}
	return nil
}

// stopDetached stops serving a mount that was detached lazily because it
// was busy: the connection is aborted, so the processes that still hold the
// detached mount get ENOTCONN instead of writing into a session that has
// ended, and then it waits until no request is being served any more.
func (c *conn) stopDetached(dev uint64) error {
	err := abortConn(dev)
	c.server.Wait()
	if c.ring != nil {
		c.ring.wait()
	}
	return err
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
	if !mayMount() {
		return serveFusermount(o, opts)
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

// serveFusermount mounts through the fusermount3 helper, for a user who may
// not mount: it hands back the /dev/fuse descriptor, which the server reads
// as /dev/fd/N (go-fuse must not mount again). Such a mount is reached only
// by processes of this user (no allow_other, which fuse.conf would have to
// allow): the agent runs as the same user.
func serveFusermount(o *Overlay, opts *fusefs.Options) (*conn, error) {
	mo := opts.MountOptions
	options := append([]string{"fsname=" + mo.FsName, "subtype=" + mo.Name, fmt.Sprintf("max_read=%d", mo.MaxWrite)}, mo.Options...)
	if mo.AllowOther {
		options = append(options, "allow_other")
	}
	fd, err := fusectl.Fusermount(o.path, options)
	if err != nil {
		return nil, err
	}
	// From here the descriptor belongs to the server, which closes it.
	mo.DirectMount = false
	o.root = &node{o: o}
	raw := newDirReads(fusefs.NewNodeFS(o.root, opts))
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), &mo)
	if err != nil {
		fusectl.Unmount(o.path, true)
		return nil, fmt.Errorf("serve %s: %w", o.path, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		fusectl.Unmount(o.path, true)
		server.Wait()
		return nil, fmt.Errorf("serve %s: %w", o.path, err)
	}
	pollHack(o.path)
	return &conn{server: server, path: o.path, fd: true}, nil
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
	flags := mo.DirectMountFlags
	if flags == 0 {
		flags = unix.MS_NOSUID | unix.MS_NODEV
	}
	if err := unix.Mount(mo.FsName, o.path, "fuse."+mo.Name, flags, strings.Join(data, ",")); err != nil {
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

// directMountFlags are the flags of a root's mount over root: nosuid, and
// nodev unless root's own filesystem allows device files, so that device
// files root makes in the view (Mknod) work as they would natively.
func directMountFlags(root string) uintptr {
	var st unix.Statfs_t
	if os.Geteuid() != 0 || unix.Statfs(root, &st) != nil || st.Flags&unix.ST_NODEV != 0 {
		return unix.MS_NOSUID | unix.MS_NODEV
	}
	return unix.MS_NOSUID
}
