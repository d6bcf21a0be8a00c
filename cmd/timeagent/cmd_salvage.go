package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

// salvageDoc is `verify --salvage`'s JSON document.
type salvageDoc struct {
	SchemaVersion int `json:"schemaVersion"`
	// Salvaged is false when the journal was healthy and left alone.
	Salvaged bool `json:"salvaged"`
	*journal.SalvageReport
}

func (a *app) runSalvage() error {
	if a.active != nil {
		return errors.New("verify --salvage cannot run inside a session: end the session, then run it")
	}
	if err := a.locate(); err != nil {
		return err
	}
	rep, err := session.SalvageJournal(a.rootDir, a.state)
	if errors.Is(err, journal.ErrNothingToSalvage) {
		if a.json {
			return writeJSON(a.io.out, salvageDoc{SchemaVersion: schemaVersion})
		}
		fmt.Fprintln(a.io.out, "journal verified: nothing to salvage")
		return nil
	}
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(a.io.out, salvageDoc{SchemaVersion: schemaVersion, Salvaged: true, SalvageReport: rep})
	}
	printSalvage(a.io.out, rep)
	return nil
}

// printSalvage prints what a salvage found, kept and lost, one line each.
func printSalvage(w io.Writer, rep *journal.SalvageReport) {
	k := rep.Kept
	fmt.Fprintf(w, "salvaged the journal: kept %s, %s, %s, %s, %s\n", plural.Count(k.Tasks, "task"),
		plural.Count(k.Changes, "change"), plural.Count(k.Blobs, "blob"), plural.Count(k.Sessions, "session"), plural.Count(k.Actions, "action"))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "found: %s\n", p) // names in it are quoted (%q)
	}
	for _, l := range rep.LostTasks {
		var what []string
		if l.ChangesLost {
			what = append(what, l.Detail+" (undo, redo and switch through it are refused)")
		}
		if len(l.Paths) > 0 {
			paths := make([]string, len(l.Paths))
			for i, p := range l.Paths {
				paths[i] = escapeName(p)
			}
			what = append(what, "the content of "+listSome(paths, maxUses))
		}
		fmt.Fprintf(w, "lost: task %d: %s\n", l.ID, strings.Join(what, "; "))
	}
	for _, r := range rep.LostRecords {
		fmt.Fprintf(w, "lost: %s\n", r) // likewise
	}
	if len(rep.LostTasks) == 0 {
		fmt.Fprintln(w, "no task lost anything: every task restores as before")
	}
	fmt.Fprintf(w, "the damaged journal is kept in %s\n", escapeName(rep.Damaged))
	fmt.Fprintln(w, "next: timeagent log shows the tasks; your files were not changed")
}
