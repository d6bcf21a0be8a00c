//go:build unix

package sparse

import (
	"syscall"
	"testing"
)

// allocated is the space the file p takes on disk.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
