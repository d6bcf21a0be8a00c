package session

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
)

// Capture is a scan of a root made outside any session (an agent's hook
// started without `timeagent run`), compared with the stat cache: what
// changed since the last scan or apply.
type Capture struct {
	w        *Workspace
	cache    cow.Manifest
	m        cow.Manifest
	complete bool
	// Changes is what changed since the stat cache was saved.
	Changes []journal.Change
	// Skipped lists paths the scan could not record (sockets, devices).
	Skipped []string
	// First is true when the root had no stat cache: nothing to compare
	// with, Changes is empty and Save makes the scan the baseline.
	First bool
}

// ScanCapture scans w's tree with the stat cache (as a copy-mode session's
// baseline does) and returns what changed since it was saved. A cache
// filled by applies alone (fuse sessions, undo) knows only the paths they
// wrote: then only those are compared.
func ScanCapture(w *Workspace) (*Capture, error) {
	j := w.Journal
	cache, err := j.StatCache()
	if err != nil {
		return nil, fmt.Errorf("read stat cache: %w", err)
	}
	m, skipped, err := cow.Scan(w.Tree, j, cow.ScanOptions{Cache: cache, Exclude: w.Exclude()})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", w.Root, err)
	}
	complete, err := j.StatsComplete()
	if err != nil {
		return nil, err
	}
	c := &Capture{w: w, cache: cache, m: m, complete: complete, Skipped: skipped, First: len(cache) == 0}
	if len(cache) > 0 {
		seen := m
		if !complete {
			seen = make(cow.Manifest, len(cache))
			for p := range cache {
				if e, ok := m[p]; ok {
					seen[p] = e
				}
			}
		}
		c.Changes = cow.Diff(cache, seen)
	}
	return c, nil
}

// Save makes the scan the stat cache. Call it only once the task holding
// Changes is committed: a crash in between leaves the older cache, from
// which the changes are found again.
func (c *Capture) Save() error {
	if err := saveStats(c.w.Journal, c.cache, c.m); err != nil {
		return err
	}
	if !c.complete {
		if err := c.w.Journal.MarkStatsComplete(); err != nil {
			return err
		}
	}
	return nil
}

// AppendLog adds one line to the state dir's session log (LogPath),
// prefixed with who wrote it. It never fails: a log that cannot be written
// is skipped.
func AppendLog(stateDir, prefix, format string, args ...any) {
	l := openLog(stateDir)
	l.prefix = prefix
	l.note(format, args...)
	l.close()
}
