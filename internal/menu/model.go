package menu

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/timeagent-dev/timeagent/internal/graph"
)

// mode is what the keys do now.
type mode int

const (
	modeBrowse  mode = iota
	modeFilter       // typing the filter
	modeTag          // typing a tag name
	modeConfirm      // a move waits for y/N
)

// focus is the pane the arrows move in.
type focus int

const (
	focusTasks focus = iota
	focusFiles
)

// Options tune a menu.
type Options struct {
	// Poll is how often the history is read again to notice changes made
	// elsewhere (a session's new task, an undo in another terminal); 0
	// means 2 s. The menu waits longer when reading takes long, so polling
	// costs at most a tenth of the time. Negative: never (tests send the
	// poll themselves).
	Poll time.Duration
	// Location renders times (default time.Local).
	Location *time.Location
	// Settle is how long the selection must rest before the preview is
	// loaded (default 120 ms), so scrolling never waits for the source.
	Settle time.Duration
}

// Model is the menu's state. It is a tea.Model; Update never blocks: every
// Source call runs in a tea.Cmd.
type Model struct {
	src  Source
	opts Options

	width, height int

	hist    History
	loaded  bool
	byID    map[uint64]int // task id → index in rows
	rows    []row          // every row, newest first
	visible []int          // indexes into rows that pass the filter
	cursor  int            // index into visible
	top     int            // first visible row on screen

	filter      string
	filterPaths map[uint64]bool // tasks touching a path matching filter
	input       textinput.Model
	mode        mode
	focus       focus
	confirm     *ConfirmError
	pending     Move
	busy        string
	status      string
	statusIsErr bool
	changes     map[uint64][]Change
	patches     map[uint64]map[string]string
	loadErr     map[uint64]error
	fileCursor  int
	diffTop     int
	settleSeq   int
	pollEvery   time.Duration
	quitting    bool
}

// row is one line of the tree: the drawn graph and its task (ID 0: the base).
type row struct {
	graph.Row
	task Task
}

// New returns a menu reading from src.
func New(src Source, opts Options) *Model {
	if opts.Poll == 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.Settle <= 0 {
		opts.Settle = 120 * time.Millisecond
	}
	in := textinput.New()
	in.Prompt = ""
	in.CharLimit = 200
	in.Cursor.SetMode(cursor.CursorStatic) // no blinking: stable screens
	return &Model{src: src, opts: opts, width: 80, height: 24, input: in, pollEvery: opts.Poll,
		changes: map[uint64][]Change{}, patches: map[uint64]map[string]string{}, loadErr: map[uint64]error{}}
}

// Messages the model's commands send back.
type (
	historyMsg struct {
		h    History
		err  error
		cost time.Duration
		poll bool
	}
	changesMsg struct {
		task    uint64
		changes []Change
		patch   map[string]string
		err     error
	}
	moveMsg struct {
		move Move
		text string
		err  error
	}
	tagMsg struct {
		name string
		task uint64
		err  error
	}
	touchingMsg struct {
		query string
		ids   []uint64
		err   error
	}
	pollMsg   struct{}
	settleMsg struct{ seq int }
)

// Init loads the history and starts polling.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.loadHistory(false), m.schedulePoll())
}

func (m *Model) loadHistory(poll bool) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		start := time.Now()
		h, err := src.History()
		return historyMsg{h: h, err: err, cost: time.Since(start), poll: poll}
	}
}

func (m *Model) schedulePoll() tea.Cmd {
	if m.opts.Poll < 0 {
		return nil
	}
	return tea.Tick(m.pollEvery, func(time.Time) tea.Msg { return pollMsg{} })
}

func (m *Model) loadPreview(task uint64) tea.Cmd {
	if task == 0 {
		return nil
	}
	if _, ok := m.changes[task]; ok {
		return nil
	}
	src := m.src
	return func() tea.Msg {
		ch, err := src.Changes(task)
		if err != nil {
			return changesMsg{task: task, err: err}
		}
		p, err := src.Patch(task)
		return changesMsg{task: task, changes: ch, patch: p, err: err}
	}
}

