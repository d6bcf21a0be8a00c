package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// growthSessions is how many sessions, each changing 1% of the files,
// follow the first one in the journal-growth section.
const growthSessions = 10

// duFigures are the parts of `timeagent du --json` the bench reports.
type duFigures struct {
	DiskBytes   int64 `json:"diskBytes"`
	StoredBytes int64 `json:"storedBytes"`
	Tasks       int   `json:"tasks"`
}

func (b *bench) du(home, tree string) (duFigures, error) {
	var d duFigures
	out, err := b.ta(home, tree, "du", "--json").output()
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		return d, fmt.Errorf("du --json: %w", err)
	}
	return d, nil
}

// treeBytes is the size of every file of a tree, .git included.
func treeBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// growth measures the journal after a first copy session and ten more that
// each change 1% of the files, against TimeAgent 0.2's full copy (1.1x the
// tree per session), then a gc that keeps only the active task.
func (b *bench) growth(n int) error {
	tree, list := b.trees[n], b.lists[n]
	logf("journal growth, %s", label(n))
	home := filepath.Join(b.cfg.work, fmt.Sprintf("growth-home-%d", n))
	os.RemoveAll(home)
	defer os.RemoveAll(home)
	restore := func() error {
		_, err := (cmdSpec{argv: []string{"git", "-C", tree, "checkout", "--", "."}}).output()
		return err
	}
	defer restore()
	if _, err := b.ta(home, tree, "run", "--mode", "copy", "--", "true").output(); err != nil {
		return err
	}
	first, err := b.du(home, tree)
	if err != nil {
		return err
	}
	for s := 1; s <= growthSessions; s++ {
		m := []string{b.cfg.self, "modify", "-list", list, "-root", tree, "-n", fmt.Sprint(max(1, n/100)), "-seed", fmt.Sprint(104729 * s)}
		if _, err := b.ta(home, tree, append([]string{"run", "--mode", "copy", "--"}, m...)...).output(); err != nil {
			return err
		}
	}
	after, err := b.du(home, tree)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := b.ta(home, tree, "gc", "--keep", "0s").output(); err != nil {
		return err
	}
	gcTime := time.Since(start)
	collected, err := b.du(home, tree)
	if err != nil {
		return err
	}
	size := treeBytes(tree)
	sessions := int64(growthSessions + 1)
	full := sessions * size * 11 / 10
	mib := func(v int64) string { return fmt.Sprintf("%.1f", float64(v)/(1<<20)) }
	t := &table{
		title: fmt.Sprintf("Journal growth, %s (%s MiB tree, .git included)", label(n), mib(size)),
		head:  []string{"after", "journal on disk MiB", "stored content MiB", "vs TimeAgent 0.2 full copies"},
	}
	t.row("the first copy session", mib(first.DiskBytes), mib(first.StoredBytes), ratio(time.Duration(first.DiskBytes), time.Duration(size*11/10)))
	t.row(fmt.Sprintf("%d more sessions, each changing 1%% of the files", growthSessions), mib(after.DiskBytes), mib(after.StoredBytes), ratio(time.Duration(after.DiskBytes), time.Duration(full)))
	t.row(fmt.Sprintf("`gc --keep 0s` (%s s; keeps the active task)", secs(gcTime)), mib(collected.DiskBytes), mib(collected.StoredBytes), ratio(time.Duration(collected.DiskBytes), time.Duration(full)))
	t.notes = append(t.notes, fmt.Sprintf("TimeAgent 0.2 copies the tree at every session: 1.1x the tree per session, %s MiB for these %d sessions. The journal dedupes unchanged files and compresses what it stores; badger's value log is preallocated in 256 MiB files, which gc cannot shrink while they are being written.", mib(full), sessions))
	b.tables = append(b.tables, t)
	r := float64(after.DiskBytes) / float64(full)
	b.targets = append(b.targets, target{
		what:     fmt.Sprintf("journal after %d sessions changing 1%% of a %s tree ≤ 0.1x TimeAgent's full copies", growthSessions, label(n)),
		measured: fmt.Sprintf("%.3fx (%s MiB vs %s MiB)", r, mib(after.DiskBytes), mib(full)),
		met:      boolp(r <= 0.1),
	})
	return restore()
}
