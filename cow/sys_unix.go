//go:build unix

package cow

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory of the tree; names inside it are resolved
// with *at calls on its descriptor, so a rename or symlink elsewhere cannot
// redirect them.
type dirHandle struct {
	f   *os.File
	fd  int
	rel string
}

// openDirHandle opens the directory rel ("." for the root) inside root,
// one component at a time with O_NOFOLLOW: a symlink anywhere on the way
// makes the directory not exist (ELOOP or ENOTDIR), so nothing is ever read
// or written through a link.
func openDirHandle(root *os.Root, rel string) (*dirHandle, error) {
	top, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return &dirHandle{f: top, fd: int(top.Fd()), rel: rel}, nil
	}
	fd := int(top.Fd())
	first := true
	for _, name := range strings.Split(rel, "/") {
		var next int
		for {
			next, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != unix.EINTR {
				break
			}
		}
		if first {
			top.Close()
			first = false
		} else {
			unix.Close(fd)
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		fd = next
	}
	return &dirHandle{f: os.NewFile(uintptr(fd), rel), fd: fd, rel: rel}, nil
}

// openChild opens the directory name inside d with O_NOFOLLOW: a symlink
// makes it not exist (ELOOP), a non-directory too (ENOTDIR).
func openChild(d *dirHandle, name string) (*dirHandle, error) {
	rel := joinRel(d.rel, name)
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		return &dirHandle{f: os.NewFile(uintptr(fd), rel), fd: fd, rel: rel}, nil
	}
}

// openDirLimit is how many directory handles a dirCache may keep open: a
// quarter of the open-file limit (which Go raises to the hard limit at
// start), between 64 and maxOpenDirs.
func openDirLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 64
	}
	return int(min(max(rl.Cur/4, 64), maxOpenDirs))
}

func (d *dirHandle) close() error { return d.f.Close() }

// names lists the directory.
func (d *dirHandle) names() ([]string, error) {
	if _, err := d.f.Seek(0, 0); err != nil {
		return nil, err
	}
	return d.f.Readdirnames(-1)
}

// lstat stats name without following a symlink.
func (d *dirHandle) lstat(name string) (statInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statInfo{}, &fs.PathError{Op: "lstat", Path: joinRel(d.rel, name), Err: err}
		}
		return statFromUnix(&st), nil
	}
}

// openFile opens name for reading; it fails on a symlink and never blocks on
// a fifo.
func (d *dirHandle) openFile(name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: joinRel(d.rel, name), Err: err}
		}
		return os.NewFile(uintptr(fd), joinRel(d.rel, name)), nil
	}
}

// readlink returns a symlink's target byte for byte.
func (d *dirHandle) readlink(name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: joinRel(d.rel, name), Err: err}
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// mkfifo creates a fifo with mode 0600 (the caller sets the final mode).
func (d *dirHandle) mkfifo(name string) error {
	for {
		err := mkfifoat(d, name)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "mkfifo", Path: joinRel(d.rel, name), Err: err}
		}
		return nil
	}
}

// sync makes the directory's entries durable.
func (d *dirHandle) sync() error { return d.f.Sync() }

func statFromUnix(st *unix.Stat_t) statInfo {
	m := uint32(st.Mode)
	s := statInfo{
		mode:    fs.FileMode(m & 0o777),
		size:    st.Size,
		mtimeNs: st.Mtim.Nano(),
		ctimeNs: st.Ctim.Nano(),
		ino:     uint64(st.Ino),
		nlink:   uint64(st.Nlink),
	}
	if m&unix.S_ISUID != 0 {
		s.mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		s.mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		s.mode |= fs.ModeSticky
	}
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		s.kind = fileKind
	case unix.S_IFDIR:
		s.kind = dirKind
	case unix.S_IFLNK:
		s.kind = symlinkKind
		s.mode = 0
	case unix.S_IFIFO:
		s.kind = fifoKind
	default:
		s.skip = true
	}
	return s
}

// isNotExist reports whether err means the path does not exist (including
// a non-directory or a symlink in the middle of the path).
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

// fstat stats an open file.
func fstat(f *os.File) (statInfo, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return statInfo{}, err
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return statInfo{}, err
	}
	if serr != nil {
		return statInfo{}, &fs.PathError{Op: "fstat", Path: f.Name(), Err: serr}
	}
	return statFromUnix(&st), nil
}

// isNotRegular reports an open error caused by the path having become a
// symlink (O_NOFOLLOW) or a fifo without a writer.
func isNotRegular(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO)
}

// createTemp creates name exclusively for writing, mode 0600.
func (d *dirHandle) createTemp(name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: joinRel(d.rel, name), Err: err}
		}
		return os.NewFile(uintptr(fd), joinRel(d.rel, name)), nil
	}
}

// rename renames oldName over newName, both in d.
func (d *dirHandle) rename(oldName, newName string) error {
	if err := unix.Renameat(d.fd, oldName, d.fd, newName); err != nil {
		return &os.LinkError{Op: "rename", Old: joinRel(d.rel, oldName), New: joinRel(d.rel, newName), Err: err}
	}
	return nil
}

// symlink creates name as a symlink to target.
func (d *dirHandle) symlink(target, name string) error {
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: joinRel(d.rel, name), Err: err}
	}
	return nil
}

// remove unlinks the non-directory name.
func (d *dirHandle) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: joinRel(d.rel, name), Err: err}
	}
	return nil
}
