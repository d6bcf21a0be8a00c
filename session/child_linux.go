//go:build linux

package session

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel send SIGTERM to the child if timeagent dies,
// so an agent never keeps writing after its session is gone unnoticed.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
