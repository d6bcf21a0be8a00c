package recovery

import (
	"fmt"
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDeadConn: every answer a FUSE mount gives once its server is gone
// counts as dead, wrapped as the os package wraps it; a live mount's errors
// do not. ECANCELED is what a request gets that a dying server's io_uring
// cancelled: before, it was taken for a live mount, and the first command
// after a kill -9 on a loaded machine failed ("lstat …: operation
// canceled", "not inside a git repository").
func TestDeadConn(t *testing.T) {
	for _, c := range []struct {
		err  error
		dead bool
	}{
		{unix.ENOTCONN, true},
		{unix.ECONNABORTED, true},
		{unix.ECANCELED, true},
		{&fs.PathError{Op: "statfs", Path: "/r", Err: unix.ECANCELED}, true},
		{fmt.Errorf("lstat /r: %w", unix.ENOTCONN), true},
		{nil, false},
		{unix.EACCES, false},
		{unix.ENOENT, false},
		{unix.EINTR, false},
	} {
		if got := deadConn(c.err); got != c.dead {
			t.Errorf("deadConn(%v) = %v, want %v", c.err, got, c.dead)
		}
	}
}
