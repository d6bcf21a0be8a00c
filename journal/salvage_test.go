package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// journalOfTasks writes a closed journal of n tasks in a chain; task i
// creates t<i>/f.txt with 2 KiB of its own content and modifies the file of
// task i-1. It returns every task's layer and the content of every blob.
func journalOfTasks(t *testing.T, n int) (dir string, layers map[tasks.ID][]Change, blobs map[BlobRef][]byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	layers, blobs = map[tasks.ID][]Change{}, map[BlobRef][]byte{}
	put := func(b []byte) NodeState {
		r, err := j.PutBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		blobs[r] = b
		return NodeState{Kind: File, Mode: 0o644, Size: r.Size, Blob: r}
	}
	content := func(i, v int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("task %d version %d\n", i, v)), 2<<10/20)
	}
	var prev NodeState
	for i := 1; i <= n; i++ {
		id := tasks.ID(i)
		cur := put(content(i, 1))
		changes := []Change{{Path: fmt.Sprintf("t%03d/f.txt", i), After: cur}}
		if i > 1 {
			changes = append(changes, Change{Path: fmt.Sprintf("t%03d/f.txt", i-1), Before: prev, After: put(content(i-1, 2))})
		}
		prev = cur
		if err := j.PutChanges(id, changes); err != nil {
			t.Fatal(err)
		}
		if err := j.Update(func(tx *Tx) error {
			// A task as sessions write them: a prompt's summary, times.
			created := time.Date(2026, 12, 5, 9, 0, i, 0, time.UTC)
			if err := tx.PutTask(tasks.Task{ID: id, Parent: id - 1, Kind: tasks.KindAgent, Session: 1, Files: len(changes),
				Summary: tasks.Summarize(fmt.Sprintf("prompt %d: refactor the parser so that the lexer errors carry positions and add tests", i)),
				Created: created, Ended: created.Add(time.Minute), Visit: uint64(i)}); err != nil {
				return err
			}
			return tx.SetState(State{Active: id, Applied: id, Current: id})
		}); err != nil {
			t.Fatal(err)
		}
		if layers[id], err = j.Layer(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, layers, blobs
}

// flip xors one byte of the file at off (negative: from the end).
func flip(t *testing.T, name string, off int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0x5a
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSalvage damages one file of a journal (a table, the manifest, the key
// registry), sees Open fail, salvages, and checks that the new journal
// opens, keeps the old one aside unchanged, and holds every layer and blob
// of every task the report does not name, byte for byte; a named task is
// refused by Layer or misses only the named paths.
func TestSalvage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"table", func(t *testing.T, dir string) {
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("no table")
			}
			fi, _ := os.Stat(ssts[0])
			flip(t, ssts[0], int(fi.Size()/3))
		}},
		{"table-last-block", func(t *testing.T, dir string) {
			// The last data block holds the last keys: layers and tasks.
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			b, err := os.ReadFile(ssts[0])
			if err != nil {
				t.Fatal(err)
			}
			end := len(b) - 4
			end -= int(binary.BigEndian.Uint32(b[end:])) + 4
			end -= int(binary.BigEndian.Uint32(b[end:]))
			flip(t, ssts[0], end-64)
		}},
		{"manifest", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "MANIFEST"), 12) }},
		{"keyregistry", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, "KEYREGISTRY"), -3) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, layers, blobs := journalOfTasks(t, 40)
			c.damage(t, dir)
			if j, err := Open(dir, "/r"); err == nil {
				j.Close()
				t.Fatal("the damaged journal opens")
			}
			before := snapshotDir(t, dir)
			rep, err := Salvage(dir, "/r", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %+v", rep)
			if got := snapshotDir(t, rep.Damaged); !equalSnapshots(before, got) {
				t.Errorf("the damaged journal was changed")
			}
			j, err := Open(dir, "/r")
			if err != nil {
				t.Fatalf("open the salvaged journal: %v", err)
			}
			defer j.Close()
			lost := map[tasks.ID]LostTask{}
			for _, l := range rep.LostTasks {
				lost[l.ID] = l
			}
			if (c.name == "manifest" || c.name == "keyregistry") && len(rep.LostTasks) > 0 {
				t.Errorf("%s damage lost tasks: %+v", c.name, rep.LostTasks)
			}
			intact := 0
			for id, want := range layers {
				got, err := j.Layer(id)
				l, isLost := lost[id]
				if isLost && l.ChangesLost {
					if !errors.Is(err, ErrCorrupt) {
						t.Errorf("task %d lost changes but Layer = %v", id, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("task %d: %v", id, err)
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("task %d: layer %v, want %v", id, got, want)
					continue
				}
				missing := map[string]bool{}
				for _, ch := range want {
					for _, s := range []NodeState{ch.Before, ch.After} {
						if s.Kind != File {
							continue
						}
						var b bytes.Buffer
						if err := j.WriteBlob(s.Blob, &b); err != nil || !bytes.Equal(b.Bytes(), blobs[s.Blob]) {
							missing[ch.Path] = true
						}
					}
				}
				if fmt.Sprint(sortedKeys(missing)) != fmt.Sprint(l.Paths) && (len(missing) > 0 || len(l.Paths) > 0) {
					t.Errorf("task %d: unreadable paths %v, report says %v", id, sortedKeys(missing), l.Paths)
				}
				if !isLost {
					intact++
				}
			}
			if intact == 0 {
				t.Errorf("no task of %d intact", len(layers))
			}
			if c.name != "manifest" && c.name != "keyregistry" && len(rep.LostTasks) == 0 && len(rep.Problems) == 0 {
				t.Errorf("a damaged table lost nothing")
			}
			tree, err := j.Tree()
			if err != nil || len(tree.All()) != len(layers) {
				t.Errorf("tree after salvage: %v", err)
			}
		})
	}
}

func sortedKeys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func equalSnapshots(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestSalvageHealthy: a journal that reads and verifies is left alone.
func TestSalvageHealthy(t *testing.T) {
	dir, _, _ := journalOfTasks(t, 3)
	before := snapshotDir(t, dir)
	if rep, err := Salvage(dir, "/r", time.Now()); !errors.Is(err, ErrNothingToSalvage) {
		t.Fatalf("Salvage of a healthy journal = %+v, %v", rep, err)
	}
	if after := snapshotDir(t, dir); !equalSnapshots(before, after) {
		t.Error("the healthy journal was changed")
	}
	if m, _ := filepath.Glob(dir + ".*"); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}
}

// TestSalvageValueLog: content damaged in a value log (the journal still
// opens) is reported as the paths of the tasks that used it; the rest is
// kept, and the lost content is refused, never returned wrong.
func TestSalvageValueLog(t *testing.T) {
	dir, content := journalOnDisk(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if i := bytes.Index(b, content[1000:1064]); i >= 0 {
			b[i+7] ^= 0x55
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := Salvage(dir, "/r", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	want := fmt.Sprint([]LostTask{{ID: 1, Paths: []string{"src/big.bin"}}, {ID: 2, Paths: []string{"src/big.bin"}}})
	if got := fmt.Sprint(rep.LostTasks); got != want {
		t.Errorf("lost %s, want %s", got, want)
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	layer, err := j.Layer(2)
	if err != nil || len(layer) != 2 {
		t.Fatalf("layer 2: %v, %v", layer, err)
	}
	var b bytes.Buffer
	if err := j.WriteBlob(layer[1].Before.Blob, &b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("the lost content reads: %v", err)
	}
}
