package menu

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// memSource is an in-memory history with the tree rules the journal's
// commands follow (undo to the parent, redo to the newest child, switch
// anywhere), for testing the menu's state machine without a terminal. The
// real commands behind it are tested through tmux (cmd/timeagent).
type memSource struct {
	mu      sync.Mutex
	tasks   []Task
	active  uint64
	drift   []string // the next move without Yes is refused over these
	moves   []Move
	tags    map[string]uint64
	changes map[uint64][]Change
	patches map[uint64]map[string]string
	reads   int
}

var epoch = time.Date(2026, 12, 5, 9, 30, 0, 0, time.UTC)

// newMem builds tasks from "id parent summary" triples; active is set.
func newMem(active uint64, spec ...string) *memSource {
	s := &memSource{active: active, tags: map[string]uint64{}, changes: map[uint64][]Change{}, patches: map[uint64]map[string]string{}}
	for _, line := range spec {
		var id, parent uint64
		var summary string
		n, _ := fmt.Sscanf(line, "%d %d", &id, &parent)
		if n != 2 {
			panic("bad spec " + line)
		}
		summary = strings.SplitN(line, " ", 3)[2]
		path := fmt.Sprintf("src/file%d.go", id)
		s.tasks = append(s.tasks, Task{ID: id, Parent: parent, Summary: summary, Kind: "agent", Session: id,
			Created: epoch.Add(time.Duration(id) * time.Minute), Files: 1})
		s.changes[id] = []Change{{Path: path, Kind: "modified"}}
		s.patches[id] = map[string]string{path: fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-old %d\n+new %d\n", path, path, path, path, id, id)}
	}
	return s
}

func (s *memSource) parent(id uint64) uint64 {
	for _, t := range s.tasks {
		if t.ID == id {
			return t.Parent
		}
	}
	return 0
}

func (s *memSource) ancestors(id uint64) map[uint64]bool {
	a := map[uint64]bool{}
	for id != 0 {
		a[id] = true
		id = s.parent(id)
	}
	return a
}

func (s *memSource) History() (History, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	h := History{Active: s.active}
	kids := map[uint64]int{}
	for _, t := range s.tasks {
		kids[t.Parent]++
	}
	h.BaseBranches = kids[0] > 1
	up := s.ancestors(s.active)
	for _, t := range s.tasks {
		t.Branches = kids[t.ID] > 1
		t.Tags = nil
		for name, id := range s.tags {
			if id == t.ID {
				t.Tags = append(t.Tags, name)
			}
		}
		sort.Strings(t.Tags)
		switch {
		case t.ID == s.active:
			t.Status = "current"
		case up[t.ID]:
			t.Status = "past"
		case s.ancestors(t.ID)[s.active] || s.active == 0:
			t.Status = "future"
		default:
			t.Status = "other"
		}
		h.Tasks = append(h.Tasks, t)
		h.Current = max(h.Current, t.ID)
	}
	h.Stamp = fmt.Sprintf("%d %d %v", s.active, len(s.tasks), s.tags)
	return h, nil
}

func (s *memSource) Changes(task uint64) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes[task], nil
}

func (s *memSource) Patch(task uint64) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patches[task], nil
}

func (s *memSource) Move(m Move) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.drift) > 0 && !m.Yes {
		return "", &ConfirmError{Message: fmt.Sprintf("files changed since their task ended: %d path(s)", len(s.drift)), Drifted: s.drift}
	}
	s.moves = append(s.moves, m)
	from := s.active
	switch m.Action {
	case "undo":
		if s.active == 0 {
			return "", fmt.Errorf("already at the base")
		}
		s.active = s.parent(s.active)
	case "redo":
		var next uint64
		for _, t := range s.tasks {
			if t.Parent == s.active {
				next = max(next, t.ID)
			}
		}
		if next == 0 {
			return "", fmt.Errorf("nothing to redo")
		}
		s.active = next
	case "switch":
		s.active = m.Task
	}
	s.drift = nil
	return fmt.Sprintf("%s: task %d → task %d", m.Action, from, s.active), nil
}

func (s *memSource) Tag(name string, task uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags[name] = task
	return nil
}

