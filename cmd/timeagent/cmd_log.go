package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
}

type logJSON struct {
	SchemaVersion int        `json:"schemaVersion"`
	ActiveTask    uint64     `json:"activeTask"`
	CurrentTask   uint64     `json:"currentTask"`
	BaseBranches  bool       `json:"baseHasBranches"`
	Tasks         []taskJSON `json:"tasks"`
}

func (a *app) logCommand() *cobra.Command {
	var touching string
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Show the task tree: → active, ↯ future (redoable), ⎇ branch point",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("log", func(ws *session.Workspace) error { return a.runLog(ws, touching) })
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	cmd.Flags().StringVar(&touching, "touching", "", "only the tasks that changed a path containing `TEXT`")
	return cmd
}

func (a *app) runLog(ws *session.Workspace, touching string) error {
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
		BaseBranches: tree.HasBranches(tasks.Base), Tasks: []taskJSON{}}
	for _, t := range tree.All() {
		out.Tasks = append(out.Tasks, taskJSON{ID: uint64(t.ID), Parent: uint64(t.Parent), Summary: t.Summary,
			Kind: string(t.Kind), Status: string(tree.StatusOf(t.ID, st.Active)), HasBranches: tree.HasBranches(t.ID),
			Session: t.Session, Created: jsonTime(t.Created), Ended: jsonTime(t.Ended), Files: t.Files,
			Tags: append([]string{}, byTask[t.ID]...)})
	}
	if touching != "" {
		if out.Tasks, err = tasksTouching(j, out.Tasks, touching); err != nil {
			return err
		}
	}
	if a.json {
		return writeJSON(a.io.out, out)
	}
	a.printLog(tree, out)
	return nil
}

// printLog draws the tree depth-first, children oldest first, indenting each
// branch that is not its parent's first child.
func (a *app) printLog(tree *tasks.Tree, out logJSON) {
	w := a.io.out
	if len(out.Tasks) == 0 {
		fmt.Fprintln(w, "no tasks yet: run an agent with `timeagent run COMMAND`")
		return
	}
	byID := make(map[uint64]taskJSON, len(out.Tasks))
	for _, t := range out.Tasks {
		byID[t.ID] = t
	}
	fmt.Fprintf(w, "    %4s  %-7s  %-16s  %5s  %s\n", "task", "session", "time", "files", "summary")
	baseMark := " "
	if out.ActiveTask == 0 {
		baseMark = "→"
	}
	if out.BaseBranches {
		baseMark += "⎇"
	} else {
		baseMark += " "
	}
	fmt.Fprintf(w, "%s  %4d  %-7s  %-16s  %5s  %s\n", baseMark, 0, "", "", "", "(base: before the first task)")
	var walk func(id tasks.ID, depth int)
	walk = func(id tasks.ID, depth int) {
		for i, c := range tree.Children(id) {
			d := depth
			if i > 0 {
				d = depth + 1
			}
			t := byID[uint64(c)]
			mark := " "
			switch t.Status {
			case string(tasks.StatusCurrent):
				mark = "→"
			case string(tasks.StatusFuture):
				mark = "↯"
			}
			if t.HasBranches {
				mark += "⎇"
			} else {
				mark += " "
			}
			sess := ""
			if t.Session != 0 {
				sess = fmt.Sprint(t.Session)
			}
			summary := t.Summary
			if t.Kind == string(tasks.KindOutside) {
				summary = "[outside] " + summary
			}
			if len(t.Tags) > 0 {
				summary += "  [" + strings.Join(t.Tags, ", ") + "]"
			}
			fmt.Fprintf(w, "%s  %4d  %-7s  %-16s  %5d  %s%s\n", mark, t.ID, sess, shortTime(t.Created), t.Files,
				strings.Repeat("  ", d), escapeName(summary))
			walk(c, d)
		}
	}
	walk(tasks.Base, 0)
}

func shortTime(s string) string {
	t := localTime(s)
	if len(t) >= 16 {
		return t[:16]
	}
	return t
}
