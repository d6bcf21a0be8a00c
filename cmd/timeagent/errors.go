package main

import (
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// message turns an error into the one line the user sees: the cause and,
// where there is one, the fix. This is the one place errors become words.
func message(err error) string {
	s := err.Error()
	var ua *unfinishedApply
	if errors.As(err, &ua) {
		fix := "fix that"
		switch {
		case errors.Is(err, syscall.ENOSPC):
			fix = "free some disk space"
		case errors.Is(err, fs.ErrPermission):
			fix = "make the file replaceable (immutable or append-only: see lsattr, then chattr -i or -a)"
		}
		return "an apply could not finish: " + s + ": " + fix + " and run `timeagent recover`, or go back past it with `timeagent undo --session`; status, log and diff still work"
	}
	switch {
	case errors.Is(err, session.ErrNoRoot):
		return s + ": run timeagent inside a git repository, or pass --root DIR to protect a plain directory"
	case errors.Is(err, journal.ErrForeign):
		return s + ": set TIMEAGENT_HOME to another directory, or move that state directory away"
	case errors.Is(err, journal.ErrSchema):
		return s + ": use the timeagent version that wrote it, or move the state directory away to start a new history"
	case errors.Is(err, journal.ErrCorrupt):
		return s + ": run `timeagent verify` for details; the repository itself was not changed"
	case errors.Is(err, journal.ErrBusy):
		return s + ": wait for the other timeagent command to finish"
	case errors.Is(err, syscall.ENOSPC):
		return s + ": free some disk space and run the command again"
	case errors.Is(err, session.ErrNoOverlay):
		return s // names the fix itself (fuse3, /dev/fuse), never the state directory
	case errors.Is(err, fs.ErrPermission):
		return s + ": check the permissions (the state directory can be moved with TIMEAGENT_HOME)"
	case errors.Is(err, session.ErrStateDir):
		return s + ": set " + session.HomeEnv + " to a writable directory"
	case errors.Is(err, tasks.ErrAtBase):
		return s + " (timeagent log shows the history)"
	case errors.Is(err, tasks.ErrAtLeaf):
		return s + " (timeagent log shows the history; timeagent switch ID reaches another branch)"
	case errors.Is(err, tasks.ErrUnknown):
		return s + ": timeagent log lists the task ids"
	case errors.Is(err, session.ErrViewDrift):
		return s + ": the view was not changed; pass --yes to move over them (they are kept as a task first)"
	case errors.Is(err, cow.ErrDrift):
		return s + ": nothing was changed; run it on a terminal to confirm, or pass --yes (the changed files are kept as a task first)"
	case errors.Is(err, session.ErrInSession):
		return s
	}
	return s
}

// writeJSONError prints an error as JSON on stderr (for --json callers).
func writeJSONError(w io.Writer, msg string) {
	writeJSON(w, map[string]any{"schemaVersion": schemaVersion, "error": msg})
}
