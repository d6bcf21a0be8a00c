//go:build linux

package session

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer accepts only connections from processes of the same user.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("control socket: not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("control socket: peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("control socket: refused a connection from uid %d", cred.Uid)
	}
	return nil
}
