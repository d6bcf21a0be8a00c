package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/recovery"
	"github.com/timeagent-dev/timeagent/session"
)

func (a *app) checkpointCommand() *cobra.Command {
	var summary string
	cmd := &cobra.Command{
		Use:     "checkpoint [-m SUMMARY]",
		Short:   "Inside a running session: close the current task and start the next",
		Example: `  timeagent checkpoint -m "tests pass"   # inside a session: close a task, start the next`,
		Args:    nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("checkpoint", func(ws *session.Workspace) error {
				if a.active == nil {
					return fmt.Errorf("no session is running on %s: checkpoint closes a task inside a running session (timeagent run COMMAND)", ws.Root)
				}
				sealed, next, err := a.active.Checkpoint(summary)
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.io.out, map[string]any{"schemaVersion": schemaVersion, "sealed": sealed, "task": next})
				}
				fmt.Fprintf(a.io.out, "checkpoint: task %d closed, task %d started\n", sealed, next)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&summary, "message", "m", "", "summary of the task that starts now")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

func (a *app) recoverCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Finish what a crash left behind (dead session, stale mount, unfinished apply) and say what was done",
		Example: `  timeagent recover
  timeagent recover --json`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.active != nil {
				return errors.New("a session is running on this root: there is nothing to recover while it runs")
			}
			if err := a.locate(); err != nil {
				return err
			}
			ws, err := session.Open(a.rootDir, a.state, "recover")
			var re *session.RunningError
			if errors.As(err, &re) {
				return fmt.Errorf("session %d is running (timeagent pid %d): nothing to recover while it runs", re.Holder.Session, re.Holder.Pid)
			}
			if err != nil {
				return err
			}
			defer ws.Close()
			rep, err := recovery.Recover(a.recoveryTarget(ws))
			if err != nil {
				return err
			}
			if err := ingestPending(ws); err != nil {
				return err
			}
			if a.json {
				return writeJSON(a.io.out, struct {
					SchemaVersion int `json:"schemaVersion"`
					recovery.Report
				}{schemaVersion, rep})
			}
			if rep.Empty() {
				fmt.Fprintln(a.io.out, "nothing to recover: no dead session, no stale mount, no unfinished apply")
				return nil
			}
			for _, n := range rep.Notes {
				fmt.Fprintf(a.io.out, "recovered: %s\n", escapeName(n))
			}
			fmt.Fprintln(a.io.out, "next: timeagent status, then timeagent diff to review or timeagent undo to revert")
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

func (a *app) versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Example: `  timeagent version
  timeagent --version   # the bare version number
  timeagent version --json`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.json {
				return writeJSON(a.io.out, map[string]any{"schemaVersion": schemaVersion, "version": version,
					"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
			}
			fmt.Fprintf(a.io.out, "timeagent %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}
