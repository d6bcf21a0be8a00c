//go:build windows

package session

import (
	"io"
	"os"
	"os/exec"
)

var forwardedSignals = []os.Signal{os.Interrupt}

// skipForward: on Windows the console delivers Ctrl-C to every attached process.
func skipForward(os.Signal, io.Reader) bool { return true }

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 1
	}
	return ps.ExitCode()
}

func setChildAttrs(*exec.Cmd) {}

// setControllingTerminal: Windows has no controlling terminals (the hotkey's
// pseudo-terminal is Unix-only).
func setControllingTerminal(*exec.Cmd) {}
