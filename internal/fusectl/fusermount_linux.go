package fusectl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoFuse means FUSE cannot be used by this user here: the fusermount3
// helper is missing, or /dev/fuse cannot be opened. Errors that match it
// (errors.Is) name the fix.
var ErrNoFuse = errors.New("fuse is not usable")

// noFuseError is an ErrNoFuse with its own message.
type noFuseError struct{ msg string }

func (e *noFuseError) Error() string        { return e.msg }
func (e *noFuseError) Is(target error) bool { return target == ErrNoFuse }

// NoFuse returns an error that matches ErrNoFuse, with the message
// formatted from format and args (which should name the fix).
func NoFuse(format string, args ...any) error {
	return &noFuseError{msg: fmt.Sprintf(format, args...)}
}

// Helper returns the path of the fusermount3 helper (fuse3), or of the
// older fusermount (fuse 2), which mounts for users who may not mount.
func Helper() (string, error) {
	for _, name := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/bin", "/bin"} {
			p := dir + "/" + name
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", NoFuse("no fusermount3 helper: install fuse3 (Debian and Ubuntu: apt install fuse3)")
}

// Fusermount mounts a FUSE file system on dir through the fusermount3
// helper (setuid root), as a user who may not call mount(2): the helper
// opens /dev/fuse, mounts it and hands the descriptor back over a socket.
// options are the mount options (fsname=, subtype=, default_permissions…).
// What the helper prints goes into the error, never to the terminal.
func Fusermount(dir string, options []string) (int, error) {
	bin, err := Helper()
	if err != nil {
		return -1, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("mount %s with %s: socketpair: %w", dir, bin, err)
	}
	local, remote := os.NewFile(uintptr(fds[0]), "fusermount-local"), os.NewFile(uintptr(fds[1]), "fusermount-remote")
	defer local.Close()
	args := []string{dir}
	if len(options) > 0 {
		args = append(args, "-o", strings.Join(options, ","))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.ExtraFiles = []*os.File{remote}
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	err = cmd.Run()
	remote.Close()
	if err != nil {
		return -1, helperError("mount "+dir, bin, err, errb.String())
	}
	fd, err := receiveFd(local)
	if err != nil {
		return -1, fmt.Errorf("mount %s with %s: %w", dir, bin, err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// receiveFd reads the descriptor fusermount sends (SCM_RIGHTS).
func receiveFd(f *os.File) (int, error) {
	buf := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, 0)
	if err != nil {
		return -1, fmt.Errorf("receive the /dev/fuse descriptor: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receive the /dev/fuse descriptor: no descriptor sent (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("receive the /dev/fuse descriptor: %v", err)
	}
	return fds[0], nil
}

// helperError turns a failed fusermount run into an error that names the
// fix where one is known.
func helperError(op, bin string, err error, out string) error {
	out = strings.TrimSpace(out)
	if out == "" {
		out = err.Error()
	}
	out = strings.ReplaceAll(out, "\n", "; ")
	switch {
	case strings.Contains(out, "/dev/fuse"):
		return NoFuse("%s: %s: let your user read and write /dev/fuse (stock systems have it 0666: chmod 0666 /dev/fuse as root), or load the fuse module (modprobe fuse)", op, out)
	case strings.Contains(out, "Device or resource busy"):
		return fmt.Errorf("%s: %s: %w", op, out, unix.EBUSY)
	case strings.Contains(out, "not found in") || strings.Contains(out, "Invalid argument") || strings.Contains(out, "entry for") || strings.Contains(out, "not mounted"):
		return fmt.Errorf("%s: %s: %w", op, out, unix.EINVAL)
	}
	return fmt.Errorf("%s with %s: %s", op, bin, out)
}

// Unmount unmounts the FUSE file system on dir; lazy detaches it even
// while it is busy. It calls umount2 where this process may (root, or a
// mount namespace of its own user namespace), else fusermount3 -u, which
// lets a user unmount what they mounted. Busy is unix.EBUSY, not mounted
// unix.EINVAL (both matched with errors.Is).
func Unmount(dir string, lazy bool) error {
	flags := 0
	if lazy {
		flags = unix.MNT_DETACH
	}
	err := unix.Unmount(dir, flags)
	if err != unix.EPERM {
		if err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		return nil
	}
	bin, herr := Helper()
	if herr != nil {
		return fmt.Errorf("unmount %s: %w; %w", dir, err, herr)
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	cmd := exec.Command(bin, append(args, dir)...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		return helperError("unmount "+dir, bin, err, errb.String())
	}
	return nil
}
