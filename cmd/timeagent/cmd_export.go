package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/gitexport"
	"github.com/timeagent-dev/timeagent/session"
)

// exportDoc is export's JSON document.
type exportDoc struct {
	SchemaVersion int `json:"schemaVersion"`
	gitexport.Result
}

func (a *app) exportCommand() *cobra.Command {
	var toGit, patch bool
	var branch string
	cmd := &cobra.Command{
		Use: "export FROM..TO (--git [--branch NAME] | --patch)",
		Example: `  timeagent export 0..5 --git --branch agent-work   # tasks 1 to 5 as commits on a new branch
  timeagent export good..7 --patch > work.patch      # a patch series for git am`,
		Short: "Turn the tasks after FROM up to TO into git commits on a new branch, or a patch series",
		Long: `export FROM..TO makes one git commit per task on the way from FROM (excluded,
0 = the base) down to TO: the task's summary as the message, its time as the
author date. The commits are built with git plumbing in a temporary index, so
your index, working tree and HEAD are not touched. When the files at FROM differ
from HEAD (uncommitted changes), a first commit holds them. Files git ignores
are named in the commit message and not added; .git is never exported.

--git creates the branch NAME (default timeagent/FROM-TO), which must not exist;
--patch writes the commits to stdout as a patch series (git format-patch).
FROM and TO are task ids or tag names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if toGit == patch {
				return &usageError{errors.New("export: give --git (a branch) or --patch (a patch series)")}
			}
			if patch && (branch != "" || a.json) {
				return &usageError{errors.New("export --patch writes the series to stdout: --branch and --json go with --git")}
			}
			from, to, ok := strings.Cut(args[0], "..")
			if !ok || to == "" {
				return &usageError{fmt.Errorf("export: %q is not FROM..TO (like 3..7, or ..7 from the base)", args[0])}
			}
			if from == "" {
				from = "0"
			}
			return a.withWorkspace("export", func(ws *session.Workspace) error {
				f, err := resolveTask(ws.Journal, from)
				if err != nil {
					return err
				}
				t, err := resolveTask(ws.Journal, to)
				if err != nil {
					return err
				}
				opts := gitexport.Options{Dir: a.rootDir, From: f, To: t}
				if patch {
					opts.Patch = a.io.out
				} else {
					opts.Branch = branch
					if opts.Branch == "" {
						opts.Branch = fmt.Sprintf("timeagent/%d-%d", f, t)
					}
				}
				res, err := gitexport.Export(ws.Journal, opts)
				if err != nil || patch {
					return err
				}
				if res.Commits == nil {
					res.Commits = []gitexport.Commit{}
				}
				if a.json {
					return writeJSON(a.io.out, exportDoc{SchemaVersion: schemaVersion, Result: res})
				}
				if res.BaseAdded {
					fmt.Fprintf(a.io.out, "%s  the files at task %d (they differ from HEAD)\n", short(res.Base), f)
				}
				for _, c := range res.Commits {
					note := ""
					if len(c.Ignored) > 0 {
						note = fmt.Sprintf(" (%d ignored path(s) named, not added)", len(c.Ignored))
					}
					fmt.Fprintf(a.io.out, "%s  task %d%s\n", short(c.Commit), c.Task, note)
				}
				fmt.Fprintf(a.io.out, "exported %d task(s) to branch %s (your index and files are unchanged)\n", len(res.Commits), res.Branch)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&toGit, "git", false, "create a git branch with one commit per task")
	cmd.Flags().StringVar(&branch, "branch", "", "the branch to create (default timeagent/FROM-TO)")
	cmd.Flags().BoolVar(&patch, "patch", false, "write the tasks to stdout as a patch series")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
