package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/actions"
	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/hooks"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// hookLockWait is how long a hook waits for another timeagent command's
// lock on the root before it gives up (and logs it): the agent waits for
// the hook.
const hookLockWait = 2 * time.Second

// hookCall bounds a hook's call to a running session.
const hookCall = 5 * time.Second

// maxHookInput bounds what a hook reads from stdin.
const maxHookInput = 16 << 20

// hookCommand is what the agents' hooks run (timeagent integrate installs
// it): it reads the event on stdin, does its work, prints only what the
// agent expects, and exits 0 whatever happens, logging its failures to the
// root's session log.
func (a *app) hookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook AGENT EVENT",
		Short: "Run by an agent's hooks (claude, codex, gemini): one task per prompt, refuse risky commands",
		Example: `  timeagent hook claude UserPromptSubmit < payload.json
  timeagent integrate claude   # writes these hooks into the agent's settings for you`,
		Long: `hook is the command timeagent integrate installs in an agent's hooks. It reads the
hook's event JSON on stdin and always exits 0, printing only what the agent
expects: nothing, or JSON (always for Gemini).

  prompt event (UserPromptSubmit, Gemini BeforeAgent): a new task named after the prompt
  stop event (Stop, Gemini AfterAgent): the prompt's task ends
  pre-tool event (PreToolUse, Gemini BeforeTool): high and critical commands are refused`,
		Args:              cobra.ArbitraryArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			a.runHook(args)
			return nil
		},
	}
	return cmd
}

// hookRun is one hook invocation.
type hookRun struct {
	a     *app
	agent hooks.Agent
	event string
	ev    hooks.Event
	cwd   string
	root  string
	state string
	out   []byte
}

// logf records a hook's failure in the root's session log (stderr when
// there is no state dir to write it to).
func (h *hookRun) logf(format string, args ...any) {
	if h.state != "" {
		if f, err := os.OpenFile(session.LogPath(h.state), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			f.Close()
			session.AppendLog(h.state, fmt.Sprintf("hook %s %s: ", h.agent, h.event), format, args...)
			return
		}
	}
	fmt.Fprintf(h.a.io.err, "timeagent hook: %s\n", fmt.Sprintf(format, args...))
}

func (a *app) runHook(args []string) {
	h := &hookRun{a: a}
	a.json = true // no progress bars on the agent's stderr
	defer func() {
		if r := recover(); r != nil {
			h.logf("internal error: %v", r)
		}
		if len(h.out) > 0 {
			_, _ = a.io.out.Write(h.out)
		}
	}()
	if len(args) != 2 {
		h.logf("usage: timeagent hook AGENT EVENT (got %q)", args)
		return
	}
	agent, err := hooks.ParseAgent(args[0])
	if err != nil {
		h.logf("%v", err)
		return
	}
	h.agent, h.event = agent, args[1]
	h.out = hooks.Nothing(agent)
	data, err := io.ReadAll(io.LimitReader(a.io.in, maxHookInput))
	if err != nil {
		h.logf("read stdin: %v", err)
		return
	}
	kind := hooks.KindOf(agent, h.event)
	if kind == hooks.KindOther {
		return
	}
	h.ev, err = hooks.ParseEvent(data)
	if err != nil {
		h.logf("%v", err)
		return
	}
	if err := h.locate(); err != nil {
		// Outside any repository (hooks installed with --user) there is
		// nothing to record, and that is no failure; a risky command is
		// still refused, which needs neither a root nor a state dir.
		if !errors.Is(err, session.ErrNoRoot) {
			h.logf("%v", err)
		}
		if kind != hooks.KindPreTool {
			return
		}
	}
	switch kind {
	case hooks.KindPreTool:
		err = h.preTool()
	case hooks.KindPrompt:
		err = h.prompt()
	case hooks.KindStop:
		err = h.stop()
	}
	if err != nil {
		h.logf("%v", err)
	}
}

// locate finds the root: --root, else the session's root when the hook
// runs inside it, else the repository around the event's cwd.
func (h *hookRun) locate() error {
	h.cwd = h.ev.Cwd
	if h.cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
		h.cwd = wd
	}
	if h.a.dir != "" {
		d, err := filepath.Abs(h.a.dir)
		if err != nil {
			return fmt.Errorf("-C %s: %w", h.a.dir, err)
		}
		h.cwd = d
	}
	explicit := h.a.root
	if r := os.Getenv(session.EnvRoot); explicit == "" && r != "" && inside(h.cwd, r) {
		explicit = r
	}
	root, err := session.FindRoot(h.cwd, explicit)
	if err != nil {
		return err
	}
	h.root = root
	st, err := session.StateDir(root)
	if err != nil {
		return err
	}
	h.state = st
	h.a.cwd, h.a.rootDir, h.a.state = h.cwd, root, st
	return nil
}

