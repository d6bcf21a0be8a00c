package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/actions"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

// Session states as status reports them.
const (
	stateAbsent      = "absent"
	stateActive      = "active"
	stateCompleted   = "completed"
	stateInterrupted = "interrupted"
	stateInvalid     = "invalid"
	stateStopped     = "stopped"
)

type sessionJSON struct {
	ID        uint64   `json:"id"`
	Argv      []string `json:"argv"`
	Mode      string   `json:"mode"`
	Pid       int      `json:"pid"`
	StartedAt *string  `json:"startedAt"` // null only in TimeAgent's session object of a root without one
	EndedAt   string   `json:"endedAt,omitempty"`
	ExitCode  *int     `json:"exitCode"`
	Tasks     []uint64 `json:"tasks"`
	taSessionJSON
}

type statusJSON struct {
	SchemaVersion int                       `json:"schemaVersion"`
	Repository    string                    `json:"repository"` // TimeAgent's: always "."
	State         string                    `json:"state"`
	Mode          string                    `json:"mode,omitempty"`
	Root          string                    `json:"root"`
	Session       *sessionJSON              `json:"session"`
	ActiveTask    uint64                    `json:"activeTask"`
	CurrentTask   uint64                    `json:"currentTask"`
	AppliedTask   uint64                    `json:"appliedTask"`
	Actions       map[string]map[string]int `json:"actions"`
	Worktree      bool                      `json:"linkedWorktree,omitempty"`
	Log           string                    `json:"-"` // the session log, named by the text status
	Next          string                    `json:"next,omitempty"`
	Error         string                    `json:"error,omitempty"`
	// TimeAgent's: the latest session's changes and external actions.
	Changes         taChangesJSON       `json:"changes"`
	ExternalActions taActionSummaryJSON `json:"externalActions"`
}

func (a *app) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the latest session's state and where the root is in its history",
		Example: `  timeagent status
  timeagent status --json | jq -r .next`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runStatus() },
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

func (a *app) runStatus() error {
	var st statusJSON
	local := false
	err := a.withWorkspace("status", func(ws *session.Workspace) error {
		local = true
		var err error
		st, err = a.status(ws)
		return err
	})
	var se *session.StoppedError
	if errors.As(err, &se) {
		// The session holds the journal: say what the lock file tells.
		st = stoppedStatus(se)
		if a.json {
			st.fillTA02(time.Now())
			return writeJSON(a.io.out, st)
		}
		w := a.io.out
		fmt.Fprintf(w, "root:         %s\n", st.Root)
		fmt.Fprintf(w, "session:      %d, stopped (timeagent pid %d)\n", se.Session, se.Pid)
		fmt.Fprintf(w, "next:         %s\n", st.Next)
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) || (err == nil && !local) {
		return err // forwarded: already printed
	}
	if err != nil {
		if !isJournalInvalid(err) {
			return err
		}
		st = statusJSON{SchemaVersion: schemaVersion, State: stateInvalid, Root: a.rootDir, Error: message(err)}
		if a.json {
			st.fillTA02(time.Now())
			writeJSON(a.io.out, st)
			return &exitError{1}
		}
		return err
	}
	if a.json {
		st.fillTA02(time.Now())
		return writeJSON(a.io.out, st)
	}
	a.printStatus(st)
	return nil
}

// stoppedStatus is the status of a root whose session is stopped (Ctrl-Z):
// its journal cannot be read until the session resumes.
func stoppedStatus(se *session.StoppedError) statusJSON {
	return statusJSON{SchemaVersion: schemaVersion, State: stateStopped, Root: se.Root,
		Session: &sessionJSON{ID: se.Session, Pid: se.Pid, Argv: []string{}, Tasks: []uint64{}}, Actions: actions.Counts(nil),
		Next: fmt.Sprintf("the session is stopped (Ctrl-Z?): resume it with `fg` in its terminal or `kill -CONT %d`", se.Pid)}
}

func isJournalInvalid(err error) bool {
	return errors.Is(err, journal.ErrCorrupt) || errors.Is(err, journal.ErrForeign) || errors.Is(err, journal.ErrSchema)
}

