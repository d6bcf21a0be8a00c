package main

import (
	"github.com/spf13/cobra"
	"time"

	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

type taskJSON struct {
	ID          uint64 `json:"id"`
	Parent      uint64 `json:"parent"`
	Summary     string `json:"summary"`
	Kind        string `json:"kind"`
	Status      string `json:"status"`
	HasBranches bool   `json:"hasBranches"`
	Session     uint64 `json:"session"`
	Created     string `json:"createdAt"`
	Ended       string `json:"endedAt,omitempty"`
	Files       int    `json:"files"`
	// Tags are the task's names (timeagent tag), sorted; [] when none.
	Tags []string `json:"tags"`
	// created is Created before formatting, so the human log need not
	// format and parse it back (zero when the document came from
	// elsewhere: then Created is used).
	created time.Time
}

type logJSON struct {
	SchemaVersion int        `json:"schemaVersion"`
	ActiveTask    uint64     `json:"activeTask"`
	CurrentTask   uint64     `json:"currentTask"`
	BaseBranches  bool       `json:"baseHasBranches"`
	Tasks         []taskJSON `json:"tasks"`
}

func (a *app) logCommand() *cobra.Command {
	var color, touching string
	cmd := &cobra.Command{
		Use:   "log [--json] [--color WHEN]",
		Short: "Show the task tree as a graph, newest first: → active, ↯ future (redoable), ⎇ branch point",
		Long: `log draws every task as a graph, newest first, with the branches an undo followed by a
new run makes (lanes joining at the task they started from, as git log --graph and jj log
draw them). Each row has the markers (→ the active task, the one the files show; ↯ the
future, what redo brings back; ⎇ a branch point), the task id, when it started, its
session, how many paths it changed, its summary and its tags. Long output goes through
the pager ($TIMEAGENT_PAGER, $PAGER, or less -FRX), as git does.`,
		Example: `  timeagent log
  timeagent log --json | jq '.tasks[] | select(.status == "future") | .id'
  timeagent log --color=never | head`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("log", func(ws *session.Workspace) error { return a.runLog(ws, color, touching) })
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	cmd.Flags().StringVar(&touching, "touching", "", "only the tasks that changed a path containing `TEXT`")
	colorVar(cmd, &color)
	return cmd
}

func (a *app) runLog(ws *session.Workspace, color, touching string) error {
	j := ws.Journal
	st, err := j.State()
	if err != nil {
		return err
	}
	tree, err := j.Tree()
	if err != nil {
		return err
	}
	tags, err := j.Tags()
	if err != nil {
		return err
	}
	byTask := tagsByTask(tags)
	out := logJSON{SchemaVersion: schemaVersion, ActiveTask: uint64(st.Active), CurrentTask: uint64(st.Current),
		BaseBranches: tree.HasBranches(tasks.Base)}
	statuses := tree.Statuses(st.Active)
	out.Tasks = make([]taskJSON, 0, tree.Len())
	for t := range tree.Each() {
		out.Tasks = append(out.Tasks, taskJSON{ID: uint64(t.ID), Parent: uint64(t.Parent), Summary: t.Summary,
			Kind: string(t.Kind), Status: string(statuses[t.ID]), HasBranches: tree.HasBranches(t.ID),
			Session: t.Session, Files: t.Files, Tags: append([]string{}, byTask[t.ID]...), created: t.Created})
		if a.json { // the human log formats created itself
			tj := &out.Tasks[len(out.Tasks)-1]
			tj.Created, tj.Ended = jsonTime(t.Created), jsonTime(t.Ended)
		}
	}
	if touching != "" {
		if out.Tasks, err = tasksTouching(j, out.Tasks, touching); err != nil {
			return err
		}
	}
	if a.json {
		list := out.Tasks
		out.Tasks = []taskJSON{}
		return writeJSONList(a.io.out, out, "tasks", list)
	}
	useColor, err := a.useColor(color)
	if err != nil {
		return err
	}
	p := a.startPager()
	printLog(p.w, out, newLogPalette(useColor))
	p.close()
	return nil
}
func shortTime(s string) string {
	t := localTime(s)
	if len(t) >= 16 {
		return t[:16]
	}
	return t
}
