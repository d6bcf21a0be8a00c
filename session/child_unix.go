//go:build unix

package session

import (
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/term"
)

var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// skipForward avoids a second SIGINT: when the child shares timeagent's
// terminal, the terminal already sent Ctrl-C to the whole foreground process
// group, child included; agents treat a double Ctrl-C as "quit".
func skipForward(s os.Signal, stdin io.Reader) bool {
	if s != syscall.SIGINT {
		return false
	}
	f, ok := stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func setChildAttrs(cmd *exec.Cmd) { setPdeathsig(cmd) }
