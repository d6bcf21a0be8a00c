package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

// duDoc is du's JSON document.
type duDoc struct {
	SchemaVersion int    `json:"schemaVersion"`
	Journal       string `json:"journal"`
	journal.Usage
	// Budget is the configured size budget (0: none).
	Budget int64 `json:"budget"`
}

func (a *app) duCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "du",
		Example: `  timeagent du            # journal size, blobs and sharing, per session
  timeagent du --json     # the same as a document`,
		Short: "Show how much disk the journal takes: blobs, their sharing, each session's share",
		Long: `du measures the journal: its size on disk, the distinct contents (blobs) it
stores and what they take compressed, how many records refer to them and how
much the sharing saves, garbage that gc would sweep, and per session its tasks,
changes and content ("own" is what no other session or the last scan shares:
what dropping that session's tasks would free). Session "-" is outside tasks.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("du", func(ws *session.Workspace) error {
				u, err := ws.Journal.Usage()
				if err != nil {
					return err
				}
				cfg, err := cow.LoadGCConfig(ws.StateDir)
				if err != nil {
					return err
				}
				doc := duDoc{SchemaVersion: schemaVersion, Journal: ws.Journal.Dir(), Usage: u, Budget: cfg.MaxSize}
				if doc.PerSession == nil {
					doc.PerSession = []journal.SessionUsage{}
				}
				if a.json {
					return writeJSON(a.io.out, doc)
				}
				a.printDu(doc)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

func (a *app) printDu(d duDoc) {
	w := a.io.out
	size := cow.FormatSize
	fmt.Fprintf(w, "journal   %s\n", d.Journal)
	fmt.Fprintf(w, "on disk   %s\n", size(d.DiskBytes))
	if d.Budget > 0 {
		fmt.Fprintf(w, "budget    %s of stored content (run collects past it; now %s)\n", size(d.Budget), size(d.StoredBytes))
	}
	fmt.Fprintf(w, "history   %d task(s) in %d session(s)\n", d.Tasks, d.Sessions)
	fmt.Fprintf(w, "content   %d blob(s), %s, stored as %d chunk(s) in %s\n", d.Blobs, size(d.BlobBytes), d.Chunks, size(d.StoredBytes))
	fmt.Fprintf(w, "sharing   %d reference(s); %d blob(s) shared by several records save %s\n", d.References, d.SharedBlobs, size(d.SavedBytes))
	fmt.Fprintf(w, "garbage   %d blob(s), %s, that nothing refers to (timeagent gc sweeps them)\n", d.Unreferenced, size(d.UnreferencedBytes))
	if len(d.PerSession) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "session\tstarted\ttasks\tchanges\tblobs\tcontent\town")
	for _, s := range d.PerSession {
		id, started := "-", "-"
		if s.Session != 0 {
			id = fmt.Sprint(s.Session)
		}
		if !s.Started.IsZero() {
			started = s.Started.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", id, started, s.Tasks, s.Changes, s.Blobs, size(s.BlobBytes), size(s.OwnBytes))
	}
	tw.Flush()
}
