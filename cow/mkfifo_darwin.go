//go:build darwin

package cow

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// mkfifoat creates a fifo in d. macOS has no mkfifoat in x/sys/unix, so the
// name is resolved from the directory's path (the path it was opened by).
func mkfifoat(d *dirHandle, name string) error {
	return unix.Mkfifo(filepath.Join(d.f.Name(), name), 0o600)
}
