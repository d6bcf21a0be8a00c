package main

import (
	"fmt"
	"io"
	"strconv"
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

// appendGraph appends cells, each lane in its colour (blanks left plain),
// the node as mark, without trailing blanks.
func (p logPalette) appendGraph(b []byte, cells []lanes.Cell, mark string) []byte {
	if len(p.lanes) == 0 {
		return lanes.AppendDraw(b, cells, mark)
	}
	n := len(b)
	for l, c := range cells {
		s := c.String()
		if c == lanes.Mark {
			s = mark + " "
		}
		for _, r := range s {
			if r == ' ' {
				b = append(b, ' ')
				continue
			}
			b = append(b, p.lanes[l%len(p.lanes)]...)
			b = utf8.AppendRune(b, r)
			b = append(b, p.reset...)
		}
	}
	for len(b) > n && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
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
	// Rows go newest first, the base last; doc.Tasks is oldest first.
	base := taskJSON{ID: uint64(tasks.Base), HasBranches: doc.BaseBranches, Summary: "(base: before the first task)"}
	if doc.ActiveTask == uint64(tasks.Base) {
		base.Status = string(tasks.StatusCurrent)
	}
	row := func(i int) *taskJSON {
		if i == len(doc.Tasks) {
			return &base
		}
		return &doc.Tasks[len(doc.Tasks)-1-i]
	}
	nodes := make([]lanes.Node, 0, len(doc.Tasks)+1)
	sessWidth := 0
	for i := 0; i <= len(doc.Tasks); i++ {
		t := row(i)
		nodes = append(nodes, lanes.Node{ID: t.ID, Parent: t.Parent})
		if t.Session != 0 {
			sessWidth = max(sessWidth, len("session ")+len(strconv.FormatUint(t.Session, 10)))
		}
	}
	layout := lanes.Layout(nodes)
	graphWidth := 2*lanes.Width(layout) - 1
	idWidth := len(strconv.FormatUint(row(0).ID, 10))
	// Rows are built by appending to one buffer: fmt per row cost most of
	// the time of a 10,000-task log.
	var line, plain []byte
	for i, r := range layout {
		t := row(i)
		if r.Joins != nil {
			line = append(p.appendGraph(line[:0], r.Joins, ""), '\n')
			w.Write(line)
		}
		glyph := glyphTask
		switch {
		case t.ID == uint64(tasks.Base) && t.Status != string(tasks.StatusCurrent):
			glyph = glyphBase
		case t.Status == string(tasks.StatusCurrent):
			glyph = glyphActive
		}
		line = p.appendGraph(line[:0], r.Line, glyph)
		width := utf8.RuneCount(line)
		if len(p.lanes) > 0 {
			plain = lanes.AppendDraw(plain[:0], r.Line, glyph)
			width = utf8.RuneCount(plain)
		}
		line = appendPad(line, graphWidth-width)
		line = append(line, "  "...)
		line = append(line, p.marks(*t)...)
		line = append(line, ' ')
		id := strconv.AppendUint(nil, t.ID, 10)
		if p.id != "" {
			line = append(line, p.id...)
		}
		line = appendPad(line, idWidth-len(id))
		line = append(line, id...)
		if p.id != "" {
			line = append(line, p.reset...)
		}
		line = append(line, "  "...)
		line = p.appendDescribe(line, *t, sessWidth)
		line = append(line, '\n')
		w.Write(line)
	}
}

// appendPad appends n blanks (none when n <= 0).
func appendPad(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
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

// appendDescribe appends the rest of a task's row: time, session, paths
// changed, summary and tags (the base has only its summary).
func (p logPalette) appendDescribe(b []byte, t taskJSON, sessWidth int) []byte {
	if t.ID == uint64(tasks.Base) {
		return append(b, t.Summary...)
	}
	n := len(b)
	if t.created.IsZero() {
		b = append(b, shortTime(t.Created)...)
	} else {
		b = t.created.Local().AppendFormat(b, "2006-01-02 15:04")
	}
	b = appendPad(b, 16-utf8.RuneCount(b[n:]))
	b = append(b, "  "...)
	if sessWidth > 0 {
		n = len(b)
		if t.Session != 0 {
			b = strconv.AppendUint(append(b, "session "...), t.Session, 10)
		}
		b = append(appendPad(b, sessWidth-(len(b)-n)), "  "...)
	}
	n = len(b)
	b = append(b, plural.Count(t.Files, "path")...)
	b = append(appendPad(b, 9-(len(b)-n)), "  "...)
	if t.Kind == string(tasks.KindOutside) {
		b = append(b, escapeName("[outside] "+t.Summary)...)
	} else {
		b = append(b, escapeName(t.Summary)...)
	}
	if len(t.Tags) > 0 {
		b = append(b, "  "...)
		b = append(b, p.paint(p.tag, "["+strings.Join(t.Tags, ", ")+"]")...)
	}
	return b
}