func (a *app) status(ws *session.Workspace) (statusJSON, error) {
	j := ws.Journal
	out := statusJSON{SchemaVersion: schemaVersion, State: stateAbsent, Root: ws.Root}
	hs, err := j.State()
	if err != nil {
		return out, err
	}
	out.ActiveTask, out.CurrentTask, out.AppliedTask = uint64(hs.Active), uint64(hs.Current), uint64(hs.Applied)
	out.Worktree = linkedWorktree(ws.Root)
	s, err := j.LatestSession()
	if errors.Is(err, journal.ErrNotFound) {
		out.Next = "timeagent run COMMAND"
		out.Actions = actions.Counts(nil)
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if a.active != nil && a.active.Session.ID == s.ID {
		s = a.active.Session
	}
	if st, err := os.Stat(session.LogPath(ws.StateDir)); err == nil && st.Size() > 0 {
		out.Log = session.LogPath(ws.StateDir)
	}
	out.Session = toSessionJSON(s)
	out.Mode = s.Mode
	switch s.State {
	case journal.SessionActive:
		out.State = stateActive
	case journal.SessionInterrupted:
		out.State = stateInterrupted
	default:
		out.State = stateCompleted
	}
	if out.Next, err = nextStep(j, out.State, s.Mode, hs); err != nil {
		return out, err
	}
	acts, err := sessionActions(a, ws, s.ID)
	if err != nil {
		return out, err
	}
	out.Actions = actions.Counts(acts)
	out.ExternalActions = taSummarizeActions(acts)
	if a.json {
		// What the journal holds (during a session: recorded so far);
		// status records nothing itself. A layer that cannot be read
		// leaves the counts at 0: status must still show the state
		// (verify names the damage).
		if changes, err := session.SessionChanges(ws.Journal, s); err == nil {
			out.Changes = taCountChanges(changes)
		}
	}
	return out, nil
}

func toSessionJSON(s journal.Session) *sessionJSON {
	started := jsonTime(s.StartedAt)
	sj := &sessionJSON{ID: s.ID, Argv: s.Argv, Mode: s.Mode, Pid: s.Pid, StartedAt: &started, EndedAt: jsonTime(s.EndedAt)}
	if s.State != journal.SessionActive && s.ExitCode >= 0 {
		code := s.ExitCode
		sj.ExitCode = &code
	}
	if sj.Argv == nil {
		sj.Argv = []string{}
	}
	sj.Tasks = []uint64{}
	for _, t := range s.Tasks {
		sj.Tasks = append(sj.Tasks, uint64(t))
	}
	return sj
}

// linkedWorktree reports whether root is a linked git worktree (.git is a
// file): the shared git directory outside it is not protected (decision 9).
func linkedWorktree(root string) bool {
	st, err := os.Lstat(filepath.Join(root, ".git"))
	return err == nil && st.Mode().IsRegular()
}

func (a *app) printStatus(st statusJSON) {
	w := a.io.out
	fmt.Fprintf(w, "root:         %s\n", escapeName(st.Root))
	if st.Session == nil {
		fmt.Fprintf(w, "session:      none yet (state %s)\n", st.State)
	} else {
		s := st.Session
		fmt.Fprintf(w, "session:      %d, %s (%s mode)\n", s.ID, st.State, s.Mode)
		fmt.Fprintf(w, "command:      %s\n", escapeName(shellQuote(s.Argv)))
		if s.StartedAt != nil {
			fmt.Fprintf(w, "started:      %s\n", localTime(*s.StartedAt))
		}
		if s.EndedAt != "" {
			fmt.Fprintf(w, "ended:        %s\n", localTime(s.EndedAt))
		}
		if s.ExitCode != nil {
			fmt.Fprintf(w, "exit code:    %d\n", *s.ExitCode)
		}
	}
	fmt.Fprintf(w, "active task:  %d (current %d)\n", st.ActiveTask, st.CurrentTask)
	if st.AppliedTask != st.ActiveTask {
		fmt.Fprintf(w, "applied task: %d (the real files; the session's view is task %d)\n", st.AppliedTask, st.ActiveTask)
	}
	if n := countAll(st.Actions); n > 0 {
		fmt.Fprintf(w, "actions:      %s: %s (timeagent actions)\n", plural.Count(n, "external command"), formatCounts(st.Actions))
	}
	if st.Worktree {
		fmt.Fprintln(w, "note:         linked git worktree: objects and refs written to the shared git directory are not reverted")
	}
	if st.Log != "" {
		fmt.Fprintf(w, "log:          %s\n", st.Log)
	}
	if st.Next != "" {
		fmt.Fprintf(w, "next:         %s\n", st.Next)
	}
}

func localTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// nextStep is what status advises after the latest session, from the real
// state, the first that applies: an apply that could not finish; a session
// running; work the real files do not show yet (after run --isolate); a
// task undone that redo brings back; an interrupted session; else review
// or undo.
func nextStep(j *journal.Journal, state, mode string, hs journal.State) (string, error) {
	if state == stateActive {
		if mode == session.ModeFuse {
			return "the session is running: timeagent diff shows its changes so far, timeagent checkpoint -m SUMMARY closes a task, timeagent undo moves the agent's view back", nil
		}
		return "the session is running: timeagent diff shows its changes so far, timeagent checkpoint -m SUMMARY closes a task; undo and redo wait for its end", nil
	}
	in, err := j.Intent()
	if err != nil {
		return "", err
	}
	if in != nil {
		return fmt.Sprintf("an apply to task %d could not finish: fix what stopped it and run `timeagent recover`, "+
			"or move elsewhere (an undo, redo or switch takes its place); `timeagent verify` tells whether its content is damaged", in.To), nil
	}
	if hs.Applied != hs.Active {
		return fmt.Sprintf("your files are at task %d, not at task %d: `timeagent apply` writes task %d to them, `timeagent undo` discards it (timeagent diff shows it)",
			hs.Applied, hs.Active, hs.Active), nil
	}
	tree, err := j.Tree()
	if err != nil {
		return "", err
	}
	if next, err := tree.Redo(hs.Active, 1); err == nil {
		return fmt.Sprintf("`timeagent redo` brings back task %d (undone; timeagent log shows the tree); a new run starts a branch from task %d", next, hs.Active), nil
	}
	if state == stateInterrupted {
		return "timeagent diff to review what the interrupted session changed, timeagent undo --session to revert it", nil
	}
	return "timeagent diff to review, timeagent undo to revert", nil
}
