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

	"golang.org/x/sys/unix"

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
//
// A normal user may not make a mount namespace alone: the namespace then
// belongs to a new user namespace that maps the user to itself (same uid
// and gid; other users' files show as nobody), in which the timeagent
// process may mount the overlay itself. The agent gets no capability there.
// Where the system forbids user namespaces, it refuses and says so.
func ReexecIsolated(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("--isolate: find the timeagent executable: %w", err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), EnvIsolated+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGTERM}
	if os.Geteuid() != 0 {
		uid, gid := os.Geteuid(), os.Getegid()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			// The overlay is mounted by the timeagent process itself
			// (dropAgentCaps keeps the capability from the agent).
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
			Pdeathsig:   syscall.SIGTERM,
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd.Dir, _ = os.Getwd() // the namespaced half finds the root from here
	if err := cmd.Start(); err != nil {
		if os.Geteuid() != 0 {
			return 1, fmt.Errorf("--isolate: a normal user needs a user namespace for a private mount namespace, and this system refuses one (%v): "+
				"allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, or an AppArmor profile), run as root, or run without --isolate", err)
		}
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
		if m.FSType != mountinfo.OverlayType {
			continue
		}
		err := syscall.Unmount(m.Point, syscall.MNT_DETACH)
		if err == syscall.EPERM || err == syscall.EACCES {
			// A normal user's namespace: the copies are locked in it (and
			// other users' are out of reach); a session of this user still
			// ends at once, aborting its connection through the fuse
			// control file system where it is mounted.
			continue
		}
		if err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("--isolate: detach the copy of %s: %w", m.Point, err))
		}
	}
	return errors.Join(errs...)
}

// dropAgentCaps clears, on the calling thread, the ambient capabilities
// the isolated timeagent got in its user namespace (a normal user's run
// --isolate), so the agent forked from that (locked) thread has none: it
// cannot unmount the overlay and reach the real tree. Capabilities belong
// to threads: the other threads of timeagent keep theirs (it unmounts the
// overlay at the end).
func dropAgentCaps() error {
	if !Isolated() || os.Geteuid() == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("--isolate: drop the agent's capabilities: %w", err)
	}
	return nil
}
