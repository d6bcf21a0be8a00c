//go:build unix

package session

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
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

// setControllingTerminal makes the child a session leader whose
// controlling terminal is its stdin (a pseudo-terminal).
func setControllingTerminal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
}

func setChildAttrs(cmd *exec.Cmd) {
	setPdeathsig(cmd)
	closeFuseOnExec()
}

// closeFuseOnExec marks every open /dev/fuse descriptor close-on-exec, so
// the agent never inherits the overlay's connection. The Go runtime opens
// its own files close-on-exec, but go-fuse's direct mount opens /dev/fuse
// without it. An agent (or any process it starts) holding that descriptor
// keeps the connection of a killed session's overlay alive with no server
// behind it: every access to the root then blocks forever instead of
// failing with ENOTCONN, so recovery cannot even tell the mount is dead;
// and it could answer FUSE requests itself. Other inherited descriptors
// (a make jobserver, a redirection the user asked for) are left alone.
func closeFuseOnExec() {
	if runtime.GOOS != "linux" {
		return
	}
	const dir = "/proc/self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // best effort
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
}
