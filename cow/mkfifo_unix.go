//go:build unix && !darwin

package cow

import "golang.org/x/sys/unix"

// mkfifoat creates a fifo in d with mode 0600.
func mkfifoat(d *dirHandle, name string) error {
	return unix.Mknodat(d.fd, name, unix.S_IFIFO|0o600, 0)
}
