package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

type tagJSON struct {
	Name string `json:"name"`
	Task uint64 `json:"task"`
}

type tagsJSON struct {
	SchemaVersion int       `json:"schemaVersion"`
	Tags          []tagJSON `json:"tags"`
}

func (a *app) tagCommand() *cobra.Command {
	var del, force bool
	cmd := &cobra.Command{
		Use:   "tag [NAME [TASK]] | tag --delete NAME",
		Short: "Name a task (default: the active one), list the names, or delete one",
		Example: `  timeagent tag good          # name the active task
  timeagent tag before-refactor 4
  timeagent tag               # list the names
  timeagent tag --delete good`,
		Long: `tag NAME [TASK] names TASK (default: the active task); switch, undo, diff and
revert accept the name wherever they take a task. A name is 1 to 64 bytes, has no
whitespace, does not start with '-' and is not all digits. An existing name moves
only with --force. tag alone lists the names; tag --delete NAME removes one.`,
		Args: nArgs(0, 2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0 && del:
				return a.completeTagNames(cmd, args, toComplete)
			case len(args) == 1 && !del:
				return a.completeTasks(cmd, args, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if del && len(args) != 1 {
				return &usageError{errors.New("tag --delete takes exactly one NAME")}
			}
			if del && force {
				return &usageError{errors.New("tag: give either --delete or --force, not both")}
			}
			if len(args) > 0 {
				if err := cow.ValidTagName(args[0]); err != nil {
					return &usageError{err}
				}
			}
			return a.withWorkspace("tag", func(ws *session.Workspace) error {
				j := ws.Journal
				switch {
				case len(args) == 0:
					return a.listTags(j)
				case del:
					id, err := cow.DeleteTag(j, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(a.io.out, "deleted tag %s (was task %d)\n", args[0], id)
					return nil
				}
				var id tasks.ID
				if len(args) == 2 {
					var err error
					if id, err = resolveTask(j, args[1]); err != nil {
						return err
					}
				} else {
					st, err := j.State()
					if err != nil {
						return err
					}
					id = st.Active
				}
				old, err := cow.SetTag(j, args[0], id, force)
				if err != nil {
					return err
				}
				if old != 0 && old != id {
					fmt.Fprintf(a.io.out, "moved tag %s from task %d to task %d\n", args[0], old, id)
				} else {
					fmt.Fprintf(a.io.out, "tagged task %d as %s\n", id, args[0])
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&del, "delete", "d", false, "delete the tag NAME")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "move NAME when it already names another task")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1) when listing")
	return cmd
}

func (a *app) listTags(j *journal.Journal) error {
	tags, err := j.Tags()
	if err != nil {
		return err
	}
	out := tagsJSON{SchemaVersion: schemaVersion, Tags: []tagJSON{}}
	for _, n := range sortedTagNames(tags) {
		out.Tags = append(out.Tags, tagJSON{Name: n, Task: uint64(tags[n])})
	}
	if a.json {
		return writeJSON(a.io.out, out)
	}
	if len(out.Tags) == 0 {
		fmt.Fprintln(a.io.out, "no tags yet: name a task with `timeagent tag NAME [TASK]`")
		return nil
	}
	for _, t := range out.Tags {
		fmt.Fprintf(a.io.out, "%-20s  task %d\n", t.Name, t.Task)
	}
	return nil
}

func sortedTagNames(tags map[string]tasks.ID) []string {
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// tagsByTask inverts tags: task -> its names, sorted.
func tagsByTask(tags map[string]tasks.ID) map[tasks.ID][]string {
	out := map[tasks.ID][]string{}
	for _, n := range sortedTagNames(tags) {
		out[tags[n]] = append(out[tags[n]], n)
	}
	return out
}

// resolveTask is the one reader of a task argument: a task id (0 = the
// base) or a tag name. A string that is neither a number nor an existing
// tag is a usage error (exit 2), as it was before tags.
func resolveTask(j *journal.Journal, s string) (tasks.ID, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return tasks.ID(n), nil
	}
	if cow.ValidTagName(s) != nil {
		return parseTaskID(s)
	}
	id, err := j.Tag(s)
	if errors.Is(err, journal.ErrNotFound) {
		return 0, &usageError{fmt.Errorf("invalid task id %q: no task or tag of that name: use a number from timeagent log or a name from timeagent tag", s)}
	}
	if err != nil {
		return 0, err
	}
	return id, nil
}
