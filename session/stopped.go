package session

import (
	"fmt"
	"path/filepath"
	"strings"
)

// StoppedError means the session owning a root is stopped (Ctrl-Z, SIGSTOP):
// its overlay and its control socket answer nothing until it is resumed, so
// a command that needs them reports this at once instead of waiting.
type StoppedError struct {
	Root    string
	Pid     int
	Session uint64
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("session %d on %s (timeagent pid %d) is stopped (Ctrl-Z?): resume it with `fg` in its terminal or `kill -CONT %d`, then run this again",
		e.Session, e.Root, e.Pid, e.Pid)
}

// Resume is the command that resumes the stopped session.
func (e *StoppedError) Resume() string { return fmt.Sprintf("fg, or kill -CONT %d", e.Pid) }

// HolderStopped returns a *StoppedError when h is a session whose process is
// stopped, else nil.
func HolderStopped(root string, h *Holder) error {
	if h == nil || h.Command != "run" || h.Pid <= 0 || !processStopped(h.Pid) {
		return nil
	}
	return &StoppedError{Root: root, Pid: h.Pid, Session: h.Session}
}

// CheckStopped reports (as a *StoppedError) a stopped session whose overlay
// covers path, without touching the overlay: every access to it would wait,
// uninterruptibly for some calls, until the session resumes. It reads only
// the mount table and the session's lock file in its state dir.
func CheckStopped(path string) error {
	mounts, err := overlayMounts()
	if err != nil || len(mounts) == 0 {
		return nil
	}
	path = filepath.Clean(path)
	for _, mp := range mounts {
		if path != mp && !strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		dir, err := stateDirPath(mp)
		if err != nil || InsideRoot(mp, dir) {
			continue // reading a state dir inside the overlay would wait too
		}
		if err := HolderStopped(mp, ReadHolder(dir)); err != nil {
			return err
		}
	}
	return nil
}
