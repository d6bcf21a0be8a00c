package fusectl

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// fusectlMagic is FUSECTL_SUPER_MAGIC (linux/magic.h).
const fusectlMagic = 0x65735543

// Dir is where the kernel lists FUSE connections, one directory per
// connection named by the minor device number of its mount.
const Dir = "/sys/fs/fuse/connections"

var mountOnce sync.Once

// ensureMounted mounts the control file system on Dir unless it is there.
func ensureMounted() {
	mountOnce.Do(func() {
		var st unix.Statfs_t
		if unix.Statfs(Dir, &st) == nil && st.Type == fusectlMagic {
			return
		}
		unix.Mount("fusectl", Dir, "fusectl", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	})
}

// ErrGone: no connection of that number exists (it has already ended).
var ErrGone = errors.New("no such fuse connection")

// ErrNoControl: the fuse control file system is not mounted and this
// process may not mount it (not root). A connection whose server died has
// ended without it.
var ErrNoControl = errors.New("the fuse control file system is not mounted")

// Abort aborts the FUSE connection whose mount has minor device number
// minor: every reader of its device gets ENODEV and every access to a
// copy of its mount ENOTCONN.
func Abort(minor uint32) error {
	ensureMounted()
	p := fmt.Sprintf("%s/%d/abort", Dir, minor)
	err := os.WriteFile(p, []byte("1"), 0o200)
	if errors.Is(err, os.ErrNotExist) {
		var st unix.Statfs_t
		if unix.Statfs(Dir, &st) != nil || st.Type != fusectlMagic {
			return fmt.Errorf("abort fuse connection %d: %w on %s and could not be", minor, ErrNoControl, Dir)
		}
		return fmt.Errorf("abort fuse connection %d: %w", minor, ErrGone)
	}
	if err != nil {
		return fmt.Errorf("abort fuse connection %s: %w", p, err)
	}
	return nil
}
