package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/hooks"
	"github.com/timeagent-dev/timeagent/session"
)

// captureHolder is how a detached capture describes itself in the root's
// lock: the hooks that come after it wait for it (waitCapture).
const captureHolder = "hook-capture"

// hookCaptureWait bounds how long a hook waits for a detached capture still
// running (the first capture of a big tree takes seconds); the hooks'
// timeout in the agents' settings is longer (hooks.hookEntry).
const hookCaptureWait = 100 * time.Second

// envHookSync set to 1 makes the prompt and stop hooks record before they
// answer, without a session and in a copy session alike (tests that edit
// files between hooks without the pre-tool hook that waits).
const envHookSync = "TIMEAGENT_HOOK_SYNC"

// hookCaptureCommand is the hidden command a detached capture runs.
const hookCaptureCommand = "__hook-capture"

// detach answers a prompt or stop hook at once when no session runs: the
// copy capture (a scan of the tree) goes to a child process that inherits
// the root's lock, and the agent's next tool call waits for it in its
// pre-tool hook (waitCapture), so nothing the agent does for the prompt
// can run before the capture that opens its task. A prompt hook whose
// conversation may have to be told that the files moved (the active mark
// differs from what it last saw, or is unknown) is not detached: the note
// needs the journal. It returns false when the synchronous path must run.
func (h *hookRun) detach(argv []string) bool {
	if !canDetach || os.Getenv(envHookSync) == "1" {
		return false
	}
	l, err := h.lockForCapture()
	if err != nil {
		return false // the synchronous path waits, reaches the session, or reports it
	}
	handed := false
	defer func() {
		if !handed {
			l.Release()
		}
	}()
	if argv[0] == "prompt" {
		hs, err := hooks.LoadState(h.state)
		if err != nil {
			return false
		}
		if v, seen := hs.Views[h.ev.SessionID]; seen {
			if id, ok := session.ReadActiveMark(h.state); !ok || id != v.Task {
				return false
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		h.logf("detach the capture: %v", err)
		return false
	}
	args := []string{hookCaptureCommand, string(h.agent), argv[0], h.root, h.ev.SessionID,
		strconv.FormatInt(time.Now().UnixNano(), 10)}
	if argv[0] == "prompt" {
		args = append(args, argv[2])
	}
	pid, err := startDetached(self, args, l.File())
	if err != nil {
		h.logf("detach the capture: %v", err)
		return false
	}
	handed = true
	if err := l.HandOff(session.Holder{Pid: pid, Command: captureHolder}); err != nil {
		h.logf("hand the lock to the capture (pid %d): %v", pid, err)
	}
	return true
}

// lockForCapture takes the root's lock for a capture, waiting longer for a
// detached capture than for another command.
func (h *hookRun) lockForCapture() (*session.Lock, error) {
	start := time.Now()
	for {
		l, held, err := session.TryLock(h.state, session.Holder{Pid: os.Getpid(), Command: "hook"})
		if !errors.Is(err, session.ErrLocked) || held == nil || held.Command == "run" {
			return l, err
		}
		wait := hookLockWait
		if held.Command == captureHolder {
			wait = hookCaptureWait
		}
		if time.Since(start) > wait {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCapture holds a pre-tool hook until a detached capture of the root
// has finished, so the tool's changes belong to the prompt's task.
func (h *hookRun) waitCapture() {
	if !canDetach || h.state == "" {
		return
	}
	start := time.Now()
	for {
		l, held, err := session.TryLock(h.state, session.Holder{Pid: os.Getpid(), Command: "hook"})
		if err == nil {
			l.Release()
			return
		}
		if !errors.Is(err, session.ErrLocked) || held == nil || held.Command != captureHolder {
			return
		}
		if time.Since(start) > hookCaptureWait {
			h.logf("the capture of the prompt (pid %d) still runs after %s: the tool call goes on", held.Pid, hookCaptureWait)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hookCaptureCmd is the detached capture: it adopts the root's lock from
// the hook that started it (descriptor 3), records the capture as the hook
// would have, and logs its failures to the root's session log.
func (a *app) hookCaptureCmd() *cobra.Command {
	return &cobra.Command{
		Use:               hookCaptureCommand + " AGENT prompt|stop ROOT CONVERSATION UNIXNANO [SUMMARY]",
		Hidden:            true,
		Args:              cobra.RangeArgs(5, 6),
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			a.json = true
			h := &hookRun{a: a, event: args[1], root: args[2]}
			agent, err := hooks.ParseAgent(args[0])
			if err != nil {
				return err
			}
			h.agent = agent
			if h.state, err = session.StateDir(h.root); err != nil {
				return err
			}
			if err := a.detachedCapture(h, args); err != nil {
				h.logf("%v", err)
			}
			return nil
		},
	}
}

func (a *app) detachedCapture(h *hookRun, args []string) error {
	f := os.NewFile(3, "lock")
	if f == nil {
		return errors.New("no lock handed over")
	}
	l, err := session.AdoptLock(h.state, f)
	if err != nil {
		f.Close()
		return err
	}
	ws, err := session.OpenLocked(h.root, h.state, l)
	if err != nil {
		return fmt.Errorf("no capture: %w", err)
	}
	defer ws.Close()
	a.cwd, a.rootDir, a.state = h.root, h.root, h.state
	if err := a.recover(ws, true); err != nil {
		return fmt.Errorf("no capture: %w", err)
	}
	ns, err := strconv.ParseInt(args[4], 10, 64)
	if err != nil {
		return fmt.Errorf("no capture: time %q: %w", args[4], err)
	}
	now := time.Unix(0, ns)
	switch args[1] {
	case "prompt":
		if len(args) != 6 {
			return errors.New("no capture: a prompt needs its summary")
		}
		_, err = capturePrompt(ws, args[5], args[3], now)
	case "stop":
		_, err = captureStop(ws, string(h.agent), args[3], now)
	default:
		err = fmt.Errorf("no capture: unknown step %q", args[1])
	}
	return err
}
