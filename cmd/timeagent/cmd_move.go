package main

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

type moveOptions struct {
	yes     bool
	session bool
}

type moveJSON struct {
	SchemaVersion int      `json:"schemaVersion"`
	Action        string   `json:"action"`
	From          uint64   `json:"from"`
	To            uint64   `json:"to"`
	OutsideTask   uint64   `json:"outsideTask,omitempty"`
	Written       int      `json:"written"`
	Drifted       []string `json:"drifted"`
}

func (a *app) undoCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "undo [N | NAME]",
		Short: "Go back N tasks (default 1), or back to the task tagged NAME, restoring the files byte for byte",
		Example: `  timeagent undo             # back one task
  timeagent undo 3           # back three tasks
  timeagent undo good        # back to the task tagged good
  timeagent undo --session   # back to before the latest session
  timeagent undo --yes       # without asking about files changed since`,
		Args:              nArgs(0, 1),
		ValidArgsFunction: firstArg(a.completeTagNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag := ""
			n, err := countArg(args)
			if err != nil && cow.ValidTagName(args[0]) == nil {
				tag, err = args[0], nil
			}
			if err != nil {
				return err
			}
			if o.session && len(args) > 0 {
				return &usageError{errors.New("undo: give either N or --session, not both")}
			}
			return a.move("undo", o, func(ws *session.Workspace, tree *tasks.Tree, st journal.State) (tasks.ID, error) {
				if o.session {
					return sessionBase(ws.Journal, tree, st.Active)
				}
				if tag != "" {
					return undoToTag(ws.Journal, tree, st.Active, tag)
				}
				return tree.Undo(st.Active, n)
			})
		},
	}
	cmd.Flags().BoolVar(&o.session, "session", false, "go back to before the latest session")
	a.moveFlags(cmd, &o)
	return cmd
}

func (a *app) redoCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "redo [N]",
		Short: "Go forward N tasks (default 1), following the most recently visited branch",
		Example: `  timeagent redo      # forward one task, on the branch visited last
  timeagent redo 2`,
		Args: nArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := countArg(args)
			if err != nil {
				return err
			}
			return a.move("redo", o, func(_ *session.Workspace, tree *tasks.Tree, st journal.State) (tasks.ID, error) {
				return tree.Redo(st.Active, n)
			})
		},
	}
	a.moveFlags(cmd, &o)
	return cmd
}

func (a *app) switchCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "switch TASK",
		Short: "Go to any task of the tree (0 = the base, before the first task), by id or tag name",
		Example: `  timeagent switch 7      # any task of the tree (timeagent log shows them)
  timeagent switch 0      # the base, before the first task
  timeagent switch good   # the task tagged good`,
		Args:              nArgs(1, 1),
		ValidArgsFunction: firstArg(a.completeTasks),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := strconv.ParseUint(args[0], 10, 64); err != nil && cow.ValidTagName(args[0]) != nil {
				_, err := parseTaskID(args[0])
				return err
			}
			return a.move("switch", o, func(ws *session.Workspace, tree *tasks.Tree, _ journal.State) (tasks.ID, error) {
				id, err := resolveTask(ws.Journal, args[0])
				if err != nil {
					return 0, err
				}
				return tree.Switch(id)
			})
		},
	}
	a.moveFlags(cmd, &o)
	return cmd
}

func (a *app) applyCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Write the active task's state to the real files (after run --isolate)",
		Example: `  timeagent run --isolate -- claude
  timeagent diff             # review what the agent did
  timeagent apply            # then write it to your files (or timeagent undo)`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.active != nil {
				return errors.New("apply: a session is running; its work is applied when it ends")
			}
			err := a.move("apply", o, func(_ *session.Workspace, tree *tasks.Tree, st journal.State) (tasks.ID, error) {
				if st.Applied == st.Active {
					return 0, errNothingToApply{st.Active}
				}
				return st.Active, nil
			})
			var nothing errNothingToApply
			if errors.As(err, &nothing) {
				fmt.Fprintln(a.io.err, "timeagent: "+nothing.Error())
				return nil
			}
			return err
		},
	}
	a.moveFlags(cmd, &o)
	return cmd
}

