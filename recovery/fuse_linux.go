//go:build linux

package recovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/fusectl"
	"github.com/timeagent-dev/timeagent/internal/mountinfo"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// timeagentMounts returns the mount points of timeagent overlays.
func timeagentMounts() ([]string, error) { return mountinfo.Overlays() }

// DetachDeadAbove lazily unmounts a timeagent overlay whose server died and
// that covers path (the user's directory may be inside a dead mount, which
// answers every access with ENOTCONN). A live overlay is never touched: its
// mount point can be opened. It returns the detached mount point, if any;
// the workspace opened next on it reports it (UnmountStale).
func DetachDeadAbove(path string) (string, error) {
	mounts, err := timeagentMounts()
	if err != nil {
		return "", err
	}
	for _, mp := range mounts {
		if path != mp && !strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		if !dead(mp) {
			continue
		}
		if err := fusectl.Unmount(mp, true); err != nil {
			return "", fmt.Errorf("detach the dead overlay on %s: %w (try: fusermount3 -u -z %s)", mp, err, mp)
		}
		detached.Store(mp, true)
		return mp, nil
	}
	return "", nil
}

// fuseMountedAt reports whether a FUSE filesystem is mounted exactly at dir,
// and its device ("major:minor").
func fuseMountedAt(dir string) (bool, string, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return false, "", err
	}
	for _, m := range mounts {
		if m.Point == dir && strings.HasPrefix(m.FSType, "fuse") {
			return true, m.Dev, nil
		}
	}
	return false, "", nil
}

// abortConn aborts the FUSE connection of device dev ("major:minor"), so a
// process that still holds the detached mount (a shell inside it, a
// descriptor kept by a surviving child of the agent) gets "transport
// endpoint is not connected" instead of waiting for a server that is gone.
func abortConn(dev string) error {
	_, minor, ok := strings.Cut(dev, ":")
	n, err := strconv.ParseUint(minor, 10, 32)
	if !ok || err != nil {
		return fmt.Errorf("abort fuse connection: bad device %q", dev)
	}
	// Without the control file system (a normal user cannot mount it) the
	// connection of a dead server has ended anyway: its /dev/fuse
	// descriptor closed with it.
	if err := fusectl.Abort(uint32(n)); err != nil && !errors.Is(err, fusectl.ErrGone) && !errors.Is(err, fusectl.ErrNoControl) {
		return err
	}
	return nil
}

// UnmountStale lazily detaches a FUSE mount left on root by a dead session,
// so the user's directory is readable again (never "transport endpoint is not
// connected").
func UnmountStale(root string) (bool, error) {
	if detachedEarlier(root) {
		return true, nil
	}
	mounted, dev, err := fuseMountedAt(root)
	if err != nil || !mounted {
		return false, err
	}
	if err := fusectl.Unmount(root, true); err != nil {
		return false, fmt.Errorf("detach stale mount on %s: %w (try: fusermount3 -u -z %s)", root, err, root)
	}
	// The session is dead (its lock is free): nothing may serve the mount
	// any more, wherever a copy of it is still held.
	if err := abortConn(dev); err != nil {
		return true, err
	}
	return true, nil
}

// detached records the mounts DetachDeadAbove took away in this process, so the
// workspace opened next still reports (and recover explains) them.
var detached sync.Map

func detachedEarlier(root string) bool {
	_, ok := detached.LoadAndDelete(root)
	return ok
}

// DetachDead lazily detaches a dead timeagent overlay (its server is gone:
// the kernel answers "transport endpoint is not connected") on dir or on one
// of its parents, so dir can be found and read before the root's lock is
// taken. It costs one open when dir is readable.
func DetachDead(dir string) error {
	if !dead(dir) {
		return nil
	}
	_, err := DetachDeadAbove(filepath.Clean(dir))
	return err
}

// deadWait bounds the open that tells a dead overlay from a live one.
const deadWait = 3 * time.Second

// dead reports whether dir lies on a FUSE mount whose server is gone. It
// asks for the file system's statistics: stat and even open may be
// answered from the kernel's caches (an overlay's attributes last an hour,
// and directories are opened without asking the server) long after the
// server died; statfs always reaches the server. A dead connection answers
// ENOTCONN, or ECONNABORTED or ECANCELED where it used io_uring. A call that gets no
// answer within deadWait (a connection kept alive but not served) counts
// as not dead: the command goes on to the root's lock, where a dead
// session's mount is detached and its connection aborted without touching
// it (UnmountStale).
func dead(dir string) bool {
	done := make(chan error, 1)
	go func() {
		var st unix.Statfs_t
		done <- unix.Statfs(dir, &st)
	}()
	select {
	case err := <-done:
		return deadConn(err)
	case <-time.After(deadWait):
		return false
	}
}

// deadConn reports whether err is what the kernel answers on a FUSE mount
// whose server is gone: ENOTCONN, ECONNABORTED (a dead io_uring
// connection), or ECANCELED (a request the dying server's ring cancelled:
// no live overlay answers it).
func deadConn(err error) bool {
	return errors.Is(err, unix.ENOTCONN) || errors.Is(err, unix.ECONNABORTED) || errors.Is(err, unix.ECANCELED)
}

// finishDeadFuse applies the dead session's recorded work onto the real tree
// (which the overlay left untouched) as a transition from the session's base
// to its last task: paths that a process changed in the real tree under the
// overlay are first kept as an outside task (a child of the base), as for
// every apply. An apply the session had started is finished first. It
// returns how many paths the apply wrote and the outside task (0: none).
func finishDeadFuse(t Target, s journal.Session, last tasks.ID) (int, tasks.ID, error) {
	j := t.Journal
	if last != 0 {
		if err := sealTask(t, last); err != nil {
			return 0, 0, err
		}
	}
	if _, err := cow.FinishIntent(j, t.Tree, t.progress()); err != nil {
		return 0, 0, err
	}
	st, err := j.State()
	if err != nil {
		return 0, 0, err
	}
	if st.Applied == st.Active {
		return 0, 0, nil
	}
	res, err := cow.Transition(j, t.Tree, st.Active, cow.TransitionOptions{
		Reason: "recovery of session " + fmt.Sprint(s.ID), Yes: true, Progress: t.progress(), Now: t.Now})
	if err != nil {
		return 0, res.Outside, err
	}
	return res.Written, res.Outside, nil
}
