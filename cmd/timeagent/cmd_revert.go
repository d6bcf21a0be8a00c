package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/session"
)

type revertJSON struct {
	SchemaVersion int      `json:"schemaVersion"`
	Action        string   `json:"action"`
	Reverted      uint64   `json:"reverted"`
	Task          uint64   `json:"task"`
	From          uint64   `json:"from"`
	OutsideTask   uint64   `json:"outsideTask,omitempty"`
	Written       int      `json:"written"`
	Skipped       []string `json:"skipped"`
	Drifted       []string `json:"drifted"`
}

func (a *app) revertCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "revert TASK",
		Short: "Undo one task's changes in a new task on top of the present (like git revert)",
		Example: `  timeagent revert 3           # undo task 3's changes on top of the present
  timeagent revert 3 --force   # and keep the paths changed since as they are`,
		Long: `revert TASK makes a new task, child of the active one, that puts back the state
before TASK of every path TASK changed and nothing changed since. A path changed since
(by a later task or outside a session) is a conflict: the revert is refused as a whole
and nothing is written, unless --force, which keeps those paths as they are and reverts
the rest. TASK is a task id or a tag name; undo takes the revert back.`,
		Args:              nArgs(1, 1),
		ValidArgsFunction: firstArg(a.completeTasks),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.active != nil {
				return errors.New("revert: a session is running: run it when the session has ended")
			}
			return a.withWorkspace("revert", func(ws *session.Workspace) error {
				id, err := resolveTask(ws.Journal, args[0])
				if err != nil {
					return err
				}
				res, err := cow.Revert(ws.Journal, ws.Tree, id, cow.RevertOptions{Force: force, Progress: a.progress(),
					Cwd: a.cwd, RootPath: ws.Root})
				if res.Outside != 0 && !a.json {
					a.printDriftList(res.Drifted)
					fmt.Fprintf(a.io.err, "timeagent: their current content is kept as task %d, the present the revert starts from\n", res.Outside)
				}
				if len(res.Conflicts) > 0 && !a.json {
					verb := "refused"
					if force && err == nil {
						verb = "skipped (kept as they are)"
					}
					fmt.Fprintf(a.io.err, "timeagent: %s, %s: %s changed since task %d:\n", plural.Count(len(res.Conflicts), "conflict"), verb, plural.Noun(len(res.Conflicts), "path"), id)
					for i, c := range res.Conflicts {
						if i == 20 {
							fmt.Fprintf(a.io.err, "  … and %d more\n", len(res.Conflicts)-20)
							break
						}
						why := c.Reason
						if why == "" {
							why = fmt.Sprintf("task %d left %s, now %s", id, describeNode(c.Left), describeNode(c.Present))
						}
						fmt.Fprintf(a.io.err, "  %s  (%s)\n", escapeName(c.Path), why)
					}
				}
				if err != nil {
					return err
				}
				tr := res.Transition
				if a.json {
					skipped, drifted := []string{}, []string{}
					for _, c := range res.Conflicts {
						skipped = append(skipped, c.Path)
					}
					for _, d := range res.Drifted {
						drifted = append(drifted, d.Path)
					}
					return writeJSON(a.io.out, revertJSON{SchemaVersion: schemaVersion, Action: "revert", Reverted: uint64(id),
						Task: uint64(res.Task), From: uint64(tr.From), OutsideTask: uint64(res.Outside), Written: tr.Written,
						Skipped: skipped, Drifted: drifted})
				}
				fmt.Fprintf(a.io.out, "revert: task %d's changes undone as task %d (task %d → task %d, %s written)\n",
					id, res.Task, tr.From, tr.To, plural.Count(tr.Written, "path"))
				if len(res.Conflicts) > 0 {
					fmt.Fprintf(a.io.out, "skipped %s, kept as they are\n", plural.Count(len(res.Conflicts), "conflicting path"))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "revert what can be and skip the paths changed since, keeping them")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}
