//go:build windows

package cow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// errNoFifo: Windows has no fifos.
var errNoFifo = fmt.Errorf("fifos: %w", ErrUnsupported)

// dirHandle is a directory of the tree; on Windows names are resolved
// through the os.Root, which keeps them inside the root.
type dirHandle struct {
	root *os.Root
	rel  string
}

// openDirHandle opens the directory rel ("." for the root) inside root.
func openDirHandle(root *os.Root, rel string) (*dirHandle, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open %s: not a directory", rel)
	}
	return &dirHandle{root: root, rel: rel}, nil
}

// openChild opens the directory name inside d.
func openChild(d *dirHandle, name string) (*dirHandle, error) {
	return openDirHandle(d.root, joinRel(d.rel, name))
}

// openDirLimit: a Windows dirHandle holds no open handle.
func openDirLimit() int { return maxOpenDirs }

func (d *dirHandle) close() error { return nil }

func (d *dirHandle) names() ([]string, error) {
	f, err := d.root.Open(d.rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (d *dirHandle) lstat(name string) (statInfo, error) {
	fi, err := d.root.Lstat(joinRel(d.rel, name))
	if err != nil {
		return statInfo{}, err
	}
	return statFromFileInfo(fi), nil
}

func (d *dirHandle) openFile(name string) (*os.File, error) {
	return d.root.OpenFile(joinRel(d.rel, name), os.O_RDONLY, 0)
}

func (d *dirHandle) readlink(name string) (string, error) {
	return d.root.Readlink(joinRel(d.rel, name))
}

func (d *dirHandle) mkfifo(name string) error {
	return &fs.PathError{Op: "mkfifo", Path: joinRel(d.rel, name), Err: errNoFifo}
}

// sync is a no-op: Windows cannot fsync a directory handle.
func (d *dirHandle) sync() error { return nil }

func statFromFileInfo(fi fs.FileInfo) statInfo {
	s := statFromFileMode(fi.Mode())
	s.size = fi.Size()
	s.mtimeNs = fi.ModTime().UnixNano()
	// Windows reports no change time or inode here: the modification time
	// stands in for both.
	s.ctimeNs = s.mtimeNs
	return s
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// fstat stats an open file.
func fstat(f *os.File) (statInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return statInfo{}, err
	}
	return statFromFileInfo(fi), nil
}

func isNotRegular(err error) bool { return false }

func (d *dirHandle) createTemp(name string) (*os.File, error) {
	return d.root.OpenFile(joinRel(d.rel, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

func (d *dirHandle) rename(oldName, newName string) error {
	return d.root.Rename(joinRel(d.rel, oldName), joinRel(d.rel, newName))
}

func (d *dirHandle) symlink(target, name string) error {
	return d.root.Symlink(target, joinRel(d.rel, name))
}

func (d *dirHandle) remove(name string) error {
	return d.root.Remove(joinRel(d.rel, name))
}

// specialBits are the mode bits a node state keeps besides fs.ModePerm.
const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// permOf keeps the bits of m a node state records.
func permOf(m fs.FileMode) fs.FileMode { return m & (fs.ModePerm | specialBits) }

// statFromFileMode classifies a Go file mode.
func statFromFileMode(m fs.FileMode) statInfo {
	s := statInfo{mode: permOf(m)}
	switch m.Type() {
	case 0:
		s.kind = fileKind
	case fs.ModeDir:
		s.kind = dirKind
	case fs.ModeSymlink:
		s.kind = symlinkKind
		s.mode = 0
	case fs.ModeNamedPipe:
		s.kind = fifoKind
	default:
		s.skip = true
	}
	return s
}
