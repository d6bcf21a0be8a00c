package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// textLimit is the largest content shown as text (diff --patch, diff-file).
const textLimit = 1 << 20

type diffOptions struct {
	patch, stat bool
	color       string
	task        string
	from, to    string
}

type changeJSON struct {
	Path   string   `json:"path"`
	Change string   `json:"change"`
	Before nodeJSON `json:"before"`
	After  nodeJSON `json:"after"`
}

type diffJSON struct {
	SchemaVersion int          `json:"schemaVersion"`
	From          uint64       `json:"from"`
	To            uint64       `json:"to"`
	Session       *uint64      `json:"session,omitempty"`
	Task          *uint64      `json:"task,omitempty"`
	Interrupted   bool         `json:"interrupted,omitempty"`
	Changes       []changeJSON `json:"changes"`
	// TimeAgent's (ta02json.go).
	SessionState string            `json:"sessionState"`
	Warning      *taWarningJSON    `json:"warning"`
	Files        []taFileJSON      `json:"files"`
	Summary      taDiffSummaryJSON `json:"summary"`
}

func (a *app) diffCommand() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff [--json | --patch | --stat] [--color WHEN] [--task TASK | --from TASK --to TASK]",
		Short: "Show what changed: by default the latest session, file by file",
		Example: `  timeagent diff                    # the latest session, file by file
  timeagent diff --stat             # lines added and removed, as git diff --stat
  timeagent diff --patch | git apply --check
  timeagent diff --task 3           # one task's own changes
  timeagent diff --from 0 --to good # from the base to the task tagged good`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("diff", func(ws *session.Workspace) error { return a.runDiff(ws, o) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	f.BoolVar(&o.patch, "patch", false, "show a git patch (git apply takes it; binary files are only named)")
	f.BoolVar(&o.stat, "stat", false, "show lines added and removed per file, as git diff --stat does")
	colorVar(cmd, &o.color)
	a.taskVar(cmd, &o.task, "task", "show one task's own changes (a task id or tag name)")
	a.taskVar(cmd, &o.from, "from", "compare from this task (0 = the base)")
	a.taskVar(cmd, &o.to, "to", "compare to this task")
	cmd.MarkFlagsMutuallyExclusive("json", "patch", "stat")
	cmd.MarkFlagsMutuallyExclusive("task", "from")
	cmd.MarkFlagsMutuallyExclusive("task", "to")
	cmd.MarkFlagsRequiredTogether("from", "to")
	return cmd
}

func parseTaskID(s string) (tasks.ID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, &usageError{fmt.Errorf("invalid task id %q: use a number from timeagent log", s)}
	}
	return tasks.ID(n), nil
}

// selectChanges resolves the diff's range into changes.
func (a *app) selectChanges(ws *session.Workspace, o diffOptions) (diffJSON, []journal.Change, error) {
	j := ws.Journal
	out := diffJSON{SchemaVersion: schemaVersion, Changes: []changeJSON{}}
	tree, err := j.Tree()
	if err != nil {
		return out, nil, err
	}
	switch {
	case o.task != "":
		id, err := resolveTask(j, o.task)
		if err != nil {
			return out, nil, err
		}
		if id == tasks.Base || !tree.Has(id) {
			return out, nil, fmt.Errorf("%w %d", tasks.ErrUnknown, id)
		}
		changes, err := j.Layer(id)
		if err != nil {
			return out, nil, err
		}
		u := uint64(id)
		out.Task, out.From, out.To = &u, uint64(tree.Parent(id)), u
		return out, changes, nil
	case o.from != "":
		from, err := resolveTask(j, o.from)
		if err != nil {
			return out, nil, err
		}
		to, err := resolveTask(j, o.to)
		if err != nil {
			return out, nil, err
		}
		for _, id := range []tasks.ID{from, to} {
			if !tree.Has(id) {
				return out, nil, fmt.Errorf("%w %d", tasks.ErrUnknown, id)
			}
		}
		changes, err := session.NetChanges(j, from, to)
		out.From, out.To = uint64(from), uint64(to)
		return out, changes, err
	}
	s, err := j.LatestSession()
	if errors.Is(err, journal.ErrNotFound) {
		return out, nil, errors.New("no session recorded yet: run an agent with `timeagent run COMMAND` first")
	}
	if err != nil {
		return out, nil, err
	}
	if a.active != nil && a.active.Session.ID == s.ID {
		s = a.active.Session
	}
	changes, err := a.liveSessionChanges(ws, s)
	if err != nil {
		return out, nil, err
	}
	id := s.ID
	out.Session = &id
	out.From = uint64(s.Base)
	if len(s.Tasks) > 0 {
		out.To = uint64(s.Tasks[len(s.Tasks)-1])
	}
	out.Interrupted = s.State == journal.SessionInterrupted
	return out, changes, nil
}

