package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// version (the program's start), log, status (each the median of 7
// runs), switch to the previous task and back (151 paths written each way:
// the previous task is on another branch), undo and redo (one path each;
// the median of 3), gc --dry-run, gc with the default policy (every task is
// over 30 days old: all but the 10 tagged and the active one go), gc again
// (nothing left to drop) and log again. The history is not made by
// sessions (that would take hours): the paths are not in the root. Run with
// go test -run '^$' -bench History10k -benchtime 1x ./cmd/timeagent/
func BenchmarkHistory10k(b *testing.B) {
	home, root := b.TempDir(), realDirB(b, b.TempDir())
	pathOf, stateAt, contents := buildHistory(b, home, root)
	run := func(args ...string) time.Duration {
		cmd := exec.Command(binary, args...)
		cmd.Dir = root
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("timeagent %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	// median runs a command that changes nothing 7 times: one run's wall
	// time swings by tens of milliseconds on a shared machine.
	median := func(args ...string) time.Duration {
		var ds []time.Duration
		for range 7 {
			ds = append(ds, run(args...))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for i := 0; i < b.N; i++ {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(median("version")), "start-ms")
		b.ReportMetric(ms(median("log", "--json")), "log-json-ms")
		b.ReportMetric(ms(median("log")), "log-ms")
		b.ReportMetric(ms(median("status", "--json")), "status-json-ms")
		b.ReportMetric(ms(median("status")), "status-ms")
		var sw, back []time.Duration
		for range 3 {
			sw = append(sw, run("switch", fmt.Sprint(historyTasks-1)))
			back = append(back, run("switch", fmt.Sprint(historyTasks)))
		}
		slices.Sort(sw)
		slices.Sort(back)
		b.ReportMetric(ms(sw[1]), "switch-ms")
		b.ReportMetric(ms(back[1]), "switch-back-ms")
		// undo and redo: one path written each, so the history's reading
		// is most of it.
		var undo, redo []time.Duration
		for range 3 {
			undo = append(undo, run("undo"))
			redo = append(redo, run("redo"))
		}
		slices.Sort(undo)
		slices.Sort(redo)
		b.ReportMetric(ms(undo[1]), "undo-ms")
		b.ReportMetric(ms(redo[1]), "redo-ms")
		run("switch", fmt.Sprint(historyTasks-1))
		moved := pathOf(historyTasks)
		got, err := os.ReadFile(filepath.Join(root, moved))
		if want := stateAt(historyTasks-1, moved); want.Kind == journal.Absent {
			if !os.IsNotExist(err) {
				b.Fatalf("after switch %d, %s is there (%v), want it absent", historyTasks-1, moved, err)
			}
		} else if err != nil || string(got) != string(contents[want.Blob]) {
			b.Fatalf("after switch %d, %s holds %q (%v), want %q", historyTasks-1, moved, got, err, contents[want.Blob])
		}
		run("switch", fmt.Sprint(historyTasks))
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

// buildHistory writes a history of historyTasks tasks into root's journal
// (state under home) and the active task's tree into root. It returns the
// path each task writes, the state of a path at a task, and the blobs'
// contents, for checks.
func buildHistory(b testing.TB, home, root string) (pathOf func(tasks.ID) string, stateAt func(tasks.ID, string) journal.NodeState, contents map[journal.BlobRef][]byte) {
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
	// Each task writes one of 500 paths; its before-state is that path's
	// state at its parent, so the history is one a real root could have
	// and switch can move through it.
	parents := make([]tasks.ID, historyTasks+1)
	states := make([]journal.NodeState, historyTasks+1)
	pathOf = func(id tasks.ID) string { return fmt.Sprintf("d%d/f%d", id%10, id%500) }
	stateAt = func(at tasks.ID, path string) journal.NodeState {
		for q := at; q != tasks.Base; q = parents[q] {
			if pathOf(q) == path {
				return states[q]
			}
		}
		return journal.NodeState{}
	}
	contents = map[journal.BlobRef][]byte{}
	for id := tasks.ID(1); id <= historyTasks; id++ {
		if id%100 == 0 {
			parent = id / 2 // a branch
		}
		parents[id] = parent
		content := []byte(fmt.Sprintf("content of task %d\n", id))
		ref, err := j.PutBytes(content)
		if err != nil {
			b.Fatal(err)
		}
		contents[ref] = content
		states[id] = journal.NodeState{Kind: journal.File, Mode: 0o644, Size: int64(len(content)), Blob: ref}
		c := journal.Change{Path: pathOf(id), Before: stateAt(parent, pathOf(id)), After: states[id]}
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
	// The root holds the active task's tree.
	for f := tasks.ID(500); f < 1000; f++ {
		p := pathOf(f)
		if st := stateAt(historyTasks, p); st.Kind == journal.File {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), contents[st.Blob], 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return pathOf, stateAt, contents
}

func realDirB(b testing.TB, d string) string {
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(r); err != nil {
		b.Fatal(err)
	}
	return r
}