func (s *memSource) Touching(q string) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []uint64
	for id, cs := range s.changes {
		for _, c := range cs {
			if strings.Contains(c.Path, q) {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// driver runs a Model the way tea.Program does, without a terminal: every
// command's message is fed back to Update. Commands that wait longer than
// a moment (the poll's tick) are dropped; tests send pollMsg themselves.
type driver struct {
	t *testing.T
	m *Model
}

func drive(t *testing.T, src Source, w, h int) *driver {
	t.Helper()
	m := New(src, Options{Poll: -1, Settle: time.Millisecond, Location: time.UTC})
	d := &driver{t: t, m: m}
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(m.Init())
	return d
}

func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				d.run(c)
			}
			return
		}
		if msg != nil {
			d.send(msg)
		}
	case <-time.After(200 * time.Millisecond):
	}
}

func (d *driver) send(msg tea.Msg) {
	if _, ok := msg.(tea.QuitMsg); ok {
		return
	}
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

// keys types each key: a name (enter, esc, tab, up, down, pgdown, pgup)
// or a string of runes.
func (d *driver) keys(keys ...string) {
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "up":
			msg = tea.KeyMsg{Type: tea.KeyUp}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "pgdown":
			msg = tea.KeyMsg{Type: tea.KeyPgDown}
		case "pgup":
			msg = tea.KeyMsg{Type: tea.KeyPgUp}
		default:
			for _, r := range k {
				d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
			}
			continue
		}
		d.send(msg)
	}
}

func branchy() *memSource {
	return newMem(4,
		"1 0 add the parser",
		"2 1 parser tests",
		"3 2 fix the lexer",
		"4 1 rewrite the parser in a branch",
		"5 4 branch: docs",
	)
}

func TestOpenSelectsActive(t *testing.T) {
	d := drive(t, branchy(), 120, 30)
	if got := d.m.Selected(); got != 4 {
		t.Fatalf("selected %d after opening, want the active task 4", got)
	}
	if !strings.Contains(d.m.View(), "src/file4.go") {
		t.Errorf("the preview does not show task 4's path:\n%s", d.m.View())
	}
}

func TestMoveAndSwitch(t *testing.T) {
	src := branchy()
	d := drive(t, src, 120, 30)
	// Rows newest first: 5, 4, 3, 2, 1, 0. From 4, two down is 2.
	d.keys("j", "j")
	if got := d.m.Selected(); got != 2 {
		t.Fatalf("after j j selected %d, want 2", got)
	}
	d.keys("k")
	if got := d.m.Selected(); got != 3 {
		t.Fatalf("after k selected %d, want 3", got)
	}
	d.keys("enter")
	if src.active != 3 {
		t.Fatalf("enter on task 3: active is %d", src.active)
	}
	if d.m.hist.Active != 3 || !strings.Contains(d.m.status, "task 4 → task 3") {
		t.Errorf("after the switch the menu shows active %d, status %q", d.m.hist.Active, d.m.status)
	}
	d.keys("u")
	if src.active != 2 || d.m.hist.Active != 2 {
		t.Errorf("u: source active %d, menu active %d, want 2", src.active, d.m.hist.Active)
	}
	d.keys("r")
	if src.active != 3 {
		t.Errorf("r: active %d, want 3", src.active)
	}
	d.keys("g")
	if d.m.Selected() != 5 {
		t.Errorf("g selects %d, want the newest row 5", d.m.Selected())
	}
	d.keys("G")
	if d.m.Selected() != 0 {
		t.Errorf("G selects %d, want the base", d.m.Selected())
	}
}

func TestDriftConfirm(t *testing.T) {
	src := branchy()
	src.drift = []string{"src/file4.go"}
	d := drive(t, src, 120, 30)
	d.keys("j", "enter")
	if d.m.mode != modeConfirm || src.active != 4 {
		t.Fatalf("drift: mode %d, active %d; want the question and no move", d.m.mode, src.active)
	}
	if v := d.m.View(); !strings.Contains(v, "move to task 3? [y/N]") {
		t.Errorf("the question is not on screen:\n%s", v)
	}
	d.keys("n")
	if d.m.mode != modeBrowse || src.active != 4 || !strings.Contains(d.m.status, "cancelled") {
		t.Fatalf("n: mode %d, active %d, status %q", d.m.mode, src.active, d.m.status)
	}
	d.keys("enter", "y")
	if src.active != 3 {
		t.Fatalf("y: active %d, want 3", src.active)
	}
	last := src.moves[len(src.moves)-1]
	if !last.Yes || last.Task != 3 {
		t.Errorf("the confirmed move was %+v, want switch 3 with Yes", last)
	}
}