func (m *Model) settle() tea.Cmd {
	m.settleSeq++
	seq := m.settleSeq
	return tea.Tick(m.opts.Settle, func(time.Time) tea.Msg { return settleMsg{seq} })
}

// busySearch is the busy text while the paths of a filter are searched:
// unlike a move, esc cancels it.
const busySearch = "search paths"

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.clampScroll()
		return m, nil
	case historyMsg:
		return m, m.gotHistory(msg)
	case pollMsg:
		if m.busy != "" {
			return m, m.schedulePoll()
		}
		return m, m.loadHistory(true)
	case settleMsg:
		if msg.seq != m.settleSeq {
			return m, nil
		}
		return m, m.loadPreview(m.selectedID())
	case changesMsg:
		if msg.err != nil {
			m.loadErr[msg.task] = msg.err
			m.changes[msg.task] = nil
			return m, nil
		}
		m.changes[msg.task] = msg.changes
		m.patches[msg.task] = msg.patch
		return m, nil
	case moveMsg:
		return m, m.gotMove(msg)
	case tagMsg:
		m.busy = ""
		if msg.err != nil {
			m.setError(msg.err)
			return m, nil
		}
		m.setStatus(fmt.Sprintf("tagged task %d %s", msg.task, msg.name))
		return m, m.loadHistory(false)
	case touchingMsg:
		if m.busy == busySearch {
			m.busy = ""
		}
		if msg.query != m.filter {
			return m, nil // esc or another filter came first
		}
		if msg.err != nil {
			m.setError(msg.err)
			return m, nil
		}
		m.filterPaths = map[uint64]bool{}
		for _, id := range msg.ids {
			m.filterPaths[id] = true
		}
		m.applyFilter()
		return m, m.settle()
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			// Keys typed faster than the screen reads them arrive as one
			// message ("/blob"): each is a key of its own, and the first
			// may change what the next ones do.
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return m, tea.Batch(cmds...)
		}
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) gotHistory(msg historyMsg) tea.Cmd {
	var next tea.Cmd
	if msg.poll {
		// Poll at most a tenth of the time: a slow read waits longer.
		m.pollEvery = max(m.opts.Poll, 10*msg.cost)
		next = m.schedulePoll()
	}
	if msg.err != nil {
		m.setError(msg.err)
		return next
	}
	if m.loaded && msg.h.Stamp != "" && msg.h.Stamp == m.hist.Stamp {
		return next
	}
	keep := m.selectedID()
	first := !m.loaded
	m.setHistory(msg.h)
	if first {
		keep = msg.h.Active
	}
	m.selectID(keep)
	return tea.Batch(next, m.settle())
}

// setHistory rebuilds the rows from h and forgets previews (a task's file
// count grows while its session runs).
func (m *Model) setHistory(h History) {
	m.hist, m.loaded = h, true
	nodes := make([]graph.Node, 0, len(h.Tasks)+1)
	tasksByID := make(map[uint64]Task, len(h.Tasks)+1)
	base := Task{ID: 0, Summary: "(base: before the first task)", Branches: h.BaseBranches, Status: "past"}
	if h.Active == 0 {
		base.Status = "current"
	}
	tasksByID[0] = base
	nodes = append(nodes, graph.Node{ID: 0, Parent: 0, Current: h.Active == 0, Branch: h.BaseBranches})
	for _, t := range h.Tasks {
		tasksByID[t.ID] = t
		nodes = append(nodes, graph.Node{ID: t.ID, Parent: t.Parent, Current: t.Status == "current",
			Future: t.Status == "future", Branch: t.Branches})
	}
	laid := graph.Layout(nodes, 0)
	m.rows = make([]row, len(laid))
	m.byID = make(map[uint64]int, len(laid))
	for i, r := range laid {
		m.rows[i] = row{Row: r, task: tasksByID[r.ID]}
		m.byID[r.ID] = i
	}
	m.changes = map[uint64][]Change{}
	m.patches = map[uint64]map[string]string{}
	m.loadErr = map[uint64]error{}
	m.applyFilter()
}