// liveSessionChanges is a session's net change; inside a running session it
// first records the open task so far.
func (a *app) liveSessionChanges(ws *session.Workspace, s journal.Session) ([]journal.Change, error) {
	if a.active != nil && a.active.Session.ID == s.ID {
		return a.active.Changes()
	}
	return session.SessionChanges(ws.Journal, s)
}

func (a *app) runDiff(ws *session.Workspace, o diffOptions) error {
	out, changes, err := a.selectChanges(ws, o)
	if err != nil {
		return err
	}
	for _, c := range changes {
		out.Changes = append(out.Changes, changeJSON{Path: c.Path, Change: changeKind(c), Before: toNodeJSON(c.Before), After: toNodeJSON(c.After)})
	}
	if a.json {
		if err := out.fillTA02(ws.Journal, changes); err != nil {
			return err
		}
		return writeJSON(a.io.out, out)
	}
	color, err := a.useColor(o.color)
	if err != nil {
		return err
	}
	pal := newPalette(color)
	pg := a.startPager()
	defer pg.close()
	w := pg.w
	if out.Interrupted {
		fmt.Fprintln(a.io.err, "timeagent: warning: this session was interrupted; the diff shows what it had changed when it died")
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
		return nil
	}
	switch {
	case o.patch:
		return writePatch(ws.Journal, w, changes, pal)
	case o.stat:
		return writeStat(ws.Journal, w, changes, pal, a.termWidth())
	}
	counts := map[string]int{}
	for _, c := range changes {
		k := changeKind(c)
		counts[k]++
		detail := ""
		switch k {
		case "created":
			detail = describeNode(c.After)
		case "deleted":
			detail = "was " + describeNode(c.Before)
		default:
			detail = describeNode(c.Before) + " → " + describeNode(c.After)
		}
		fmt.Fprintf(w, "%-11s %s  (%s)\n", k, escapeName(c.Path), detail)
	}
	fmt.Fprintf(w, "%s changed: %d created, %d modified, %d deleted, %d changed type\n",
		plural.Count(len(changes), "path"), counts["created"], counts["modified"], counts["deleted"], counts["typechanged"])
	return nil
}

// textOf returns a file state's content when it is text of at most
// textLimit bytes; ok is false for binary or large content.
func textOf(j *journal.Journal, s journal.NodeState) (text []byte, ok, binary bool, err error) {
	switch s.Kind {
	case journal.Absent:
		return nil, true, false, nil
	case journal.File:
	default:
		return nil, false, false, nil
	}
	if s.Size > textLimit {
		return nil, false, false, nil
	}
	b, err := j.ReadBlob(s.Blob)
	if err != nil {
		return nil, false, false, err
	}
	if isBinary(b) {
		return nil, false, true, nil
	}
	return b, true, false, nil
}

func isBinary(b []byte) bool {
	n := len(b)
	if n > 8000 {
		n = 8000
	}
	return bytes.IndexByte(b[:n], 0) >= 0
}
