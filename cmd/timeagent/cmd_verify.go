package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

func (a *app) verifyCommand() *cobra.Command {
	var salvage bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Re-hash every blob and check every record of the journal; exit 1 on any damage",
		Example: `  timeagent verify
  timeagent verify --json
  timeagent verify --salvage   # copy what is readable into a new journal`,
		Long: `Re-hash every blob and check every record of the journal. Each damage is
reported with the tasks and paths it concerns: for damaged or missing content,
every task (its before or after state of a path) and stat cache entry that uses
it. Exit 1 on any damage. verify only reads: it runs even when an unfinished
apply cannot be finished.

With --salvage, a damaged journal (one that verify reports, or that no
command can open) is replaced by a new one holding every record and blob
that can still be read, each blob checked against its hash. The old journal
is kept, renamed aside. The report names every task and path that was lost;
undo, redo and switch through a task that lost changes are refused.`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if salvage {
				return a.runSalvage()
			}
			ran := false
			err := a.withWorkspace("verify", func(ws *session.Workspace) error {
				ran = true
				return a.runVerify(ws)
			})
			if err != nil && !ran && errors.Is(err, journal.ErrCorrupt) {
				return a.unopenable(err)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	cmd.Flags().BoolVar(&salvage, "salvage", false,
		"copy every readable record and blob of a damaged journal into a new one (the old one is kept aside) and say what was lost")
	return cmd
}

// verifyDoc is verify's JSON document.
type verifyDoc struct {
	SchemaVersion int              `json:"schemaVersion"`
	OK            bool             `json:"ok"`
	Damage        []journal.Damage `json:"damage"`
	// Tasks and Paths are every task and path some damage concerns.
	Tasks []tasks.ID `json:"tasks"`
	Paths []string   `json:"paths"`
}

func (a *app) runVerify(ws *session.Workspace) error {
	p := a.progress()
	last := -1
	damage, err := ws.Journal.Verify(func(done, total int) {
		if p == nil {
			return
		}
		if last < 0 {
			p.Start("verifying", int64(total))
			last = 0
		}
		p.Add(int64(done - last))
		last = done
	})
	if p != nil {
		p.Done()
	}
	if err != nil {
		return err
	}
	doc := verifyDoc{SchemaVersion: schemaVersion, OK: len(damage) == 0, Damage: damage, Tasks: []tasks.ID{}, Paths: []string{}}
	if doc.Damage == nil {
		doc.Damage = []journal.Damage{}
	}
	doc.Tasks, doc.Paths = affected(damage)
	if a.json {
		if err := writeJSON(a.io.out, doc); err != nil {
			return err
		}
	} else {
		printVerify(a.io.out, doc, ws.StateDir)
	}
	if len(damage) == 0 {
		return nil
	}
	msg := fmt.Sprintf("the journal has %s", plural.Count(len(damage), "damaged record"))
	if a.json {
		writeJSONError(a.io.err, msg)
	} else {
		fmt.Fprintf(a.io.err, "timeagent: %s\n", msg)
	}
	return &exitError{1}
}

// unopenable reports a journal too damaged to open as verify's finding.
func (a *app) unopenable(err error) error {
	d := journal.Damage{Kind: "journal", Key: "journal", Detail: err.Error()}
	if a.json {
		doc := verifyDoc{SchemaVersion: schemaVersion, Damage: []journal.Damage{d}, Tasks: []tasks.ID{}, Paths: []string{}}
		if werr := writeJSON(a.io.out, doc); werr != nil {
			return werr
		}
		writeJSONError(a.io.err, "the journal cannot be opened: it is damaged")
	} else {
		fmt.Fprintf(a.io.out, "damaged journal: it cannot be opened: %v\n", err)
		fmt.Fprintln(a.io.out, "next: your files were not changed; `timeagent verify --salvage` copies every record and blob that can still be read into a new journal (the damaged one is kept aside) and names what was lost")
		fmt.Fprintln(a.io.err, "timeagent: the journal cannot be opened: it is damaged")
	}
	return &exitError{1}
}

// affected merges the tasks and paths of every damage.
func affected(damage []journal.Damage) ([]tasks.ID, []string) {
	ids, paths := []tasks.ID{}, []string{}
	seenID, seenPath := map[tasks.ID]bool{}, map[string]bool{}
	for _, d := range damage {
		di, dp := d.Affected()
		for _, id := range di {
			if !seenID[id] {
				seenID[id] = true
				ids = append(ids, id)
			}
		}
		for _, p := range dp {
			if !seenPath[p] {
				seenPath[p] = true
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(ids)
	slices.Sort(paths)
	return ids, paths
}

// maxUses is how many uses of damaged content one human line lists.
const maxUses = 8

// printVerify prints one line per damage, then a summary and what to do.
func printVerify(w io.Writer, doc verifyDoc, stateDir string) {
	if doc.OK {
		fmt.Fprintln(w, "journal verified: every record decodes and every blob matches its hash")
		return
	}
	blocked := false
	for _, d := range doc.Damage {
		apply := ""
		if d.NeededByApply {
			apply = "; the unfinished apply needs it"
			blocked = true
		}
		fmt.Fprintf(w, "damaged %s: %s%s%s\n", damageSubject(d), d.Detail, usesText(d.UsedBy), apply)
	}
	fmt.Fprint(w, plural.Count(len(doc.Damage), "damaged record"))
	if len(doc.Tasks) > 0 {
		ids := make([]string, len(doc.Tasks))
		for i, id := range doc.Tasks {
			ids[i] = fmt.Sprint(id)
		}
		fmt.Fprintf(w, "; tasks affected: %s", strings.Join(ids, ", "))
	}
	if len(doc.Paths) > 0 {
		paths := make([]string, len(doc.Paths))
		for i, p := range doc.Paths {
			paths[i] = escapeName(p)
		}
		fmt.Fprintf(w, "; paths affected: %s", listSome(paths, maxUses))
	}
	fmt.Fprintln(w)
	if blocked {
		fmt.Fprintln(w, "next: the unfinished apply cannot be finished: status, log and diff still work, an undo, redo or switch whose content is readable takes its place, run and checkpoint refuse until then; `timeagent verify --salvage` keeps everything readable in a new journal without that apply")
		return
	}
	fmt.Fprintln(w, "next: undo, redo and switch that need damaged content refuse without changing your files, the others work (timeagent log shows the tasks); `timeagent verify --salvage` copies what is readable into a new journal")
}

// damageSubject names what is damaged, by task, session and path where the
// damage has them.
func damageSubject(d journal.Damage) string {
	switch d.Kind {
	case "layer":
		return fmt.Sprintf("change of %s in task %d", escapeName(d.Path), d.Task)
	case "stat":
		return "stat cache entry of " + escapeName(d.Path)
	case "task":
		if d.Task != tasks.Base {
			return fmt.Sprintf("record of task %d", d.Task)
		}
	case "session":
		if d.Session != 0 {
			return fmt.Sprintf("record of session %d", d.Session)
		}
	case "action":
		if d.Session != 0 {
			return fmt.Sprintf("%s of session %d", d.Key, d.Session)
		}
	case "intent":
		return "intent (the record of an unfinished apply)"
	}
	return d.Key
}

// usesText renders the uses of damaged content for a human line.
func usesText(uses []journal.BlobUse) string {
	if len(uses) == 0 {
		return ""
	}
	s := make([]string, len(uses))
	for i, u := range uses {
		s[i] = escapeName(u.String())
	}
	return "; needed by " + listSome(s, maxUses)
}

// listSome joins the first n items and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