// applyFilter keeps the rows whose summary, tags or (once Touching
// answered) changed paths match the filter.
func (m *Model) applyFilter() {
	keep := m.selectedID()
	m.visible = m.visible[:0]
	q := strings.ToLower(m.filter)
	for i, r := range m.rows {
		if q == "" || m.matches(r.task, q) {
			m.visible = append(m.visible, i)
		}
	}
	m.selectID(keep)
}

func (m *Model) matches(t Task, q string) bool {
	if strings.Contains(strings.ToLower(t.Summary), q) || m.filterPaths[t.ID] {
		return true
	}
	for _, tag := range t.Tags {
		if strings.Contains(strings.ToLower(tag), q) {
			return true
		}
	}
	return false
}

// selectID puts the cursor on task id, or the nearest row when it is
// filtered out.
func (m *Model) selectID(id uint64) {
	if len(m.visible) == 0 {
		m.cursor = 0
		return
	}
	want, ok := m.byID[id]
	if !ok {
		want = 0
	}
	i := sort.SearchInts(m.visible, want)
	m.cursor = min(i, len(m.visible)-1)
	m.fileCursor, m.diffTop = 0, 0
	m.clampScroll()
}

func (m *Model) selectedID() uint64 {
	if m.cursor < 0 || m.cursor >= len(m.visible) {
		return 0
	}
	return m.rows[m.visible[m.cursor]].ID
}

// Selected is the task under the cursor (0: the base).
func (m *Model) Selected() uint64 { return m.selectedID() }

func (m *Model) gotMove(msg moveMsg) tea.Cmd {
	m.busy = ""
	var ce *ConfirmError
	if errors.As(msg.err, &ce) && !msg.move.Yes {
		m.confirm, m.pending, m.mode = ce, msg.move, modeConfirm
		return nil
	}
	if msg.err != nil {
		m.setError(msg.err)
		return m.loadHistory(false)
	}
	m.setStatus(msg.text)
	return m.loadHistory(false)
}

func (m *Model) setStatus(s string) { m.status, m.statusIsErr = s, false }
func (m *Model) setError(err error) { m.status, m.statusIsErr = err.Error(), true }

func (m *Model) do(mv Move) tea.Cmd {
	m.busy = mv.Action
	if mv.Action == "switch" {
		m.busy = fmt.Sprintf("switch to task %d", mv.Task)
	}
	m.status = ""
	src := m.src
	return func() tea.Msg {
		text, err := src.Move(mv)
		return moveMsg{move: mv, text: text, err: err}
	}
}

