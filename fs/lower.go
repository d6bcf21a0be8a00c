//go:build linux || darwin

package fs

import (
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// lowerTree is the root directory as it was before the mount, reached through
// a directory fd opened before mounting. The overlay never writes to it.
type lowerTree struct {
	fd   int
	dir  *os.File
	root *os.Root
}

func openLower(path string) (*lowerTree, error) {
	dir, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open lower %s: %w", path, err)
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("open lower %s: %w", path, err)
	}
	return &lowerTree{fd: int(dir.Fd()), dir: dir, root: root}, nil
}

func (l *lowerTree) close() {
	l.root.Close()
	l.dir.Close()
}

// lstat stats rel without following a final symlink ("" is the root).
func (l *lowerTree) lstat(rel string, st *unix.Stat_t) error {
	if rel == "" {
		return unix.Fstat(l.fd, st)
	}
	return unix.Fstatat(l.fd, rel, st, unix.AT_SYMLINK_NOFOLLOW)
}

// open opens rel read-only, refusing symlinks anywhere on the way.
func (l *lowerTree) open(rel string) (*os.File, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := openBeneath(l.fd, rel, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

func (l *lowerTree) readlink(rel string) (string, error) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Readlinkat(l.fd, rel, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// dirent is one name of a directory listing.
type dirent struct {
	name string
	mode uint32 // S_IFMT bits
	ino  uint64
	st   unix.Stat_t
}

// readDir lists a directory fd's entries sorted by name.
func readDir(f *os.File) ([]dirent, error) {
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]dirent, 0, len(names))
	fd := int(f.Fd())
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		out = append(out, dirent{name: n, mode: uint32(st.Mode) & unix.S_IFMT, ino: uint64(st.Ino), st: st})
	}
	return out, nil
}

func (l *lowerTree) readDir(rel string) ([]dirent, error) {
	f, err := l.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDir(f)
}
