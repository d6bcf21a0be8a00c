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
		// A request or an answer fits in the buffers: writing one does not
		// wait for the other side to read.
		InputBufferSize:  64 << 10,
		OutputBufferSize: 64 << 10,
	})
	if err != nil {
		return nil, nil, err
	}
	takeFirstInstance(addr)
	return ln, nil, nil
}

// takeFirstInstance opens and closes the pipe once. ListenPipe's first
// instance is made without read or write access so that Windows 10 keeps
// clients off it; older Windows and wine let a client connect to it, and
// that client then waits forever for an answer (go-winio issues 173, 313).
// Where Windows keeps clients off it, opening it fails with ERROR_PIPE_BUSY.
func takeFirstInstance(addr string) {
	p, err := windows.UTF16PtrFromString(addr)
	if err != nil {
		return
	}
	h, err := windows.CreateFile(p, 0, 0, nil, windows.OPEN_EXISTING, windows.SECURITY_SQOS_PRESENT|windows.SECURITY_ANONYMOUS, 0)
	if err == nil {
		windows.CloseHandle(h)
	}
}

// Dial connects to the control pipe at addr.
func Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return winio.DialPipe(addr, &timeout)
}
