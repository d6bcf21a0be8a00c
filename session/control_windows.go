package session

import (
	"crypto/rand"
	"fmt"
	"net"
	"time"

	"github.com/Microsoft/go-winio"
	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/windows"
)

// ControlAddr returns a new control pipe name for a state dir. The random
// part makes the name impossible to take first; the session records it in
// its lock, which only its user can read.
func ControlAddr(stateDir string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf(`\\.\pipe\timeagent-%016x-%x`, xxhash.Sum64String(stateDir), b)
}

// listen creates the named pipe, which only the current user can open and
// remote machines cannot reach.
func listen(addr string) (net.Listener, func(), error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, nil, fmt.Errorf("find the current user: %w", err)
	}
	ln, err := winio.ListenPipe(addr, &winio.PipeConfig{
		SecurityDescriptor: "D:P(A;;GA;;;" + u.User.Sid.String() + ")",
	})
	if err != nil {
		return nil, nil, err
	}
	return ln, nil, nil
}

// Dial connects to the control pipe at addr.
func Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return winio.DialPipe(addr, &timeout)
}
