package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

func openTest(t testing.TB) *Journal {
	t.Helper()
	j, err := Open(filepath.Join(t.TempDir(), "journal"), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// reopen closes j and opens its directory again, so a test reads what is on disk.
func reopen(t testing.TB, j *Journal) *Journal {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(j.Dir(), j.Root())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j2.Close() })
	return j2
}

var now = time.Date(2026, 12, 2, 17, 0, 0, 123456789, time.UTC)

func TestRecordsRoundTrip(t *testing.T) {
	j := openTest(t)
	st := State{Active: 3, Applied: 2, Current: 7, Clock: 42}
	tk := []tasks.Task{
		{ID: 1, Parent: 0, Summary: "first", Session: 1, Kind: tasks.KindAgent, Created: now, Files: 3, Visit: 1},
		{ID: 2, Parent: 1, Summary: "ünïcode ✓", Session: 1, Kind: tasks.KindOutside, Created: now, Ended: now.Add(time.Second), Visit: 9},
		{ID: 300, Parent: 2},
	}
	ss := []Session{
		{ID: 1, Argv: []string{"sh", "-c", "echo hi"}, Mode: "copy", Pid: 77, PidStart: 5, Root: "/repo",
			StartedAt: now, EndedAt: now.Add(time.Minute), ExitCode: 0, State: SessionCompleted, Base: 0, Tasks: []tasks.ID{1, 2}},
		{ID: 2, Argv: []string{"codex"}, Mode: "fuse", ExitCode: -1, State: SessionActive, StartedAt: now},
	}
	in := Intent{From: 3, To: 1, Started: now, Reason: "undo"}
	acts := []Action{
		{Seq: 1, Session: 2, Time: now, Tool: "npm", Executable: "/usr/bin/npm", Argv: []string{"npm", "publish"},
			Cwd: "/repo", Category: "package", Risk: "high", Decision: "refused", ExitCode: 126, DurationMs: 5},
		{Seq: 2, Session: 2, Tool: "git", Reversible: true},
	}
	var sid uint64
	err := j.Update(func(tx *Tx) error {
		if err := tx.SetState(st); err != nil {
			return err
		}
		for _, x := range tk {
			if err := tx.PutTask(x); err != nil {
				return err
			}
		}
		for _, x := range ss {
			if err := tx.PutSession(x); err != nil {
				return err
			}
		}
		for _, a := range acts {
			if err := tx.PutAction(a); err != nil {
				return err
			}
		}
		var err error
		sid, err = tx.NextSessionID()
		if err != nil {
			return err
		}
		return tx.PutIntent(in)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sid != 1 {
		t.Errorf("first session id = %d", sid)
	}
	j = reopen(t, j)

	gotState, err := j.State()
	check(t, "state", err, gotState, st)
	gotTasks, err := j.Tasks()
	check(t, "tasks", err, gotTasks, tk)
	gotTask, err := j.Task(300)
	check(t, "task", err, gotTask, tk[2])
	if _, err := j.Task(4); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing task: %v", err)
	}
	gotSessions, err := j.Sessions()
	check(t, "sessions", err, gotSessions, ss)
	gotSession, err := j.Session(1)
	check(t, "session", err, gotSession, ss[0])
	if _, err := j.Session(9); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	latest, err := j.LatestSession()
	check(t, "latest", err, latest, ss[1])
	gotIntent, err := j.Intent()
	check(t, "intent", err, *gotIntent, in)
	gotActs, err := j.Actions(2)
	check(t, "actions", err, gotActs, acts)
	none, err := j.Actions(1)
	check(t, "no actions", err, len(none), 0)
	tree, err := j.Tree()
	if err != nil || !tree.Has(300) {
		t.Errorf("tree: %v", err)
	}

	err = j.Update(func(tx *Tx) error {
		if err := tx.DeleteIntent(); err != nil {
			return err
		}
		sid, err = tx.NextSessionID()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if sid != 2 {
		t.Errorf("second session id = %d", sid)
	}
	if in, err := j.Intent(); in != nil || err != nil {
		t.Errorf("intent after delete: %v %v", in, err)
	}
}

func check[T any](t *testing.T, what string, err error, got, want T) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestEmptyJournal(t *testing.T) {
	j := openTest(t)
	st, err := j.State()
	check(t, "state", err, st, State{})
	in, err := j.Intent()
	if in != nil || err != nil {
		t.Errorf("intent: %v %v", in, err)
	}
	if _, err := j.LatestSession(); !errors.Is(err, ErrNotFound) {
		t.Errorf("latest session: %v", err)
	}
	tk, err := j.Tasks()
	check(t, "tasks", err, len(tk), 0)
	sc, err := j.StatCache()
	check(t, "stat cache", err, len(sc), 0)
	tree, err := j.Tree()
	if err != nil || tree == nil {
		t.Errorf("tree: %v", err)
	}
}

func sampleStates() []NodeState {
	return []NodeState{
		{},
		{Kind: File, Mode: 0o644, Size: 12, Blob: BlobRef{Hash: 0xdeadbeef, Size: 12}},
		{Kind: File, Mode: 0o4755 | fs.ModeSetuid, Size: 1 << 40, Blob: BlobRef{Hash: ^uint64(0), Size: 1 << 40, Seq: 65535}},
		{Kind: File, Mode: 0o600},
		{Kind: Dir, Mode: 0o755 | fs.ModeSticky},
		{Kind: Symlink, Target: "../a b/ç"},
		{Kind: Symlink, Mode: 0o777, Target: string([]byte{0xff, 0, 'x'})},
		{Kind: Fifo, Mode: 0o600},
	}
}

func TestLayerRoundTrip(t *testing.T) {
	j := openTest(t)
	states := sampleStates()
	var changes []Change
	paths := []string{"b", "a", "a/b", "a b", "z/ü", ".git/HEAD", "a\x00b", "dir/with/many/levels/file.go"}
	for i, p := range paths {
		changes = append(changes, Change{Path: p, Before: states[i%len(states)], After: states[(i+3)%len(states)]})
	}
	if err := j.PutChanges(5, changes); err != nil {
		t.Fatal(err)
	}
	if err := j.PutChanges(6, changes[:1]); err != nil {
		t.Fatal(err)
	}
	if err := j.PutChanges(4, changes[1:2]); err != nil {
		t.Fatal(err)
	}
	j = reopen(t, j)
	want := append([]Change(nil), changes...)
	sortChanges(want)
	got, err := j.Layer(5)
	check(t, "layer", err, got, want)
	c, ok, err := j.LayerChange(5, "z/ü")
	if err != nil || !ok {
		t.Fatalf("layer change: %v %v", ok, err)
	}
	check(t, "layer change", nil, c, changes[4])
	if _, ok, err := j.LayerChange(5, "nope"); ok || err != nil {
		t.Errorf("missing change: %v %v", ok, err)
	}
	// Replacing a path and deleting others.
	repl := Change{Path: "a", After: NodeState{Kind: Dir, Mode: 0o700}}
	if err := j.PutChanges(5, []Change{repl}); err != nil {
		t.Fatal(err)
	}
	if err := j.DeleteChanges(5, []string{"b", "a/b", "missing"}); err != nil {
		t.Fatal(err)
	}
	got, err = j.Layer(5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(changes)-2 {
		t.Errorf("after delete: %d changes", len(got))
	}
	for _, c := range got {
		if c.Path == "b" || c.Path == "a/b" {
			t.Errorf("deleted %q still there", c.Path)
		}
		if c.Path == "a" && !reflect.DeepEqual(c, repl) {
			t.Errorf("replaced change = %+v", c)
		}
	}
	l6, err := j.Layer(6)
	check(t, "layer 6", err, l6, changes[:1])
	l7, err := j.Layer(7)
	check(t, "layer 7", err, len(l7), 0)
}

func TestStatCacheRoundTrip(t *testing.T) {
	j := openTest(t)
	up := map[string]StatEntry{
		"a":     {Kind: File, Size: 3, MtimeNs: now.UnixNano(), CtimeNs: -5, Ino: 1 << 60, Mode: 0o644, Blob: BlobRef{Hash: 1, Size: 3, Seq: 2}},
		"d":     {Kind: Dir, Mode: 0o755, MtimeNs: 1},
		"l":     {Kind: Symlink, Target: "a", Mode: 0o777},
		"p":     {Kind: Fifo, Mode: 0o600},
		"empty": {},
	}
	if err := j.PutStats(up, nil); err != nil {
		t.Fatal(err)
	}
	j = reopen(t, j)
	got, err := j.StatCache()
	check(t, "stat cache", err, got, up)
	if err := j.PutStats(map[string]StatEntry{"a": {Kind: Dir}}, []string{"d", "l", "x"}); err != nil {
		t.Fatal(err)
	}
	got, err = j.StatCache()
	check(t, "stat cache after", err, got, map[string]StatEntry{"a": {Kind: Dir}, "p": up["p"], "empty": {}})
}

func TestStats(t *testing.T) {
	j := openTest(t)
	up := map[string]StatEntry{
		"a":       {Kind: File, Size: 3, MtimeNs: now.UnixNano(), CtimeNs: -1, Ino: 7, Mode: 0o644, Blob: BlobRef{Hash: 1, Size: 3}},
		"a/b":     {Kind: Dir, Mode: 0o755},
		"ab":      {Kind: Symlink, Target: "a"},
		"d/empty": {},
	}
	if err := j.PutStats(up, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		want  map[string]StatEntry
	}{
		{"none asked", nil, map[string]StatEntry{}},
		{"one", []string{"a"}, map[string]StatEntry{"a": up["a"]}},
		{"prefix is not a match", []string{"a/", "a/b/c", "d"}, map[string]StatEntry{}},
		{"some missing", []string{"ab", "missing", "d/empty", "a"}, map[string]StatEntry{"ab": up["ab"], "d/empty": up["d/empty"], "a": up["a"]}},
		{"asked twice", []string{"a/b", "a/b"}, map[string]StatEntry{"a/b": up["a/b"]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := j.Stats(tc.paths)
			check(t, "stats", err, got, tc.want)
		})
	}
	if err := j.PutStats(nil, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	got, err := j.Stats([]string{"a", "ab"})
	check(t, "stats after delete", err, got, map[string]StatEntry{"ab": up["ab"]})

	// A damaged entry is ErrCorrupt, not a panic or a silent miss.
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(statKey("bad"), []byte{0xff, 1}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Stats([]string{"ab", "bad"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged entry: err = %v, want ErrCorrupt", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Stats([]string{"ab"}); err == nil {
		t.Fatal("closed journal: no error")
	}
}

func TestStatCache100k(t *testing.T) {
	j := openTest(t)
	up := make(map[string]StatEntry, 100000)
	for i := 0; i < 100000; i++ {
		up[fmt.Sprintf("src/pkg%03d/file%05d.go", i%1000, i)] = StatEntry{Kind: File, Size: int64(i), MtimeNs: now.UnixNano() + int64(i),
			CtimeNs: now.UnixNano(), Ino: uint64(i), Mode: 0o644, Blob: BlobRef{Hash: uint64(i) * 0x9e3779b97f4a7c15, Size: int64(i)}}
	}
	start := time.Now()
	if err := j.PutStats(up, nil); err != nil {
		t.Fatal(err)
	}
	put := time.Since(start)
	j = reopen(t, j)
	start, cpu := time.Now(), cpuTime()
	got, err := j.StatCache()
	read, readCPU := time.Since(start), cpuTime()-cpu
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, up) {
		t.Fatalf("stat cache differs: %d entries", len(got))
	}
	t.Logf("100k stats: put %v, read %v (%v CPU)", put, read, readCPU)
}

func TestOpenCreatesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "journal")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode())
	}
	if _, err := j.PutBytes([]byte("secret")); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", e.Name(), info.Mode())
		}
	}
}

