package fs

import "golang.org/x/sys/unix"

// Inode flags of linux/fs.h (FS_IOC_GETFLAGS), as chattr sets them.
const (
	inodeImmutable = 0x10 // FS_IMMUTABLE_FL, chattr +i
	inodeAppend    = 0x20 // FS_APPEND_FL, chattr +a
)

// inodeFlags reads whether the lower file or directory rel, whose lstat is
// st, is immutable or append-only. Other kinds, and file systems without
// the flags, have neither.
func (l *lowerTree) inodeFlags(rel string, st *unix.Stat_t) (immutable, appendOnly bool) {
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		return false, false
	}
	fd := l.fd
	if rel != "" {
		var err error
		if fd, err = openBeneath(l.fd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOATIME); err != nil {
			if fd, err = openBeneath(l.fd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC); err != nil {
				return false, false
			}
		}
		defer unix.Close(fd)
	}
	v, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false, false
	}
	return v&inodeImmutable != 0, v&inodeAppend != 0
}
