package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// gcDoc is gc's JSON document.
type gcDoc struct {
	SchemaVersion int `json:"schemaVersion"`
	cow.GCResult
	DiskBefore int64 `json:"diskBefore"`
	DiskAfter  int64 `json:"diskAfter"`
	// ValueLogRewrites counts the value-log files badger rewrote.
	ValueLogRewrites int `json:"valueLogRewrites"`
}

type gcOptions struct {
	keep, maxSize string
	dryRun        bool
}

func (a *app) gcCommand() *cobra.Command {
	var o gcOptions
	cmd := &cobra.Command{
		Use: "gc [--keep DURATION] [--max-size SIZE] [--dry-run]",
		Example: `  timeagent gc --dry-run          # what the default policy (30 days) would drop
  timeagent gc --keep 7d          # keep a week of tasks, tagged ones and the current state
  timeagent gc --max-size 1G      # drop the oldest tasks until the history fits`,
		Short: "Drop old history by a policy, free the blobs nothing needs, and give the space back",
		Long: `gc keeps every task created within --keep (default 30d, or the configured one),
every tagged task, the active task and the task the files are in; every other
task is dropped. A kept task whose parent is dropped is attached to its nearest
kept ancestor with the whole change from there, so its tree stays exactly what
it was; the oldest dropped tasks on the way to the active task are squashed into
the base (undo stops there). Your files and every kept task never change.

With --max-size (or a configured budget), older tasks are dropped, oldest first,
until the content the kept history needs fits. Then blobs nothing refers to are
deleted (mark and sweep) and badger's value log is compacted. --dry-run only
reports. gc is crash-safe: an interrupted gc is finished by the next command.
It refuses while a session runs on the root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var pol cow.GCPolicy
			var err error
			if o.keep != "" {
				if pol.Keep, err = cow.ParseDuration(o.keep); err != nil {
					return &usageError{fmt.Errorf("--keep: %w", err)}
				}
			}
			if o.maxSize != "" {
				if pol.MaxSize, err = cow.ParseSize(o.maxSize); err != nil {
					return &usageError{fmt.Errorf("--max-size: %w", err)}
				}
			}
			if a.active != nil {
				return errors.New("gc cannot run inside a session: run it when the session has ended")
			}
			return a.withWorkspace("gc", func(ws *session.Workspace) error {
				cfg, err := cow.LoadGCConfig(ws.StateDir)
				if err != nil {
					return err
				}
				if o.keep == "" {
					pol.Keep = cfg.KeepOrDefault()
				}
				if o.maxSize == "" {
					pol.MaxSize = cfg.MaxSize
				}
				pol.Now = time.Now()
				doc, err := runGC(ws.Journal, pol, o.dryRun)
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.io.out, doc)
				}
				printGC(a.io.out, doc)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&o.keep, "keep", "", "keep every task created within this long (like 30d or 36h; default 30d)")
	cmd.Flags().StringVar(&o.maxSize, "max-size", "", "drop older tasks until the history's stored content fits (like 500M or 2G)")
	cmd.Flags().BoolVarP(&o.dryRun, "dry-run", "n", false, "report what gc would drop and free, change nothing")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

// runGC collects the journal and gives the space back to the file system.
func runGC(j *journal.Journal, pol cow.GCPolicy, dryRun bool) (gcDoc, error) {
	doc := gcDoc{SchemaVersion: schemaVersion}
	var err error
	if doc.DiskBefore, err = journal.DiskBytes(j.Dir()); err != nil {
		return doc, err
	}
	if doc.GCResult, err = cow.GC(j, pol, dryRun); err != nil {
		return doc, err
	}
	if !dryRun {
		if doc.ValueLogRewrites, err = j.ReclaimSpace(0.5); err != nil {
			return doc, err
		}
	}
	doc.DiskAfter, err = journal.DiskBytes(j.Dir())
	return doc, err
}

func printGC(w io.Writer, d gcDoc) {
	size := cow.FormatSize
	verb, freed := "dropped", "freed"
	if d.DryRun {
		verb, freed = "would drop", "would free"
	}
	if len(d.Dropped) == 0 {
		fmt.Fprintf(w, "gc: every task is kept (%d)\n", d.Kept)
	} else {
		fmt.Fprintf(w, "gc: %s %d task(s) (%s), kept %d\n", verb, len(d.Dropped), idRanges(d.Dropped), d.Kept)
	}
	if d.Squashed != 0 {
		fmt.Fprintf(w, "gc: the base takes the state of task %d (undo stops there)\n", d.Squashed)
	}
	fmt.Fprintf(w, "gc: history content %s -> %s stored\n", size(d.ContentBefore), size(d.ContentAfter))
	if d.OverBudget {
		fmt.Fprintln(w, "gc: still over the size budget: the tagged, active and applied tasks alone need more (delete tags or raise the budget)")
	}
	if !d.DryRun || len(d.Dropped) == 0 {
		fmt.Fprintf(w, "gc: %s %d blob(s), %s of content (%d chunk(s), %s stored)\n", freed, d.Swept.Blobs, size(d.Swept.BlobBytes), d.Swept.Chunks, size(d.Swept.StoredBytes))
	}
	if d.DryRun {
		fmt.Fprintln(w, "gc: dry run, nothing was changed")
		return
	}
	fmt.Fprintf(w, "gc: journal on disk %s -> %s\n", size(d.DiskBefore), size(d.DiskAfter))
}

// idRanges renders sorted ids as "1-4, 7, 9-10".
func idRanges(ids []tasks.ID) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
