package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// This file holds the shell completion of task ids and tag names (cobra's
// `completion bash|zsh|fish` scripts call the hidden __complete command,
// which calls these). The history is read as `timeagent log --json` reads
// it, so completion works during a session too (the running session
// answers it over its control channel).

// completionTask is one candidate: a task id or a tag name, with the
// task's summary as its description.
type completionTask struct {
	word, desc string
}

// history reads the task tree and the tags as `log --json` prints them,
// with the same -C and --root as this command line.
func (a *app) history() (logJSON, bool) {
	argv := []string{"log", "--json"}
	if a.dir != "" {
		argv = append(argv, "-C", a.dir)
	}
	if a.root != "" {
		argv = append(argv, "--root", a.root)
	}
	var out bytes.Buffer
	if execute(argv, stdio{in: strings.NewReader(""), out: &out, err: io.Discard}, a.active) != 0 {
		return logJSON{}, false
	}
	var doc logJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return logJSON{}, false
	}
	return doc, true
}

// taskCandidates lists the task ids (newest first, then the base) and, when
// withTags, the tag names, each described by its task.
func taskCandidates(doc logJSON, ids, withTags bool) []string {
	var c []completionTask
	byName := map[string]uint64{}
	for i := len(doc.Tasks) - 1; i >= 0; i-- {
		t := doc.Tasks[i]
		if ids {
			c = append(c, completionTask{fmt.Sprint(t.ID), describeTask(t)})
		}
		for _, n := range t.Tags {
			byName[n] = t.ID
		}
	}
	if ids {
		c = append(c, completionTask{"0", "the base: before the first task"})
	}
	if withTags {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c = append(c, completionTask{n, fmt.Sprintf("tag of task %d", byName[n])})
		}
	}
	out := make([]string, len(c))
	for i, x := range c {
		out[i] = x.word + "\t" + x.desc
	}
	return out
}

// describeTask is a task's completion description: its summary, its
// status when not in the past, on one line.
func describeTask(t taskJSON) string {
	s := strings.Join(strings.Fields(t.Summary), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	switch t.Status {
	case "current":
		s = "(active) " + s
	case "future":
		s = "(undone) " + s
	}
	return s
}

// completeTasks completes a task flag or argument: task ids and tag names.
func (a *app) completeTasks(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	doc, ok := a.history()
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return taskCandidates(doc, true, true), cobra.ShellCompDirectiveNoFileComp
}

// completeTagNames completes a tag name only (undo NAME, tag --delete NAME).
func (a *app) completeTagNames(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	doc, ok := a.history()
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return taskCandidates(doc, false, true), cobra.ShellCompDirectiveNoFileComp
}

// firstArg applies complete to the first positional argument only.
func firstArg(complete cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return complete(cmd, args, toComplete)
	}
}