func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	switch m.mode {
	case modeFilter:
		return m.filterKey(k)
	case modeTag:
		return m.tagKey(k)
	case modeConfirm:
		return m.confirmKey(k)
	}
	s := k.String()
	if s == "ctrl+c" || s == "q" || (s == "esc" && m.filter == "") {
		m.quitting = true
		return tea.Quit
	}
	if m.busy != "" {
		switch s {
		case "enter", "u", "r", "t", "/":
			return nil // one move at a time; the keys come back when it ends
		}
	}
	switch s {
	case "esc":
		if m.busy == busySearch {
			m.busy = "" // the search's answer is dropped when it comes
		}
		m.filter, m.filterPaths = "", nil
		m.applyFilter()
		return m.settle()
	case "tab":
		if m.focus == focusTasks {
			m.focus = focusFiles
		} else {
			m.focus = focusTasks
		}
	case "up", "k":
		return m.moveCursor(-1)
	case "down", "j":
		return m.moveCursor(1)
	case "home", "g":
		return m.moveCursor(-len(m.rows))
	case "end", "G":
		return m.moveCursor(len(m.rows))
	case "pgup", "b":
		if m.focus == focusFiles {
			m.diffTop = max(0, m.diffTop-m.diffHeight())
			return nil
		}
		return m.moveCursor(-m.listHeight())
	case "pgdown", " ", "f":
		if m.focus == focusFiles {
			m.diffTop += m.diffHeight()
			m.clampDiff()
			return nil
		}
		return m.moveCursor(m.listHeight())
	case "ctrl+d":
		m.diffTop += m.diffHeight() / 2
		m.clampDiff()
	case "ctrl+u":
		m.diffTop = max(0, m.diffTop-m.diffHeight()/2)
	case "enter":
		if !m.loaded || len(m.visible) == 0 {
			return nil
		}
		id := m.selectedID()
		if id == m.hist.Active {
			m.setStatus(fmt.Sprintf("task %d is already the active task", id))
			return nil
		}
		return m.do(Move{Action: "switch", Task: id})
	case "u":
		return m.do(Move{Action: "undo"})
	case "r":
		return m.do(Move{Action: "redo"})
	case "/":
		m.mode = modeFilter
		m.input.SetValue(m.filter)
		m.input.CursorEnd()
		m.input.Focus()
	case "t":
		if m.selectedID() == 0 {
			m.setStatus("the base cannot be tagged: pick a task")
			return nil
		}
		m.mode = modeTag
		m.input.SetValue("")
		m.input.Focus()
	}
	return nil
}

func (m *Model) moveCursor(d int) tea.Cmd {
	if len(m.visible) == 0 {
		return nil
	}
	if m.focus == focusFiles && (d == 1 || d == -1) {
		n := len(m.changes[m.selectedID()])
		m.fileCursor = max(0, min(n-1, m.fileCursor+d))
		m.diffTop = 0
		return nil
	}
	c := max(0, min(len(m.visible)-1, m.cursor+d))
	if c == m.cursor {
		return nil
	}
	m.cursor = c
	m.fileCursor, m.diffTop = 0, 0
	m.clampScroll()
	return m.settle()
}

func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.mode = modeBrowse
		m.input.Blur()
		return nil
	case "enter":
		m.mode = modeBrowse
		m.input.Blur()
		m.filter = strings.TrimSpace(m.input.Value())
		m.filterPaths = nil
		m.applyFilter()
		if m.filter == "" {
			return m.settle()
		}
		q, src := m.filter, m.src
		m.busy = busySearch
		return func() tea.Msg {
			ids, err := src.Touching(q)
			return touchingMsg{query: q, ids: ids, err: err}
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

func (m *Model) tagKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.mode = modeBrowse
		m.input.Blur()
		return nil
	case "enter":
		m.mode = modeBrowse
		m.input.Blur()
		name, id, src := strings.TrimSpace(m.input.Value()), m.selectedID(), m.src
		if name == "" {
			return nil
		}
		m.busy = "tag"
		return func() tea.Msg { return tagMsg{name: name, task: id, err: src.Tag(name, id)} }
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

func (m *Model) confirmKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "y", "Y":
		m.mode, m.confirm = modeBrowse, nil
		mv := m.pending
		mv.Yes = true
		return m.do(mv)
	case "n", "N", "esc", "enter", "q":
		m.mode, m.confirm = modeBrowse, nil
		m.setStatus(m.pending.Action + " cancelled: nothing was changed")
	}
	return nil
}

// clampScroll keeps the cursor row on screen.
func (m *Model) clampScroll() {
	h := m.listHeight()
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+h {
		m.top = m.cursor - h + 1
	}
	m.top = max(0, min(m.top, len(m.visible)-h))
	m.top = max(0, m.top)
}

func (m *Model) clampDiff() {
	lines := len(m.diffLines())
	m.diffTop = max(0, min(m.diffTop, lines-m.diffHeight()))
}

// Quitting reports whether the user asked to leave.
func (m *Model) Quitting() bool { return m.quitting }
