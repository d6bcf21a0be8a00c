//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// canDetach: Unix hands the root's lock to a child (flock belongs to the
// open file, which the child shares).
const canDetach = true

// startDetached starts self with args in a session of its own, with no
// terminal and no pipes to the agent (which waits for its hook's output to
// close), lock as descriptor 3. It returns the child's pid.
func startDetached(self string, args []string, lock *os.File) (int, error) {
	cmd := exec.Command(self, args...)
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", self, err)
	}
	pid := cmd.Process.Pid
	// Not waited for: it outlives this hook. Release lets the runtime
	// forget it; init reaps it.
	_ = cmd.Process.Release()
	return pid, nil
}
