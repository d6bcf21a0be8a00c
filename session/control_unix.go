//go:build !windows

package session

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxSocketPath is the longest path a socket address holds (sun_path is 108
// bytes on Linux, 104 on macOS and the BSDs, with a terminating NUL).
const maxSocketPath = 103

// ControlAddr returns the control socket of a state dir: a socket in the
// private directory "control" of the state dir (never an abstract name,
// which another user could take first and which other network namespaces
// cannot reach).
func ControlAddr(stateDir string) string {
	return filepath.Join(stateDir, "control", "sock")
}

// listen makes the socket's private directory, removes a socket a dead
// session left, and listens; clean removes the socket again.
func listen(addr string) (net.Listener, func(), error) {
	dir := filepath.Dir(addr)
	if err := privateDir(dir); err != nil {
		return nil, nil, err
	}
	if err := os.Remove(addr); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove the socket a dead session left: %w", err)
	}
	var ln *net.UnixListener
	err := withSocketPath(addr, func(p string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	ln.SetUnlinkOnClose(false) // the name it was bound with may be a /proc path
	return ln, func() { os.Remove(addr) }, nil
}

// Dial connects to the control socket at addr.
func Dial(addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := withSocketPath(addr, func(p string) error {
		var err error
		c, err = net.DialTimeout("unix", p, timeout)
		return err
	})
	return c, err
}

// privateDir makes dir (mode 0700) unless it exists, and checks that it is a
// directory of this user that only this user can enter.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: remove it", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): remove it", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}