func TestFilterBySummaryAndPath(t *testing.T) {
	src := branchy()
	src.changes[2] = append(src.changes[2], Change{Path: "docs/lexer.md", Kind: "created"})
	d := drive(t, src, 120, 30)
	d.keys("/", "lexer", "enter")
	var ids []uint64
	for _, i := range d.m.visible {
		ids = append(ids, d.m.rows[i].ID)
	}
	if fmt.Sprint(ids) != "[3 2]" {
		t.Fatalf("filter lexer shows %v, want [3 2] (3 by summary, 2 by path)", ids)
	}
	if !strings.Contains(d.m.View(), `filter "lexer": 2 shown`) {
		t.Errorf("the title does not name the filter:\n%s", d.m.View())
	}
	d.keys("esc")
	if len(d.m.visible) != 6 {
		t.Errorf("esc left %d rows, want all 6", len(d.m.visible))
	}
	if d.m.Quitting() {
		t.Fatal("esc with a filter quit instead of clearing it")
	}
	d.keys("/", "nothing-matches", "enter")
	if len(d.m.visible) != 0 || !strings.Contains(d.m.View(), "no task matches") {
		t.Errorf("an empty filter result: %d rows\n%s", len(d.m.visible), d.m.View())
	}
	d.keys("enter") // nothing to switch to: no panic, no move
	if len(src.moves) != 0 {
		t.Errorf("enter on an empty list moved: %+v", src.moves)
	}
}

// TestEscDuringPathSearch: esc typed while a filter's path search runs
// clears the filter at once (tmux typed it faster than the search), the
// late answer is dropped, and a move key is held back until then.
func TestEscDuringPathSearch(t *testing.T) {
	src := branchy()
	d := drive(t, src, 120, 30)
	d.keys("/", "lexer")
	_, search := d.m.Update(tea.KeyMsg{Type: tea.KeyEnter}) // the search, not run yet
	if d.m.busy != busySearch || d.m.filter != "lexer" {
		t.Fatalf("after enter: busy %q, filter %q", d.m.busy, d.m.filter)
	}
	d.keys("u")
	if len(src.moves) != 0 {
		t.Errorf("u during the search moved: %+v", src.moves)
	}
	d.keys("esc")
	if d.m.filter != "" || d.m.busy != "" || len(d.m.visible) != 6 || d.m.Quitting() {
		t.Fatalf("esc during the search: filter %q, busy %q, %d rows, quitting %v", d.m.filter, d.m.busy, len(d.m.visible), d.m.Quitting())
	}
	d.run(search)
	if d.m.filter != "" || len(d.m.visible) != 6 {
		t.Errorf("the late search answer brought the filter back: %q, %d rows", d.m.filter, len(d.m.visible))
	}
	d.keys("t", "v2", "enter")
	if src.tags["v2"] == 0 {
		t.Errorf("t after the cancelled search did nothing: tags %v", src.tags)
	}
}

// TestKeysTogether: keys that arrive in one read ("/par" typed fast) act
// one by one.
func TestKeysTogether(t *testing.T) {
	d := drive(t, branchy(), 120, 30)
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj/pars")})
	if d.m.mode != modeFilter || d.m.input.Value() != "pars" {
		t.Fatalf("mode %d, input %q: want the filter being typed", d.m.mode, d.m.input.Value())
	}
	d.keys("enter")
	if d.m.filter != "pars" || d.m.Selected() != 2 {
		t.Errorf("filter %q, selected %d; want pars and task 2 (selected by jj)", d.m.filter, d.m.Selected())
	}
}

func TestTag(t *testing.T) {
	src := branchy()
	d := drive(t, src, 120, 30)
	d.keys("j", "t", "v1", "enter")
	if src.tags["v1"] != 3 {
		t.Fatalf("tags %v, want v1 on task 3", src.tags)
	}
	if !strings.Contains(d.m.View(), "[v1]") {
		t.Errorf("the tag is not shown after tagging:\n%s", d.m.View())
	}
	d.keys("G", "t")
	if d.m.mode != modeBrowse || !strings.Contains(d.m.status, "base cannot be tagged") {
		t.Errorf("t on the base: mode %d, status %q", d.m.mode, d.m.status)
	}
}

func TestPollRefreshKeepsSelection(t *testing.T) {
	src := branchy()
	d := drive(t, src, 120, 30)
	d.keys("j") // task 3
	src.mu.Lock()
	src.tasks = append(src.tasks, Task{ID: 6, Parent: 5, Summary: "new task from a live session", Created: epoch})
	src.mu.Unlock()
	reads := src.reads
	d.send(pollMsg{})
	if src.reads != reads+1 {
		t.Fatalf("a poll read the history %d times", src.reads-reads)
	}
	if len(d.m.rows) != 7 || d.m.Selected() != 3 {
		t.Fatalf("after the poll: %d rows, selected %d; want 7 rows and task 3 still selected", len(d.m.rows), d.m.Selected())
	}
	// An unchanged history is not redrawn: the stamp is the same.
	d.m.rows[0].task.Summary = "marker"
	d.send(pollMsg{})
	if d.m.rows[0].task.Summary != "marker" {
		t.Error("an unchanged poll rebuilt the rows")
	}
}

