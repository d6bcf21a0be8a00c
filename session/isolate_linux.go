//go:build linux

package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/timeagent-dev/timeagent/internal/mountinfo"
)

// EnvIsolated marks the timeagent process that runs inside its own mount
// namespace (run --isolate).
const EnvIsolated = "TIMEAGENT_ISOLATED"

// Isolated reports whether this process is the namespaced half of run --isolate.
func Isolated() bool { return os.Getenv(EnvIsolated) == "1" }

// ReexecIsolated runs this same timeagent command line again in a private
// mount namespace (the kernel makes its mounts private), so the overlay it
// mounts is seen only by the agent's process tree. It returns the exit code.
func ReexecIsolated(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("--isolate: find the timeagent executable: %w", err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), EnvIsolated+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGTERM}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd.Dir, _ = os.Getwd() // the namespaced half finds the root from here
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("--isolate: start in a private mount namespace: %w", err)
	}
	// This half stays in the namespace where the real files are seen: the
	// agent must not reach them through its /proc/<pid>/cwd or root.
	defer guardSession()()
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	return exitStatus(cmd.ProcessState, err), nil
}

// detachOtherOverlays detaches, in this private mount namespace only, the
// overlays of other timeagent sessions that the namespace copied when it was
// made. The agent does not need them, and a copy would keep another
// session's connection alive after that session unmounts (its server then
// has to abort the connection to stop).
func detachOtherOverlays() error {
	mounts, err := mountinfo.Read()
	if err != nil {
		return fmt.Errorf("--isolate: %w", err)
	}
	var errs []error
	for _, m := range mounts {
		if m.FSType != "fuse.timeagent" {
			continue
		}
		if err := syscall.Unmount(m.Point, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("--isolate: detach the copy of %s: %w", m.Point, err))
		}
	}
	return errors.Join(errs...)
}
