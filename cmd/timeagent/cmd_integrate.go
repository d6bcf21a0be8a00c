package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/hooks"
	"github.com/timeagent-dev/timeagent/session"
)

func (a *app) integrateCommand() *cobra.Command {
	var user, project, remove bool
	cmd := &cobra.Command{
		Use:   "integrate claude|codex|gemini [--project|--user] [--remove]",
		Short: "Install timeagent's hooks (a task per prompt) and MCP server in an agent's settings",
		Example: `  timeagent integrate claude           # this repository's .claude/settings.json
  timeagent integrate codex --user     # your own settings, every project
  timeagent integrate gemini --remove`,
		Long: `integrate writes the agent's hook configuration (a task per user prompt, the agent
told when its files were moved, risky commands refused) and registers ` + "`timeagent mcp`" + `
as the MCP server "timeagent", merging into the existing settings files: your own
hooks and servers are kept, a second run changes nothing, --remove takes out exactly
what was added. --project (the default) writes the repository's settings, --user
your own.`,
		Args:      nArgs(1, 1),
		ValidArgs: []string{"claude", "codex", "gemini"},
		RunE: func(cmd *cobra.Command, args []string) error {
			agent, err := hooks.ParseAgent(args[0])
			if err != nil {
				return &usageError{err}
			}
			if user && project {
				return &usageError{errors.New("--user and --project exclude each other")}
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the timeagent executable the hooks call: %w", err)
			}
			if real, err := filepath.EvalSymlinks(self); err == nil {
				self = real
			}
			o := hooks.Options{Agent: agent, User: user, Binary: self, Remove: remove, CodexHome: os.Getenv("CODEX_HOME")}
			if home, err := os.UserHomeDir(); err == nil {
				o.Home = home
			} else if user {
				return fmt.Errorf("find your home directory for --user: %w", err)
			}
			if !user {
				root, err := session.FindRoot(a.cwd, a.root)
				if err != nil {
					return err
				}
				o.Project = root
			}
			res, err := hooks.Integrate(o)
			if err != nil {
				return err
			}
			a.printIntegrate(res, o)
			return nil
		},
	}
	cmd.Flags().BoolVar(&user, "user", false, "write your user settings (every project)")
	cmd.Flags().BoolVar(&project, "project", false, "write the repository's settings (the default)")
	cmd.Flags().BoolVar(&remove, "remove", false, "take out what integrate added")
	return cmd
}

func (a *app) printIntegrate(res hooks.Result, o hooks.Options) {
	w := a.io.out
	if !res.Changed() {
		if o.Remove {
			fmt.Fprintf(w, "integrate %s: nothing to remove (no timeagent entries in %s)\n", o.Agent, filesOf(res))
		} else {
			fmt.Fprintf(w, "integrate %s: already installed, nothing changed (%s)\n", o.Agent, filesOf(res))
		}
	}
	for _, f := range res.Files {
		if !f.Changed() {
			continue
		}
		var parts []string
		for _, g := range []struct {
			verb string
			list []string
		}{{"added", f.Added}, {"updated", f.Updated}, {"removed", f.Removed}, {"already there", f.Kept}} {
			if len(g.list) > 0 {
				parts = append(parts, g.verb+" "+strings.Join(g.list, ", "))
			}
		}
		fmt.Fprintf(w, "%s: %s", escapeName(f.Path), strings.Join(parts, "; "))
		if f.Deleted {
			fmt.Fprint(w, " (the file held nothing else and was removed)")
		}
		fmt.Fprintln(w)
	}
	if res.Changed() && !o.Remove {
		fmt.Fprintf(w, "the hooks run %s\n", escapeName(hooks.HookCommand(o.Binary, o.Agent, "EVENT")))
	}
	if !res.Changed() {
		return
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func filesOf(res hooks.Result) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range res.Files {
		if !seen[f.Path] {
			seen[f.Path] = true
			out = append(out, escapeName(f.Path))
		}
	}
	return strings.Join(out, ", ")
}
