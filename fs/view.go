//go:build linux || darwin

package fs

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/internal/sparse"
	"github.com/timeagent-dev/timeagent/journal"
)

// object is what a path of the view is: an upper or a lower filesystem object.
type object struct {
	upper bool
	st    unix.Stat_t
}

func (ob *object) ifmt() uint32 { return uint32(ob.st.Mode) & unix.S_IFMT }
func (ob *object) isDir() bool  { return ob.ifmt() == unix.S_IFDIR }

// join is path.Join for view paths ("" is the root).
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (o *Overlay) upperPath(p string) string {
	if p == "" {
		return o.upper
	}
	return filepath.Join(o.upper, filepath.FromSlash(p))
}

// lowerVisible reports whether the lower tree shows through at p: no
// ancestor is opaque or whited out. Must hold o.mu.
func (o *Overlay) lowerVisible(p string) bool {
	if o.whiteout[p] {
		return false
	}
	for d := parentOf(p); d != ""; d = parentOf(d) {
		if o.opaque[d] || o.whiteout[d] {
			return false
		}
	}
	return true
}

// resolve finds what p is in the view. Must hold o.mu.
func (o *Overlay) resolve(p string) (object, error) {
	var ob object
	// Below a directory the upper tree does not have, p is not upper
	// either: most of a session's lookups are answered without a stat of
	// the upper tree.
	if p == "" || !o.upperAbsent[parentOf(p)] {
		if err := unix.Lstat(o.upperPath(p), &ob.st); err == nil {
			ob.upper = true
			return ob, nil
		} else if err != unix.ENOENT {
			return ob, err
		}
	}
	if p != "" && !o.lowerVisible(p) {
		return ob, unix.ENOENT
	}
	if err := o.lower.lstat(p, &ob.st); err != nil {
		return ob, err
	}
	if p != "" && ob.isDir() {
		o.upperAbsent[p] = true
	}
	return ob, nil
}

// upperDirsChanged forgets which directories the upper tree lacks; it is
// called whenever a directory may have appeared in the upper tree (mkdir,
// rename, exchange). Must hold o.mu.
func (o *Overlay) upperDirsChanged() {
	if len(o.upperAbsent) > 0 {
		o.upperAbsent = map[string]bool{}
	}
}

// inoOf is the inode number the view shows for p: the lower inode for lower
// objects and for upper copies of them, a private counter for new objects.
func (o *Overlay) inoOf(p string, ob *object) uint64 {
	if ob.upper {
		if ino, ok := o.inos[p]; ok {
			return ino
		}
		return uint64(ob.st.Ino) | 1<<62
	}
	return uint64(ob.st.Ino)
}

func (o *Overlay) newIno(p string) {
	o.nextIno++
	o.inos[p] = o.nextIno
}

// copyUpParents makes every ancestor directory of p exist in the upper tree.
func (o *Overlay) copyUpParents(p string) error {
	if p == "" {
		return nil
	}
	return o.copyUpDir(parentOf(p))
}