func TestDiffPaging(t *testing.T) {
	src := branchy()
	var b strings.Builder
	b.WriteString("diff --git a/big.txt b/big.txt\n@@ -0,0 +1,500 @@\n")
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "+line %d\n", i)
	}
	src.changes[4] = []Change{{Path: "big.txt", Kind: "created"}, {Path: "src/file4.go", Kind: "modified"}}
	src.patches[4]["big.txt"] = b.String()
	d := drive(t, src, 120, 30)
	if !strings.Contains(d.m.View(), "+line 1\n") && !strings.Contains(d.m.View(), "+line 1 ") {
		t.Fatalf("the first page does not start the diff:\n%s", d.m.View())
	}
	d.keys("tab", "pgdown")
	page := d.m.diffHeight()
	if d.m.diffTop != page {
		t.Fatalf("pgdown: diff top %d, want %d", d.m.diffTop, page)
	}
	if v := d.m.View(); !strings.Contains(v, fmt.Sprintf("+line %d", page)) || strings.Contains(v, "+line 2\n") {
		t.Errorf("second page wrong:\n%s", v)
	}
	for i := 0; i < 100; i++ {
		d.keys("pgdown")
	}
	if want := 502 - page; d.m.diffTop != want {
		t.Errorf("paging past the end: top %d, want %d (the last page)", d.m.diffTop, want)
	}
	d.keys("j")
	if d.m.fileCursor != 1 || d.m.diffTop != 0 || d.m.Selected() != 4 {
		t.Errorf("j in the files pane: file %d, top %d, task %d", d.m.fileCursor, d.m.diffTop, d.m.Selected())
	}
	d.keys("tab", "j")
	if d.m.Selected() != 3 {
		t.Errorf("tab back then j: task %d, want 3", d.m.Selected())
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "esc"} {
		d := drive(t, branchy(), 80, 24)
		_, cmd := d.m.Update(keyMsg(k))
		if cmd == nil || !d.m.Quitting() {
			t.Errorf("%s did not quit", k)
			continue
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s: the command is not tea.Quit", k)
		}
	}
}

func keyMsg(k string) tea.KeyMsg {
	if k == "esc" {
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func TestSplitPatch(t *testing.T) {
	patch := "diff --git a/x b/x\nindex 1..2\n-a\n+b\n" +
		"diff --git a/dir/with space b/dir/with space\nBinary files a/dir/with space and b/dir/with space differ\n" +
		"diff --git \"a/tab\\there\" \"b/tab\\there\"\n+q\n"
	got := SplitPatch(patch)
	want := map[string]string{
		"x":              "diff --git a/x b/x\nindex 1..2\n-a\n+b\n",
		"dir/with space": "diff --git a/dir/with space b/dir/with space\nBinary files a/dir/with space and b/dir/with space differ\n",
		"tab\there":      "diff --git \"a/tab\\there\" \"b/tab\\there\"\n+q\n",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d paths %v", len(got), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("path %q: got %q want %q", k, got[k], v)
		}
	}
}

// TestScreens pins the main views as golden text screens (no colour: the
// tests' output is not a terminal).
func TestScreens(t *testing.T) {
	cases := []struct {
		name string
		w, h int
		prep func(*memSource)
		keys []string
	}{
		{name: "tree-120x30", w: 120, h: 30},
		{name: "stacked-80x24", w: 80, h: 24},
		{name: "files-focus", w: 120, h: 30, keys: []string{"j", "tab"}},
		{name: "filter", w: 120, h: 30, keys: []string{"/", "pars", "enter"}},
		{name: "drift-question", w: 120, h: 30, prep: func(s *memSource) { s.drift = []string{"src/file3.go"} }, keys: []string{"j", "enter"}},
		{name: "tag-prompt", w: 120, h: 30, keys: []string{"t", "release"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := branchy()
			if c.prep != nil {
				c.prep(src)
			}
			d := drive(t, src, c.w, c.h)
			d.keys(c.keys...)
			got := d.m.View() + "\n"
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("screen differs from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}
