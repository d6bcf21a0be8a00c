//go:build linux

package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
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
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("--isolate: start in a private mount namespace: %w", err)
	}
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
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("--isolate: read mount table: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options ... - fstype source ...
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "fuse.timeagent ") {
			continue
		}
		mp := unescapeOctal(f[4])
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("--isolate: detach the copy of %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeOctal decodes mountinfo's octal escapes (\040 for a space).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