func TestUpdateIsAtomic(t *testing.T) {
	j := openTest(t)
	boom := errors.New("boom")
	err := j.Update(func(tx *Tx) error {
		if err := tx.PutTask(tasks.Task{ID: 1}); err != nil {
			return err
		}
		if err := tx.SetState(State{Active: 1}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if _, err := j.Task(1); !errors.Is(err, ErrNotFound) {
		t.Errorf("task written by a failed update: %v", err)
	}
	if s, _ := j.State(); s != (State{}) {
		t.Errorf("state written by a failed update: %+v", s)
	}
}

func TestNextSessionIDConcurrent(t *testing.T) {
	j := openTest(t)
	const n = 20
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := j.Update(func(tx *Tx) error {
				id, err := tx.NextSessionID()
				if err != nil {
					return err
				}
				return tx.PutSession(Session{ID: id})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ss, err := j.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != n {
		t.Fatalf("%d sessions for %d allocations", len(ss), n)
	}
	for i, s := range ss {
		if s.ID != uint64(i+1) {
			t.Errorf("session %d has id %d", i, s.ID)
		}
	}
}

func TestClosedJournal(t *testing.T) {
	j := openTest(t)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := j.State(); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("State after close: %v", err)
	}
	if _, err := j.PutBytes([]byte("x")); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("PutBytes after close: %v", err)
	}
	if err := j.Update(func(*Tx) error { return nil }); err == nil {
		t.Error("Update after close succeeded")
	}
	if err := j.PutChanges(1, []Change{{Path: "a"}}); err == nil {
		t.Error("PutChanges after close succeeded")
	}
}

// TestNothingOnStderr opens healthy, busy and damaged journals with stderr
// redirected to a file and checks that badger printed nothing.
func TestNothingOnStderr(t *testing.T) {
	tmp := t.TempDir()
	out, err := os.Create(filepath.Join(tmp, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = out
	func() {
		defer func() { os.Stderr = saved }()
		dir := filepath.Join(tmp, "j")
		j, err := Open(dir, "/r")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := j.PutBytes(randomBytes(1 << 20)); err != nil {
			t.Error(err)
		}
		Open(dir, "/r") // busy
		j.Close()
		os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("garbage"), 0o600)
		Open(dir, "/r")
	}()
	out.Close()
	b, _ := os.ReadFile(out.Name())
	if len(b) > 0 {
		t.Errorf("printed on stderr:\n%s", b)
	}
}

func TestTxReads(t *testing.T) {
	j := openTest(t)
	err := j.Update(func(tx *Tx) error {
		s, err := tx.State()
		if err != nil || s != (State{}) {
			t.Errorf("empty state: %+v %v", s, err)
		}
		if _, err := tx.Task(1); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing task: %v", err)
		}
		if err := tx.PutTask(tasks.Task{ID: 1, Summary: "x"}); err != nil {
			return err
		}
		if got, err := tx.Task(1); err != nil || got.Summary != "x" {
			t.Errorf("task written in this tx: %+v %v", got, err)
		}
		return tx.SetState(State{Active: 1, Current: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent read-modify-write of the state through Tx.State loses nothing.
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := j.Update(func(tx *Tx) error {
				s, err := tx.State()
				if err != nil {
					return err
				}
				s.Clock++
				return tx.SetState(s)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if s, err := j.State(); err != nil || s.Clock != 10 || s.Active != 1 {
		t.Errorf("state after 10 increments: %+v %v", s, err)
	}
}

func TestLayer100k(t *testing.T) {
	j := openTest(t)
	changes := make([]Change, 100000)
	for i := range changes {
		changes[i] = Change{Path: fmt.Sprintf("node_modules/pkg%04d/lib/f%06d.js", i%5000, i),
			After: NodeState{Kind: File, Mode: 0o644, Size: int64(i), Blob: BlobRef{Hash: uint64(i), Size: int64(i)}}}
	}
	start := time.Now()
	if err := j.PutChanges(9, changes); err != nil {
		t.Fatal(err)
	}
	put := time.Since(start)
	start, cpu := time.Now(), cpuTime()
	got, err := j.Layer(9)
	read, readCPU := time.Since(start), cpuTime()-cpu
	if err != nil {
		t.Fatal(err)
	}
	sortChanges(changes)
	if !reflect.DeepEqual(got, changes) {
		t.Fatalf("layer of %d changes differs", len(got))
	}
	paths := make([]string, 0, len(changes))
	for _, c := range changes[:50000] {
		paths = append(paths, c.Path)
	}
	if err := j.DeleteChanges(9, paths); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Layer(9); err != nil || len(got) != 50000 {
		t.Fatalf("after deleting 50k: %d %v", len(got), err)
	}
	t.Logf("100k changes: put %v, read %v (%v CPU)", put, read, readCPU)
}

func TestUpdatePanicIsTheCallers(t *testing.T) {
	j := openTest(t)
	defer func() {
		if r := recover(); r != "mine" {
			t.Errorf("recovered %v, want the caller's own panic value", r)
		}
	}()
	j.Update(func(tx *Tx) error { panic("mine") })
}

// sortChanges sorts changes by path, the order Layer returns.
func sortChanges(cs []Change) {
	sort.Slice(cs, func(a, b int) bool { return cs[a].Path < cs[b].Path })
}