func inside(dir, root string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// preTool classifies a shell tool call's command line with the PATH
// proxies' rule table, refuses high and critical ones through the agent's
// permission answer, and records every classified command on the running
// session's action log (the session log without a session).
func (h *hookRun) preTool() error {
	if ctl := os.Getenv(session.EnvControl); ctl == "" || os.Getenv(session.EnvRoot) != h.root {
		h.waitCapture()
	} else if _, err := h.callSession(ctl, []string{"wait", string(h.agent)}); err != nil {
		// A copy session seals the prompt behind its answer: no tool of
		// the prompt runs before its task is open.
		h.logf("wait for the session's prompt: %v", err)
	}
	line := h.ev.ShellCommand()
	if line == "" {
		return nil
	}
	list := hooks.ClassifyLine(line, h.cwd, h.root)
	if len(list) == 0 {
		return nil
	}
	allow := os.Getenv(actions.EnvAllowHighRisk) == "1"
	top, _ := hooks.Highest(list)
	deny := actions.RiskAtLeast(top.Risk, actions.RiskHigh) && !allow
	if deny {
		shown, _ := actions.DisplayCommand(top.Argv)
		reason := fmt.Sprintf("timeagent refused this %s action (%s risk): %s. timeagent can undo file changes but not "+
			"external actions; ask the user to run it themselves, or to start the session with `timeagent run --allow-high-risk`.",
			top.Category, top.Risk, shown)
		h.out = hooks.Deny(h.agent, h.event, reason)
	}
	dir := os.Getenv(actions.EnvActionsDir)
	sess, _ := strconv.ParseUint(os.Getenv(actions.EnvSession), 10, 64)
	var errs []error
	for _, c := range list {
		act := journal.Action{Session: sess, Time: time.Now().UTC(), Tool: c.Argv[0], Argv: c.Argv, Cwd: h.cwd,
			Category: c.Category, Risk: c.Risk, Decision: actions.DecisionAllowed, ExitCode: actions.ExitUnknown,
			Executable: fmt.Sprintf("(%s %s hook)", h.agent, h.event)}
		if actions.RiskAtLeast(c.Risk, actions.RiskHigh) {
			if allow {
				act.Decision = actions.DecisionApproved
			} else {
				act.Decision, act.ExitCode = actions.DecisionDenied, actions.ExitRefused
			}
		}
		if dir == "" {
			if h.state == "" {
				continue // no root: nowhere to note it
			}
			shown, _ := actions.DisplayCommand(c.Argv)
			h.logf("%s action (%s risk) %s: %s (no session: not on an action log)", c.Category, c.Risk, act.Decision, shown)
			continue
		}
		if err := actions.WriteAction(dir, act); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hookAnswer is what a session answers the hooks' internal command.
type hookAnswer struct {
	Note   string   `json:"note"`
	Task   tasks.ID `json:"task"`
	Sealed tasks.ID `json:"sealed"`
}

// prompt opens the task of a new prompt: in the running session, or as a
// copy capture of the root when none runs.
func (h *hookRun) prompt() error {
	summary := hooks.PromptSummary(h.ev.Prompt)
	ans, err := h.inSessionOrCapture([]string{"prompt", string(h.agent), summary}, func(ws *session.Workspace) (hookAnswer, error) {
		return capturePrompt(ws, summary, h.ev.SessionID, time.Now())
	})
	if err != nil {
		return err
	}
	h.out = hooks.Context(h.agent, h.event, ans.Note)
	return nil
}

// stop ends the prompt's task: in a copy capture, the prompt's changes are
// recorded now, so an undo right after the agent's answer undoes exactly
// that prompt.
func (h *hookRun) stop() error {
	_, err := h.inSessionOrCapture([]string{"stop", string(h.agent)}, func(ws *session.Workspace) (hookAnswer, error) {
		return captureStop(ws, string(h.agent), h.ev.SessionID, time.Now())
	})
	return err
}

// inSessionOrCapture sends argv to the session running on the root (the
// hooks' internal command), or, when none runs, calls capture with the
// root's workspace.
func (h *hookRun) inSessionOrCapture(argv []string, capture func(ws *session.Workspace) (hookAnswer, error)) (hookAnswer, error) {
	if ctl := os.Getenv(session.EnvControl); ctl != "" && os.Getenv(session.EnvRoot) == h.root {
		return h.callSession(ctl, argv)
	}
	if h.detach(argv) {
		return hookAnswer{}, nil
	}
	ws, err := session.OpenWait(h.root, h.state, "hook", hookLockWait)
	var re *session.RunningError
	if errors.As(err, &re) {
		if re.Holder.Control == "" {
			return hookAnswer{}, fmt.Errorf("a session is running on %s (pid %d) without a control channel: the prompt's task is not started", h.root, re.Holder.Pid)
		}
		return h.callSession(re.Holder.Control, argv)
	}
	if err != nil {
		return hookAnswer{}, fmt.Errorf("no capture: %w", err)
	}
	defer ws.Close()
	if err := h.a.recover(ws, true); err != nil {
		return hookAnswer{}, fmt.Errorf("no capture: %w", err)
	}
	return capture(ws)
}

func (h *hookRun) callSession(addr string, argv []string) (hookAnswer, error) {
	full := append([]string{hookSessionCommand, "--conversation", h.ev.SessionID}, argv...)
	resp, err := session.Call(addr, session.Request{Argv: full, Cwd: h.cwd}, hookCall)
	if err != nil {
		return hookAnswer{}, fmt.Errorf("reach the session on %s: %w", h.root, err)
	}
	if resp.Code != 0 {
		return hookAnswer{}, fmt.Errorf("the session on %s: %s", h.root, strings.TrimSpace(resp.Stderr))
	}
	var ans hookAnswer
	if err := json.Unmarshal([]byte(resp.Stdout), &ans); err != nil {
		return hookAnswer{}, fmt.Errorf("the session's answer: %w", err)
	}
	return ans, nil
}

// hookSessionCommand is the hidden command a running session answers for
// the hooks over its control channel.
const hookSessionCommand = "__hook-session"

func (a *app) hookSessionCommand() *cobra.Command {
	var conv string
	cmd := &cobra.Command{
		Use:    hookSessionCommand + " [--conversation ID] prompt|stop|wait AGENT [SUMMARY]",
		Hidden: true,
		Args:   nArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.active == nil {
				return errors.New(hookSessionCommand + " is answered by a running session only")
			}
			act := a.active
			j := act.W.Journal
			now := time.Now()
			if args[0] == "wait" {
				act.Wait()
				return json.NewEncoder(a.io.out).Encode(hookAnswer{Task: act.Task()})
			}
			// Settle waits for a prompt still being sealed: the hooks'
			// state is read after it has saved its own.
			if err := act.Settle(); err != nil {
				return err
			}
			hs, err := hooks.LoadState(act.W.StateDir)
			if err != nil {
				return err
			}
			saw := func() error {
				st, err := j.State()
				if err != nil {
					return err
				}
				hs.Saw(conv, st.Active, now)
				hs.Prompt = ""
				return hooks.SaveState(act.W.StateDir, hs)
			}
			var ans hookAnswer
			switch args[0] {
			case "prompt":
				if len(args) != 3 {
					return &usageError{errors.New("prompt needs a summary")}
				}
				if ans.Note, err = moveNote(j, hs, conv); err != nil {
					return err
				}
				if act.Mode == session.ModeCopy && os.Getenv(envHookSync) != "1" {
					// A copy seal scans the tree: answer now, seal behind
					// the answer; the pre-tool hook waits for it.
					act.PromptAsync(args[2], func(_ session.PromptResult, err error) {
						if err == nil {
							err = saw()
						}
						if err != nil {
							session.AppendLog(act.W.StateDir, "hook", "prompt %q: %v", args[2], err)
						}
					})
					return json.NewEncoder(a.io.out).Encode(ans)
				}
				res, err := act.Prompt(args[2])
				if err != nil {
					return err
				}
				ans.Task, ans.Sealed = res.Task, res.Sealed
			case "stop":
				ans.Task = act.Task()
			default:
				return &usageError{fmt.Errorf("unknown hook step %q", args[0])}
			}
			if err := saw(); err != nil {
				return err
			}
			return json.NewEncoder(a.io.out).Encode(ans)
		},
	}
	cmd.Flags().StringVar(&conv, "conversation", "", "the agent's session id")
	return cmd
}

// moveNote is the note for the agent in conversation conv when the files
// moved since it last saw them (hooks.Note), or "". Another conversation
// has seen nothing.
func moveNote(j *journal.Journal, hs hooks.State, conv string) (string, error) {
	v, ok := hs.Views[conv]
	if !ok {
		return "", nil
	}
	st, err := j.State()
	if err != nil {
		return "", err
	}
	tree, err := j.Tree()
	if err != nil {
		return "", err
	}
	return hooks.Note(tree, j, v.Task, st.Active, v.At)
}

// capturePrompt is the prompt hook without a session: what changed since
// the last capture is recorded first (as the previous prompt's task when
// its stop hook never came, else as an outside task: the user's edits
// between prompts), then the new prompt is remembered for its stop.
func capturePrompt(ws *session.Workspace, summary, conv string, now time.Time) (hookAnswer, error) {
	hs, err := hooks.LoadState(ws.StateDir)
	if err != nil {
		return hookAnswer{}, err
	}
	var ans hookAnswer
	if ans.Note, err = moveNote(ws.Journal, hs, conv); err != nil {
		return ans, err
	}
	kind, what := tasks.KindOutside, ""
	if hs.Prompt != "" {
		kind, what = tasks.KindAgent, hs.Prompt
	}
	if ans.Sealed, err = captureTask(ws, &hs, kind, what, now); err != nil {
		return ans, err
	}
	st, err := ws.Journal.State()
	if err != nil {
		return ans, err
	}
	ans.Task = st.Active
	hs.Prompt = summary
	hs.Saw(conv, st.Active, now)
	return ans, hooks.SaveState(ws.StateDir, hs)
}

// captureStop is the stop hook without a session: the prompt's changes
// become its task.
func captureStop(ws *session.Workspace, agent, conv string, now time.Time) (hookAnswer, error) {
	hs, err := hooks.LoadState(ws.StateDir)
	if err != nil {
		return hookAnswer{}, err
	}
	summary := hs.Prompt
	if summary == "" {
		summary = agent + ": work of a turn whose prompt was not seen"
	}
	var ans hookAnswer
	if ans.Sealed, err = captureTask(ws, &hs, tasks.KindAgent, summary, now); err != nil {
		return ans, err
	}
	st, err := ws.Journal.State()
	if err != nil {
		return ans, err
	}
	ans.Task = st.Active
	hs.Prompt = ""
	hs.Saw(conv, st.Active, now)
	return ans, hooks.SaveState(ws.StateDir, hs)
}

// captureTask scans the root against the stat cache and records what
// changed as a task of kind (a child of the active task, active and
// applied), then saves the scan as the stat cache: in that order, so a
// crash in between finds the changes again. hs.Capturing marks the task
// while that happens: a task found committed with the cache not saved is
// not recorded twice. It returns the new task (0: nothing changed).
func captureTask(ws *session.Workspace, hs *hooks.State, kind tasks.Kind, summary string, now time.Time) (tasks.ID, error) {
	j := ws.Journal
	st, err := j.State()
	if err != nil {
		return 0, err
	}
	if st.Applied != st.Active {
		return 0, fmt.Errorf("no capture: the files are at task %d, not at the active task %d (an isolated session's work is not applied): run `timeagent apply` or `timeagent undo`", st.Applied, st.Active)
	}
	c, err := session.ScanCapture(ws)
	if err != nil {
		return 0, err
	}
	if hs.Capturing != 0 {
		if _, err := j.Task(hs.Capturing); err == nil {
			// Committed before a crash, the cache not saved: what that
			// task holds is not recorded again; what changed since is.
			layer, err := j.Layer(hs.Capturing)
			if err != nil {
				return 0, err
			}
			c.Changes = changesSince(c.Changes, layer)
		} else if !errors.Is(err, journal.ErrNotFound) {
			return 0, err
		}
	}
	if len(c.Changes) == 0 {
		if err := c.Save(); err != nil {
			return 0, err
		}
		if hs.Capturing != 0 {
			hs.Capturing = 0
			return 0, hooks.SaveState(ws.StateDir, *hs)
		}
		return 0, nil
	}
	tree, err := j.Tree()
	if err != nil {
		return 0, err
	}
	id := cow.NextTaskID(tree, st)
	if kind == tasks.KindOutside {
		summary = fmt.Sprintf("changes made outside a session (%d files)", len(c.Changes))
	}
	t := tasks.Task{ID: id, Parent: st.Active, Summary: tasks.Summarize(summary), Kind: kind, Created: now, Ended: now}
	hs.Capturing = id
	if err := hooks.SaveState(ws.StateDir, *hs); err != nil {
		return 0, err
	}
	if _, err := cow.CreateTask(j, cow.NewTask{Task: t, Changes: c.Changes, Activate: true, Applied: true}); err != nil {
		return 0, fmt.Errorf("record the prompt's changes: %w", err)
	}
	if err := c.Save(); err != nil {
		return 0, err
	}
	hs.Capturing = 0
	return id, nil
}

// changesSince returns the changes of a scan against a stale cache that a
// committed layer does not already hold: a path the layer left as the scan
// finds it is dropped, one changed again starts from the layer's state.
func changesSince(changes, layer []journal.Change) []journal.Change {
	after := make(map[string]journal.NodeState, len(layer))
	for _, c := range layer {
		after[c.Path] = c.After
	}
	var out []journal.Change
	seen := make(map[string]bool, len(changes))
	for _, c := range changes {
		seen[c.Path] = true
		if a, ok := after[c.Path]; ok {
			if a.Equal(c.After) {
				continue
			}
			c.Before = a
		}
		out = append(out, c)
	}
	// A path the scan finds as the stale cache has it (the layer's
	// before-state) was changed back since the layer.
	for _, c := range layer {
		if !seen[c.Path] && !c.Before.Equal(c.After) {
			out = append(out, journal.Change{Path: c.Path, Before: c.After, After: c.Before})
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Path < out[k].Path })
	return out
}