func (o *Overlay) copyUpDir(d string) error {
	if d == "" {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(o.upperPath(d), &st); err == nil {
		return nil
	}
	return o.copyUp(d)
}

// copyUp makes p, which exists in the view, exist in the upper tree with the
// same kind, content, mode, owner and times. File content is hashed into the
// journal on the way (it is p's before state in some task).
func (o *Overlay) copyUp(p string) error {
	ob, err := o.resolve(p)
	if err != nil {
		return err
	}
	if ob.upper {
		return nil
	}
	if err := o.copyUpParents(p); err != nil {
		return err
	}
	up := o.upperPath(p)
	st := &ob.st
	switch ob.ifmt() {
	case unix.S_IFDIR:
		o.upperDirsChanged()
		err = unix.Mkdir(up, 0o700)
	case unix.S_IFLNK:
		var target string
		if target, err = o.lower.readlink(p); err == nil {
			err = unix.Symlink(target, up)
		}
	case unix.S_IFIFO:
		err = unix.Mkfifo(up, 0o600)
	case unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		// A socket's copy is bound to no one, as the lower one is after
		// its server exited; a device copy needs root.
		err = unix.Mknod(up, ob.ifmt()|0o600, int(st.Rdev))
	case unix.S_IFREG:
		err = o.copyUpFile(p, up)
	default:
		return unix.EPERM
	}
	if err != nil {
		return fmt.Errorf("copy up %s: %w", p, err)
	}
	o.noteMade(up)
	o.inos[p] = uint64(st.Ino)
	if err := unix.Lchown(up, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("copy up %s: %w", p, err)
	}
	if ob.ifmt() != unix.S_IFLNK {
		if err := unix.Chmod(up, uint32(st.Mode)&0o7777); err != nil {
			return fmt.Errorf("copy up %s: %w", p, err)
		}
	}
	// After the chown, which would drop security.capability. An attribute
	// the staging filesystem cannot hold (too large) is logged, not a
	// failure of the agent's change.
	if err := o.copyXattrs(p, up); err != nil {
		o.logf("copy up %s: %v", p, err)
	}
	ts := []unix.Timespec{statAtime(st), statMtime(st)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, up, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("copy up %s: %w", p, err)
	}
	if ref, ok := o.lowerBlobs[p]; ok && ob.ifmt() == unix.S_IFREG {
		o.knowHash(up, ref)
	}
	return nil
}

// copyUpFile copies a lower file's content to up, hashing it into the journal
// when its blob is not known yet.
func (o *Overlay) copyUpFile(p, up string) error {
	if o.takeStaged(p, up) {
		return nil // copied outside o.mu (content.go)
	}
	src, err := o.lower.open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(up, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	// Holes of a sparse lower file are not read, and stay holes in the
	// upper copy.
	var sst unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &sst); err != nil {
		dst.Close()
		os.Remove(up)
		return err
	}
	in := sparse.NewReader(src, sst.Size)
	sw := sparse.NewWriter(dst)
	_, known := o.lowerBlobs[p]
	if known {
		_, err = io.Copy(sw, in)
	} else {
		var ref journal.BlobRef
		ref, err = o.store.PutBlob(io.TeeReader(in, sw))
		if err == nil {
			o.lowerBlobs[p] = ref
		}
	}
	if err == nil {
		err = sw.Finish()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(up)
		return err
	}
	return nil
}

// knowHash caches ref as the content of the upper file up.
func (o *Overlay) knowHash(up string, ref journal.BlobRef) {
	var st unix.Stat_t
	if unix.Lstat(up, &st) == nil {
		o.hmu.Lock()
		o.hashed[uint64(st.Ino)] = &hashEntry{valid: true, mtime: statMtimeNs(&st), blob: ref}
		o.hmu.Unlock()
	}
}

// remove takes p out of the view: the upper object goes, and a whiteout hides
// the lower one. Must hold o.mu; p must exist.
func (o *Overlay) remove(p string, ob *object) error {
	isDir := ob.isDir()
	if ob.upper {
		up := o.upperPath(p)
		if !isDir {
			o.forgetHash(&ob.st)
		}
		trashed, err := o.trashUpper(up) // a view change keeps it until it succeeded
		switch {
		case trashed:
		case isDir:
			err = os.RemoveAll(up)
		default:
			err = unix.Unlink(up)
		}
		if err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	delete(o.inos, p)
	delete(o.opaque, p)
	if isDir {
		o.dropPrefix(p)
	}
	var st unix.Stat_t
	if o.lowerVisible(p) && o.lower.lstat(p, &st) == nil {
		o.whiteout[p] = true
	}
	return nil
}

// dropPrefix forgets the whiteouts, opaque marks and inode numbers below p.
func (o *Overlay) dropPrefix(p string) {
	pre := p + "/"
	for _, m := range []map[string]bool{o.whiteout, o.opaque} {
		for k := range m {
			if strings.HasPrefix(k, pre) {
				delete(m, k)
			}
		}
	}
	for k := range o.inos {
		if strings.HasPrefix(k, pre) {
			delete(o.inos, k)
		}
	}
}

func (o *Overlay) forgetHash(st *unix.Stat_t) {
	o.hmu.Lock()
	delete(o.hashed, uint64(st.Ino))
	o.hmu.Unlock()
}

// created notes that p was just created in the upper tree: it hides any lower
// object, and a directory over a hidden lower object is opaque.
func (o *Overlay) created(p string, isDir bool) {
	if o.whiteout[p] {
		delete(o.whiteout, p)
		if isDir {
			o.opaque[p] = true
		}
	} else if isDir {
		var st unix.Stat_t
		if o.lowerVisible(p) && o.lower.lstat(p, &st) == nil {
			o.opaque[p] = true
		}
	}
	o.newIno(p)
}

// readDir lists the view's directory p: upper names, then lower names that
// are neither shadowed nor whited out. Must hold o.mu.
func (o *Overlay) readDir(p string, ob *object) ([]dirent, error) {
	var out []dirent
	seen := map[string]bool{}
	if ob.upper {
		f, err := os.Open(o.upperPath(p))
		if err != nil {
			return nil, err
		}
		ents, err := readDir(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			c := join(p, e.name)
			if ino, ok := o.inos[c]; ok {
				e.ino = ino
			} else {
				e.ino |= 1 << 62
			}
			seen[e.name] = true
			out = append(out, e)
		}
	}
	if !o.opaque[p] && (p == "" || o.lowerVisible(p)) {
		var st unix.Stat_t
		if o.lower.lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ents, err := o.lower.readDir(p)
			if err != nil {
				return nil, err
			}
			for _, e := range ents {
				if seen[e.name] || o.whiteout[join(p, e.name)] {
					continue
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// walk calls fn for p and, when it is a directory, everything below it,
// parents before children.
func (o *Overlay) walk(p string, fn func(p string, ob *object) error) error {
	ob, err := o.resolve(p)
	if err != nil {
		return err
	}
	if err := fn(p, &ob); err != nil {
		return err
	}
	if !ob.isDir() {
		return nil
	}
	ents, err := o.readDir(p, &ob)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := o.walk(join(p, e.name), fn); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// nodeMode converts stat mode bits to a journal mode.
func nodeMode(m uint32) iofs.FileMode {
	mode := iofs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= iofs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= iofs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= iofs.ModeSticky
	}
	return mode
}

// statMode converts a journal mode to stat permission bits.
func statMode(m iofs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&iofs.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if m&iofs.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if m&iofs.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	return mode
}

// cleanPath reports whether p is a clean relative slash path.
func cleanPath(p string) bool {
	return p != "" && p != "." && !strings.HasPrefix(p, "/") && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../")
}
