package menu

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

var (
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleTitle    = lipgloss.NewStyle().Bold(true)
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleAdd      = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleDel      = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleHunk     = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
	styleDim      = lipgloss.NewStyle().Faint(true)
)

// sideBySide is the narrowest screen showing the tree and the preview side
// by side; narrower ones stack them.
const sideBySide = 100

// body is the height left for the panes: the title, the key help and the
// status line take one line each.
func (m *Model) body() int { return max(2, m.height-3) }

func (m *Model) listWidth() int {
	if m.width >= sideBySide {
		return m.width * 11 / 20
	}
	return m.width
}

func (m *Model) listHeight() int {
	if m.width >= sideBySide {
		return m.body()
	}
	return max(1, m.body()/2)
}

func (m *Model) previewSize() (w, h int) {
	if m.width >= sideBySide {
		return m.width - m.listWidth() - 1, m.body()
	}
	return m.width, m.body() - m.listHeight() - 1
}

// filesHeight is how many changed paths the preview lists at once.
func (m *Model) filesHeight() int {
	_, h := m.previewSize()
	n := len(m.changes[m.selectedID()])
	return max(1, min(n, (h-3)/3))
}

// diffHeight is how many diff lines the preview shows at once: below the
// task line, the summary, the paths and the diff's title.
func (m *Model) diffHeight() int {
	_, h := m.previewSize()
	return max(1, h-3-m.filesHeight())
}

