//go:build linux || darwin

package fs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Immutable and append-only objects (chattr +i / +a; chflags uchg / uappnd
// on darwin) of the lower tree refuse through the overlay what they refuse
// on disk: the session's final apply could not make those changes. An
// immutable object cannot be changed, removed, renamed or linked, nor, for a
// directory, gain or lose entries; an append-only file can only be opened
// for appending, and an append-only directory can gain entries but not lose
// them.

// lowerFlags reports the flags of the lower object that the view shows at
// p, itself or as its upper copy. Must hold o.mu.
func (o *Overlay) lowerFlags(p string) (immutable, appendOnly bool) {
	ob, err := o.resolve(p)
	if err != nil || (p != "" && !o.lowerVisible(p)) {
		return false, false
	}
	st := ob.st
	if ob.upper {
		if o.lower.lstat(p, &st) != nil || o.inos[p] != uint64(st.Ino) || st.Mode&unix.S_IFMT != ob.st.Mode&unix.S_IFMT {
			return false, false // not a copy of the lower object
		}
	}
	// The lower tree does not change during a session: read once per path.
	f, ok := o.lowerFlagsOf[p]
	if !ok {
		imm, app := o.lower.inodeFlags(p, &st)
		f = [2]bool{imm, app}
		o.lowerFlagsOf[p] = f
	}
	return f[0], f[1]
}

// refuseChange answers EPERM when the object at p cannot be changed,
// removed or renamed. Must hold o.mu.
func (o *Overlay) refuseChange(p string) syscall.Errno {
	if imm, app := o.lowerFlags(p); imm || app {
		return syscall.EPERM
	}
	return 0
}

// refuseEntries answers EPERM when entries cannot be added to (add) or
// removed from the directory d. Must hold o.mu.
func (o *Overlay) refuseEntries(d string, add bool) syscall.Errno {
	if imm, app := o.lowerFlags(d); imm || app && !add {
		return syscall.EPERM
	}
	return 0
}

// refuseOpen answers EPERM when the file at p cannot be opened for writing
// with flags. Must hold o.mu.
func (o *Overlay) refuseOpen(p string, flags uint32) syscall.Errno {
	imm, app := o.lowerFlags(p)
	if imm || app && (flags&syscall.O_APPEND == 0 || flags&syscall.O_TRUNC != 0) {
		return syscall.EPERM
	}
	return 0
}

// refuseSetattr answers EPERM when the attribute change in cannot be made
// to the object at p: only setting the times to now is allowed on an
// append-only file. Must hold o.mu.
func (o *Overlay) refuseSetattr(p string, in *fuse.SetAttrIn) syscall.Errno {
	imm, app := o.lowerFlags(p)
	if imm {
		return syscall.EPERM
	}
	if !app {
		return 0
	}
	v := in.Valid
	if v&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID|fuse.FATTR_SIZE) != 0 ||
		v&fuse.FATTR_ATIME != 0 && v&fuse.FATTR_ATIME_NOW == 0 ||
		v&fuse.FATTR_MTIME != 0 && v&fuse.FATTR_MTIME_NOW == 0 {
		return syscall.EPERM
	}
	return 0
}