// errNothingToApply: the real files already show the active task.
type errNothingToApply struct{ task tasks.ID }

func (e errNothingToApply) Error() string {
	return fmt.Sprintf("nothing to apply: the files already show task %d", e.task)
}

func (a *app) moveFlags(cmd *cobra.Command, o *moveOptions) {
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "apply even over files changed since their task ended (they are kept as a task first)")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
}

// undoToTag is where `undo NAME` goes: the task tagged NAME, which must be
// before active (one of its ancestors).
func undoToTag(j *journal.Journal, tree *tasks.Tree, active tasks.ID, name string) (tasks.ID, error) {
	id, err := resolveTask(j, name)
	var ue *usageError
	if errors.As(err, &ue) {
		return 0, &usageError{fmt.Errorf("invalid count %q: give a positive number of tasks or a tag name (timeagent tag lists them)", name)}
	}
	if err != nil {
		return 0, err
	}
	for _, x := range tree.Ancestors(active) {
		if x == id && x != active {
			return id, nil
		}
	}
	return 0, fmt.Errorf("tag %s names task %d, which is not before the active task %d: use timeagent switch %s", name, id, active, name)
}

func countArg(args []string) (int, error) {
	if len(args) == 0 {
		return 1, nil
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return 0, &usageError{fmt.Errorf("invalid count %q: give a positive number of tasks", args[0])}
	}
	return n, nil
}

// sessionBase is where `undo --session` goes from active: the base of the
// latest session that started before active (its base is an ancestor of
// active). Run again at that base, it goes to before the session before.
func sessionBase(j *journal.Journal, tree *tasks.Tree, active tasks.ID) (tasks.ID, error) {
	sessions, err := j.Sessions()
	if err != nil {
		return 0, err
	}
	if len(sessions) == 0 {
		return 0, errors.New("no session recorded yet: there is nothing to undo")
	}
	above := map[tasks.ID]bool{tasks.Base: active != tasks.Base}
	for _, id := range tree.Ancestors(active) {
		if id != active {
			above[id] = true
		}
	}
	for i := len(sessions) - 1; i >= 0; i-- {
		if above[sessions[i].Base] {
			return sessions[i].Base, nil
		}
	}
	return 0, fmt.Errorf("nothing to undo: no session started before task %d (timeagent log shows the history)", active)
}

type targetFunc func(ws *session.Workspace, tree *tasks.Tree, st journal.State) (tasks.ID, error)

// move runs undo, redo or switch: find the target, confirm what needs
// confirming, and apply.
func (a *app) move(action string, o moveOptions, target targetFunc) error {
	return a.withWorkspace(action, func(ws *session.Workspace) error {
		j := ws.Journal
		if a.active != nil {
			if err := a.active.Settle(); err != nil {
				return err
			}
		}
		st, err := j.State()
		if err != nil {
			return err
		}
		tree, err := j.Tree()
		if err != nil {
			return err
		}
		to, err := target(ws, tree, st)
		if err != nil {
			return err
		}
		if a.active != nil {
			return a.moveInSession(action, to, o.yes)
		}
		if err := a.confirmInterrupted(j, tree, st.Active, to, o.yes); err != nil {
			return err
		}
		res, err := cow.Transition(j, ws.Tree, to, cow.TransitionOptions{
			Reason:   action,
			Confirm:  a.driftConfirmer(),
			Yes:      o.yes,
			Progress: a.progress(),
			Cwd:      a.cwd,
			RootPath: ws.Root,
			Tree:     tree,
		})
		if errors.Is(err, cow.ErrDrift) {
			a.printDrift(res)
		}
		if err != nil {
			return needsConfirm(err, res)
		}
		return a.printMove(action, res)
	})
}

func (a *app) progress() cow.Progress {
	if f := a.progressFactory(); f != nil {
		return f()
	}
	return nil
}

