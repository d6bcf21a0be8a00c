package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/internal/textdiff"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// textLimit is the largest content shown as text (diff --patch, diff-file).
const textLimit = 1 << 20

type diffOptions struct {
	patch, stat bool
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
}

func (a *app) diffCommand() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff [--json | --patch | --stat] [--task N | --from A --to B]",
		Short: "Show what changed: by default the latest session, file by file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("diff", func(ws *session.Workspace) error { return a.runDiff(ws, o) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	f.BoolVar(&o.patch, "patch", false, "show a unified patch of text files")
	f.BoolVar(&o.stat, "stat", false, "show lines added and removed per file")
	f.StringVar(&o.task, "task", "", "show one task's own changes")
	f.StringVar(&o.from, "from", "", "compare from this task (0 = the base)")
	f.StringVar(&o.to, "to", "", "compare to this task")
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
		return writeJSON(a.io.out, out)
	}
	w := a.io.out
	if out.Interrupted {
		fmt.Fprintln(a.io.err, "timeagent: warning: this session was interrupted; the diff shows what it had changed when it died")
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
		return nil
	}
	switch {
	case o.patch:
		return a.printPatch(ws.Journal, w, changes)
	case o.stat:
		return a.printStat(ws.Journal, w, changes)
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
	fmt.Fprintf(w, "%d path(s) changed: %d created, %d modified, %d deleted, %d changed type\n",
		len(changes), counts["created"], counts["modified"], counts["deleted"], counts["typechanged"])
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

func (a *app) printPatch(j *journal.Journal, w io.Writer, changes []journal.Change) error {
	for _, c := range changes {
		bt, bok, bbin, err := textOf(j, c.Before)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Path, err)
		}
		at, aok, abin, err := textOf(j, c.After)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Path, err)
		}
		nameA, nameB := escapeName("a/"+c.Path), escapeName("b/"+c.Path)
		if c.Before.Kind == journal.Absent {
			nameA = "/dev/null"
		}
		if c.After.Kind == journal.Absent {
			nameB = "/dev/null"
		}
		fmt.Fprintf(w, "diff --timeagent %s %s (%s)\n", escapeName("a/"+c.Path), escapeName("b/"+c.Path), changeKind(c))
		switch {
		case bbin || abin:
			fmt.Fprintf(w, "Binary files %s and %s differ\n", nameA, nameB)
		case !bok || !aok:
			fmt.Fprintf(w, "(not shown as text: %s → %s)\n", describeNode(c.Before), describeNode(c.After))
		default:
			if err := textdiff.Unified(w, nameA, nameB, bt, at); err != nil {
				return err
			}
			if bytes.Equal(bt, at) {
				fmt.Fprintf(w, "(content unchanged: %s → %s)\n", describeNode(c.Before), describeNode(c.After))
			}
		}
	}
	return nil
}

func (a *app) printStat(j *journal.Journal, w io.Writer, changes []journal.Change) error {
	width := 0
	for _, c := range changes {
		if len(escapeName(c.Path)) > width {
			width = len(escapeName(c.Path))
		}
	}
	var tadd, trem int
	for _, c := range changes {
		bt, bok, bbin, err := textOf(j, c.Before)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Path, err)
		}
		at, aok, abin, err := textOf(j, c.After)
		if err != nil {
			return fmt.Errorf("read %s: %w", c.Path, err)
		}
		switch {
		case bbin || abin:
			fmt.Fprintf(w, " %-*s | binary (%s → %s)\n", width, escapeName(c.Path), sizeOf(c.Before), sizeOf(c.After))
		case !bok || !aok:
			fmt.Fprintf(w, " %-*s | %s\n", width, escapeName(c.Path), changeKind(c))
		default:
			add, rem := textdiff.Count(bt, at)
			tadd, trem = tadd+add, trem+rem
			fmt.Fprintf(w, " %-*s | +%d -%d\n", width, escapeName(c.Path), add, rem)
		}
	}
	fmt.Fprintf(w, " %d path(s) changed, %d line(s) added, %d line(s) removed\n", len(changes), tadd, trem)
	return nil
}

func sizeOf(s journal.NodeState) string {
	if s.Kind != journal.File {
		return s.Kind.String()
	}
	return humanSize(s.Size)
}
