package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/timeagent-dev/timeagent/internal/lanes"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/tasks"
)

// This file draws log's human output: the task tree as a graph, newest
// first (internal/lanes lays out the lanes), one row per task.

// logPalette is log's colours: git's lane colours for the graph, and the
// markers, ids and tags as git colours its decorations. All "" without
// colour.
type logPalette struct {
	lanes                                  []string
	active, future, branch, id, tag, reset string
}

func newLogPalette(color bool) logPalette {
	if !color {
		return logPalette{}
	}
	return logPalette{
		lanes:  []string{"\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m", "\x1b[36m"},
		active: "\x1b[1;32m", future: "\x1b[36m", branch: "\x1b[35m", id: "\x1b[33m", tag: "\x1b[1;33m",
		reset: "\x1b[m",
	}
}

func (p logPalette) paint(color, s string) string {
	if color == "" || s == "" {
		return s
	}
	return color + s + p.reset
}

// graph draws cells, each lane in its colour (blanks left plain), the
// node as mark, without trailing blanks.
func (p logPalette) graph(cells []lanes.Cell, mark string) string {
	if len(p.lanes) == 0 {
		return lanes.Draw(cells, mark)
	}
	var b strings.Builder
	for l, c := range cells {
		s := c.String()
		if c == lanes.Mark {
			s = mark + " "
		}
		for _, r := range s {
			if r == ' ' || len(p.lanes) == 0 {
				b.WriteRune(r)
				continue
			}
			b.WriteString(p.paint(p.lanes[l%len(p.lanes)], string(r)))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// Node glyphs: the active task, another task, the base.
const (
	glyphActive = "●"
	glyphTask   = "○"
	glyphBase   = "◆"
)

// printLog draws the task tree of doc, newest first, the base last.
func printLog(w io.Writer, doc logJSON, p logPalette) {
	if len(doc.Tasks) == 0 {
		fmt.Fprintln(w, "no tasks yet: run an agent with `timeagent run COMMAND`")
		return
	}
	rows := make([]taskJSON, 0, len(doc.Tasks)+1)
	nodes := make([]lanes.Node, 0, len(doc.Tasks)+1)
	for i := len(doc.Tasks) - 1; i >= 0; i-- {
		t := doc.Tasks[i]
		rows = append(rows, t)
		nodes = append(nodes, lanes.Node{ID: t.ID, Parent: t.Parent})
	}
	base := taskJSON{ID: uint64(tasks.Base), HasBranches: doc.BaseBranches, Summary: "(base: before the first task)"}
	if doc.ActiveTask == uint64(tasks.Base) {
		base.Status = string(tasks.StatusCurrent)
	}
	rows = append(rows, base)
	nodes = append(nodes, lanes.Node{ID: uint64(tasks.Base), Parent: uint64(tasks.Base)})
	layout := lanes.Layout(nodes)
	graphWidth := 2*lanes.Width(layout) - 1
	idWidth := len(fmt.Sprint(rows[0].ID))
	sessWidth := 0
	for _, t := range rows {
		if t.Session != 0 {
			sessWidth = max(sessWidth, len(fmt.Sprintf("session %d", t.Session)))
		}
	}
	for i, t := range rows {
		r := layout[i]
		if r.Joins != nil {
			fmt.Fprintln(w, p.graph(r.Joins, ""))
		}
		glyph := glyphTask
		switch {
		case t.ID == uint64(tasks.Base) && t.Status != string(tasks.StatusCurrent):
			glyph = glyphBase
		case t.Status == string(tasks.StatusCurrent):
			glyph = glyphActive
		}
		g := p.graph(r.Line, glyph)
		plain := g
		if len(p.lanes) > 0 {
			plain = lanes.Draw(r.Line, glyph)
		}
		pad := graphWidth - utf8.RuneCountInString(plain)
		fmt.Fprintf(w, "%s%s  %s %s  %s\n", g, strings.Repeat(" ", max(pad, 0)), p.marks(t),
			p.paint(p.id, fmt.Sprintf("%*d", idWidth, t.ID)), p.describe(t, sessWidth))
	}
}

// marks is the two marker columns: → or ↯, then ⎇.
func (p logPalette) marks(t taskJSON) string {
	s := " "
	switch t.Status {
	case string(tasks.StatusCurrent):
		s = p.paint(p.active, "→")
	case string(tasks.StatusFuture):
		s = p.paint(p.future, "↯")
	}
	if t.HasBranches {
		return s + p.paint(p.branch, "⎇")
	}
	return s + " "
}

// describe is the rest of a task's row: time, session, paths changed,
// summary and tags (the base has only its summary).
func (p logPalette) describe(t taskJSON, sessWidth int) string {
	if t.ID == uint64(tasks.Base) {
		return t.Summary
	}
	sess := ""
	if t.Session != 0 {
		sess = fmt.Sprintf("session %d", t.Session)
	}
	var b strings.Builder
	when := ""
	if t.created.IsZero() {
		when = shortTime(t.Created)
	} else {
		when = t.created.Local().Format("2006-01-02 15:04")
	}
	fmt.Fprintf(&b, "%-16s  ", when)
	if sessWidth > 0 {
		fmt.Fprintf(&b, "%-*s  ", sessWidth, sess)
	}
	fmt.Fprintf(&b, "%-9s  ", plural.Count(t.Files, "path"))
	summary := t.Summary
	if t.Kind == string(tasks.KindOutside) {
		summary = "[outside] " + summary
	}
	b.WriteString(escapeName(summary))
	if len(t.Tags) > 0 {
		b.WriteString("  " + p.paint(p.tag, "["+strings.Join(t.Tags, ", ")+"]"))
	}
	return b.String()
}