// View draws the screen.
func (m *Model) View() string {
	if m.quitting {
		return ""
	}
	var b strings.Builder
	b.WriteString(fit(styleTitle.Render(m.title()), m.width))
	b.WriteByte('\n')
	list := m.listLines()
	pw, ph := m.previewSize()
	preview := m.previewLines(pw, ph)
	if m.width >= sideBySide {
		lw := m.listWidth()
		for i := 0; i < m.body(); i++ {
			b.WriteString(pad(line(list, i), lw))
			b.WriteString(styleDim.Render("│"))
			b.WriteString(fit(line(preview, i), pw))
			b.WriteByte('\n')
		}
	} else {
		for i := 0; i < m.listHeight(); i++ {
			b.WriteString(fit(line(list, i), m.width))
			b.WriteByte('\n')
		}
		b.WriteString(styleDim.Render(strings.Repeat("─", m.width)))
		b.WriteByte('\n')
		for i := 0; i < ph; i++ {
			b.WriteString(fit(line(preview, i), m.width))
			b.WriteByte('\n')
		}
	}
	b.WriteString(fit(m.statusLine(), m.width))
	b.WriteByte('\n')
	b.WriteString(fit(styleDim.Render(m.help()), m.width))
	return b.String()
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func (m *Model) title() string {
	if !m.loaded {
		return "timeagent time machine — reading the history…"
	}
	s := fmt.Sprintf("timeagent time machine — active task %d of %d", m.hist.Active, len(m.hist.Tasks))
	if m.filter != "" {
		s += fmt.Sprintf(" — filter %q: %d shown", m.filter, len(m.visible))
	}
	return s
}

func (m *Model) statusLine() string {
	switch {
	case m.mode == modeFilter:
		return "filter (summary, tag or path; enter to apply, esc to cancel): " + m.input.View()
	case m.mode == modeTag:
		return fmt.Sprintf("tag task %d as (enter to tag, esc to cancel): %s", m.selectedID(), m.input.View())
	case m.mode == modeConfirm:
		return styleError.Render(m.pendingText()+" [y/N]") + " " + sanitize(m.confirm.Message)
	case m.busy != "":
		return m.busy + "…"
	case m.statusIsErr:
		return styleError.Render("error: " + sanitize(m.status))
	}
	return sanitize(m.status)
}

func (m *Model) help() string {
	if m.mode == modeConfirm {
		return "y: move (their content is kept as a task first)   n/esc: cancel"
	}
	return "↑↓/jk move  enter switch  u undo  r redo  / filter  t tag  tab files  pgup/pgdn diff  q quit"
}

// listLines draws the visible part of the tree.
func (m *Model) listLines() []string {
	if !m.loaded {
		return nil
	}
	if len(m.visible) == 0 {
		return []string{"  no task matches the filter (esc clears it)"}
	}
	h := m.listHeight()
	w := m.listWidth()
	out := make([]string, 0, h)
	for i := m.top; i < len(m.visible) && i < m.top+h; i++ {
		r := m.rows[m.visible[i]]
		s := m.rowText(r)
		if i == m.cursor {
			s = "▶" + s
			s = ansi.Truncate(s, w, "…")
			if m.focus == focusTasks {
				s = styleSelected.Render(pad(s, w))
			}
		} else {
			s = ansi.Truncate(" "+s, w, "…")
		}
		out = append(out, s)
	}
	return out
}

func (m *Model) rowText(r row) string {
	t := r.task
	if r.ID == 0 {
		return fmt.Sprintf("%s %s %5d  %-12s %5s  %s", r.Graph, r.Markers(), 0, "", "", t.Summary)
	}
	summary := t.Summary
	if t.Kind != "" && t.Kind != "agent" {
		summary = "[" + t.Kind + "] " + summary
	}
	if len(t.Tags) > 0 {
		summary = "[" + strings.Join(t.Tags, ", ") + "] " + summary
	}
	when := ""
	if !t.Created.IsZero() {
		when = t.Created.In(m.opts.Location).Format("Jan 02 15:04")
	}
	return fmt.Sprintf("%s %s %5d  %-12s %5d  %s", r.Graph, r.Markers(), t.ID, when, t.Files, sanitize(summary))
}

// previewLines draws the selected task's paths and the selected path's diff.
func (m *Model) previewLines(w, h int) []string {
	if !m.loaded || len(m.visible) == 0 || h <= 0 {
		return nil
	}
	id := m.selectedID()
	t := m.rows[m.visible[m.cursor]].task
	out := make([]string, 0, h)
	if m.mode == modeConfirm {
		return m.confirmLines(h)
	}
	if id == 0 {
		return append(out, "the base: the files as they were before the first task",
			"", "enter switches there (every task undone)")
	}
	head := fmt.Sprintf("task %d · %s · %d %s", id, orDefault(t.Kind, "agent"), t.Files, plural(t.Files, "file", "files"))
	if t.Session != 0 {
		head += fmt.Sprintf(" · session %d", t.Session)
	}
	out = append(out, styleTitle.Render(head), sanitize(t.Summary))
	changes, ok := m.changes[id]
	if !ok {
		return append(out, styleDim.Render("reading the changes…"))
	}
	if err := m.loadErr[id]; err != nil {
		return append(out, styleError.Render("cannot read the changes: "+sanitize(err.Error())))
	}
	if len(changes) == 0 {
		return append(out, "no paths changed")
	}
	fh := m.filesHeight()
	first := max(0, min(m.fileCursor-fh/2, len(changes)-fh))
	for i := first; i < first+fh && i < len(changes); i++ {
		c := changes[i]
		mark := "  "
		if i == m.fileCursor {
			mark = "▶ "
		}
		s := mark + symbol(c.Kind) + " " + sanitize(c.Path)
		if i == m.fileCursor && m.focus == focusFiles {
			s = styleSelected.Render(pad(ansi.Truncate(s, w, "…"), w))
		}
		out = append(out, s)
	}
	c := changes[min(m.fileCursor, len(changes)-1)]
	lines := m.diffLines()
	dh := m.diffHeight()
	end := min(len(lines), m.diffTop+dh)
	where := fmt.Sprintf("%d–%d of %d", min(m.diffTop+1, end), end, len(lines))
	out = append(out, styleDim.Render(fmt.Sprintf("── %s (%s) ", sanitize(c.Path), where)+strings.Repeat("─", max(0, w))))
	for _, l := range lines[min(m.diffTop, len(lines)):end] {
		out = append(out, colorDiff(sanitize(l)))
	}
	return out
}

// confirmLines replace the preview while a move waits for y/N: what the
// move would do and the paths that changed since their task ended.
func (m *Model) confirmLines(h int) []string {
	out := []string{styleTitle.Render(m.pendingText())}
	if len(m.confirm.Drifted) == 0 {
		return append(out, sanitize(m.confirm.Message))
	}
	out = append(out, "these paths changed since their task ended:")
	for i, p := range m.confirm.Drifted {
		if len(out) == h-2 && i < len(m.confirm.Drifted)-1 {
			out = append(out, fmt.Sprintf("  … and %d more", len(m.confirm.Drifted)-i))
			break
		}
		out = append(out, "  "+sanitize(p))
	}
	if m.confirm.Outside != 0 {
		return append(out, "", fmt.Sprintf("their current content is kept as task %d;", m.confirm.Outside), "y overwrites them, n leaves everything as it is")
	}
	return append(out, "", "y overwrites them (their current content is kept", "as a task first), n leaves everything as it is")
}

func (m *Model) pendingText() string {
	if m.pending.Action == "switch" {
		return fmt.Sprintf("move to task %d?", m.pending.Task)
	}
	return m.pending.Action + " anyway?"
}

// diffLines is the selected path's diff, one entry per line.
func (m *Model) diffLines() []string {
	id := m.selectedID()
	changes := m.changes[id]
	if len(changes) == 0 {
		return nil
	}
	c := changes[min(m.fileCursor, len(changes)-1)]
	p, ok := m.patches[id][c.Path]
	if !ok {
		return []string{"(no diff for this path)"}
	}
	return strings.Split(strings.TrimSuffix(p, "\n"), "\n")
}

func colorDiff(l string) string {
	switch {
	case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "diff --git"):
		return styleTitle.Render(l)
	case strings.HasPrefix(l, "+"):
		return styleAdd.Render(l)
	case strings.HasPrefix(l, "-"):
		return styleDel.Render(l)
	case strings.HasPrefix(l, "@@"):
		return styleHunk.Render(l)
	}
	return l
}

func symbol(kind string) string {
	switch kind {
	case "created":
		return "+"
	case "deleted":
		return "-"
	case "typechanged":
		return "T"
	}
	return "~"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// sanitize makes text safe to draw: tabs become spaces, other control
// characters (an escape sequence in a file name or a diff) become '?'.
func sanitize(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fit cuts s to w cells.
func fit(s string, w int) string { return ansi.Truncate(s, w, "") }

// pad cuts or fills s to exactly w cells.
func pad(s string, w int) string {
	s = ansi.Truncate(s, w, "")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}
