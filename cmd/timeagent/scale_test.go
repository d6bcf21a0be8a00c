package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
	"github.com/timeagent-dev/timeagent/tasks"
)

// historyTasks is the size of the history BenchmarkHistory10k builds.
const historyTasks = 10000

// BenchmarkHistory10k builds a history of 10,000 tasks (one path each, a
// branch every 100 tasks, a tag every 1,000) straight into a root's
// journal, then times the commands a user runs on it as processes:
// log, status, gc --dry-run, gc with the default policy (every task is
// over 30 days old: all but the 10 tagged and the active one go), gc again
// (nothing left to drop) and log again. The history is not made by
// sessions (that would take hours): the paths are not in the root. Run with
// go test -run '^$' -bench History10k -benchtime 1x ./cmd/timeagent/
func BenchmarkHistory10k(b *testing.B) {
	home, root := b.TempDir(), realDirB(b, b.TempDir())
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	b.Setenv(session.HomeEnv, home)
	st, err := session.StateDir(root)
	if err != nil {
		b.Fatal(err)
	}
	ws, err := session.Open(root, st, "bench")
	if err != nil {
		b.Fatal(err)
	}
	j := ws.Journal
	old := time.Now().Add(-60 * 24 * time.Hour)
	parent := tasks.Base
	var batch []tasks.Task
	flush := func() {
		if err := j.Update(func(tx *journal.Tx) error {
			for _, t := range batch {
				if err := tx.PutTask(t); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for id := tasks.ID(1); id <= historyTasks; id++ {
		if id%100 == 0 {
			parent = id / 2 // a branch
		}
		content := []byte(fmt.Sprintf("content of task %d\n", id))
		ref, err := j.PutBytes(content)
		if err != nil {
			b.Fatal(err)
		}
		c := journal.Change{Path: fmt.Sprintf("d%d/f%d", id%10, id%500),
			After: journal.NodeState{Kind: journal.File, Mode: 0o644, Size: int64(len(content)), Blob: ref}}
		if err := j.PutChanges(id, []journal.Change{c}); err != nil {
			b.Fatal(err)
		}
		created := old.Add(time.Duration(id) * time.Minute)
		batch = append(batch, tasks.Task{ID: id, Parent: parent, Summary: fmt.Sprintf("task %d", id),
			Kind: tasks.KindAgent, Created: created, Ended: created, Files: 1, Visit: uint64(id)})
		if len(batch) == 500 {
			flush()
		}
		parent = id
	}
	flush()
	if err := j.Update(func(tx *journal.Tx) error {
		for id := tasks.ID(1000); id <= historyTasks; id += 1000 {
			if err := tx.PutTag(fmt.Sprintf("t%d", id), id); err != nil {
				return err
			}
		}
		return tx.SetState(journal.State{Active: historyTasks, Applied: historyTasks, Current: historyTasks, Clock: historyTasks})
	}); err != nil {
		b.Fatal(err)
	}
	ws.Close()
	run := func(args ...string) time.Duration {
		cmd := exec.Command(binary, args...)
		cmd.Dir = root
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("timeagent %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(run("log", "--json")), "log-ms")
		b.ReportMetric(ms(run("status", "--json")), "status-ms")
		b.ReportMetric(ms(run("gc", "--dry-run")), "gc-dry-ms")
		b.ReportMetric(ms(run("gc")), "gc-ms")
		b.ReportMetric(ms(run("gc", "--keep", "0s")), "gc-again-ms")
		b.ReportMetric(ms(run("log", "--json")), "log-after-gc-ms")
	}
	out, err := exec.Command(binary, "-C", root, "log", "--json").Output()
	if err != nil {
		b.Fatal(err)
	}
	var l logDoc
	if err := json.Unmarshal(out, &l); err != nil {
		b.Fatal(err)
	}
	if len(l.Tasks) != 10 {
		b.Fatalf("after gc the log holds %d tasks, want the 10 tagged ones (the active one is tagged)", len(l.Tasks))
	}
}

func realDirB(b *testing.B, d string) string {
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(r); err != nil {
		b.Fatal(err)
	}
	return r
}