// moveInSession moves the running session's view (fuse mode only), with
// the drift rule of every move.
func (a *app) moveInSession(action string, to tasks.ID, yes bool) error {
	res, err := a.active.Move(to, yes)
	if errors.Is(err, cow.ErrDrift) {
		a.printDrift(res)
	}
	if err != nil {
		return needsConfirm(fmt.Errorf("%s: %w", action, err), res)
	}
	return a.printMove(action, res)
}

// confirmInterrupted asks before leaving the tasks of an interrupted
// session: its recorded state may be incomplete.
func (a *app) confirmInterrupted(j *journal.Journal, tree *tasks.Tree, from, to tasks.ID, yes bool) error {
	s, err := j.LatestSession()
	if err != nil || s.State != journal.SessionInterrupted || yes {
		return nil
	}
	inSession := map[tasks.ID]bool{}
	for _, t := range s.Tasks {
		inSession[t] = true
	}
	walk, err := tree.Path(from, to)
	if err != nil {
		return err
	}
	touches := false
	for _, id := range append(append([]tasks.ID{}, walk.Up...), walk.Down...) {
		touches = touches || inSession[id]
	}
	if !touches {
		return nil
	}
	q := fmt.Sprintf("session %d was interrupted (timeagent pid %d died); its work was recorded by recovery. Move from task %d to task %d?", s.ID, s.Pid, from, to)
	if !a.interactive() {
		return &confirmError{err: fmt.Errorf("%s refused without a terminal: pass --yes to confirm", q)}
	}
	ok, err := a.ask(q)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{1}
	}
	return nil
}

func (a *app) driftConfirmer() func([]cow.Drifted) (bool, error) {
	if !a.interactive() {
		return nil
	}
	return func(d []cow.Drifted) (bool, error) {
		a.printDriftList(d)
		return a.ask("Overwrite them? Their current content is kept as a task either way.")
	}
}

func (a *app) printDriftList(d []cow.Drifted) {
	fmt.Fprintf(a.io.err, "timeagent: %s changed since their task ended:\n", plural.Count(len(d), "path"))
	for i, x := range d {
		if i == 20 {
			fmt.Fprintf(a.io.err, "  … and %d more\n", len(d)-20)
			break
		}
		fmt.Fprintf(a.io.err, "  %s  (expected %s, found %s)\n", escapeName(x.Path), describeNode(x.Expected), describeNode(x.Actual))
	}
}

func (a *app) printDrift(res cow.TransitionResult) {
	if a.interactive() || a.json {
		return // already listed before the question, or in the JSON error
	}
	a.printDriftList(res.Drifted)
	if res.Outside != 0 {
		fmt.Fprintf(a.io.err, "timeagent: their current content is kept as task %d (timeagent switch %d)\n", res.Outside, res.Outside)
	}
}

// ask prints q on stderr and reads y/N from stdin; the default is No.
func (a *app) ask(q string) (bool, error) {
	fmt.Fprintf(a.io.err, "%s [y/N] ", q)
	line, err := bufio.NewReader(a.io.in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(a.io.err)
		return false, nil
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

func (a *app) printMove(action string, res cow.TransitionResult) error {
	if a.json {
		drifted := []string{}
		for _, d := range res.Drifted {
			drifted = append(drifted, d.Path)
		}
		return writeJSON(a.io.out, moveJSON{SchemaVersion: schemaVersion, Action: action, From: uint64(res.From),
			To: uint64(res.To), OutsideTask: uint64(res.Outside), Written: res.Written, Drifted: drifted})
	}
	w := a.io.out
	if res.Outside != 0 {
		fmt.Fprintf(w, "kept %s changed outside a session as task %d\n", plural.Count(len(res.Drifted), "path"), res.Outside)
	}
	fmt.Fprintf(w, "%s: task %d → task %d (%s written)\n", action, res.From, res.To, plural.Count(res.Written, "path"))
	return nil
}
