package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
)

// This file renders diff --patch and diff --stat as git does, so that
// `git apply` takes the patch: `diff --git` headers, mode lines, index
// lines with blob ids, symlinks as mode 120000 with the target as content,
// and `\ No newline at end of file`. The line alignment is go-udiff's LCS.

// patchLimit is the largest file diffed line by line; larger ones are
// named as binary, as git does past core.bigFileThreshold.
const patchLimit = 16 << 20

// contextLines is the number of unchanged lines shown around a change.
const contextLines = 3

// palette holds the escape sequences of coloured output (git's default
// colours); every field is empty when colour is off.
type palette struct {
	meta, frag, old, new, reset string
}

func newPalette(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{meta: "\x1b[1m", frag: "\x1b[36m", old: "\x1b[31m", new: "\x1b[32m", reset: "\x1b[m"}
}

// paint wraps s (without its newline) in colour c.
func (p palette) paint(c, s string) string {
	if c == "" || s == "" {
		return s
	}
	return c + s + p.reset
}

// gitSide is one side of a file pair as git sees it: a mode (100644,
// 100755 or 120000; "" when absent or not something git tracks) and its
// content (a file's bytes or a symlink's target).
type gitSide struct {
	mode    string
	content []byte
	binary  bool // binary or too large to diff by lines
	size    int64
}

// gitMode is the git mode of a node state, "" for an absent node or one git
// does not track (directories, FIFOs).
func gitMode(s journal.NodeState) string {
	switch s.Kind {
	case journal.File:
		if s.Mode&0o111 != 0 {
			return "100755"
		}
		return "100644"
	case journal.Symlink:
		return "120000"
	}
	return ""
}

// loadSide reads a node state's content for the patch.
func loadSide(j *journal.Journal, s journal.NodeState) (gitSide, error) {
	g := gitSide{mode: gitMode(s)}
	switch g.mode {
	case "":
		return g, nil
	case "120000":
		g.content = []byte(s.Target)
		g.size = int64(len(g.content))
		return g, nil
	}
	g.size = s.Size
	if s.Size > patchLimit {
		g.binary = true
		return g, nil
	}
	b, err := j.ReadBlob(s.Blob)
	if err != nil {
		return g, err
	}
	g.content, g.binary = b, isBinary(b)
	return g, nil
}

// blobID is git's abbreviated object id of content (sha1 of "blob N\0"
// and the bytes), or zeros for an absent side.
func (g gitSide) blobID() string {
	if g.mode == "" {
		return "0000000"
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(g.content))
	h.Write(g.content)
	return hex.EncodeToString(h.Sum(nil))[:7]
}

// filePair is one `diff --git` section: a path and its two sides, one of
// which may be absent.
type filePair struct {
	path          string
	before, after gitSide
}

// filePairs turns changes into git's file pairs: a change between a file
// and a symlink is a deletion and a creation, as git shows it; directories
// and other nodes git does not track are left out, and so is a pair whose
// sides git cannot tell apart (same mode and content).
func filePairs(j *journal.Journal, changes []journal.Change) ([]filePair, error) {
	var out []filePair
	for _, c := range changes {
		if gitMode(c.Before) == "" && gitMode(c.After) == "" {
			continue
		}
		b, err := loadSide(j, c.Before)
		if err != nil {
			return nil, fmt.Errorf("read %s (before): %w", c.Path, err)
		}
		a, err := loadSide(j, c.After)
		if err != nil {
			return nil, fmt.Errorf("read %s (after): %w", c.Path, err)
		}
		switch {
		case b.mode != "" && a.mode != "" && (b.mode == "120000") != (a.mode == "120000"):
			out = append(out, filePair{path: c.Path, before: b}, filePair{path: c.Path, after: a})
		case b.mode == a.mode && !b.binary && !a.binary && string(b.content) == string(a.content):
			// Nothing git would show (only bits git does not track).
		default:
			out = append(out, filePair{path: c.Path, before: b, after: a})
		}
	}
	return out, nil
}

// gitQuote quotes a path as git does by default (quote_c_style with
// core.quotePath): a name holding a control character, a quote, a
// backslash or a byte past ASCII is double-quoted with C escapes and octal
// bytes; any other name is printed as it is.
func gitQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '"' || r == '\\' }) < 0 {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// prefixed is git's name of path on one side: prefix/path, quoted as a
// whole.
func prefixed(prefix, path string) string { return gitQuote(prefix + path) }

// splitLines splits text into lines, each keeping its newline (the last
// may have none).
func splitLines(b []byte) []string {
	s := string(b)
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// patchHunk is one @@ section.
type patchHunk struct {
	oldStart, oldCount, newStart, newCount int
	lines                                  []string // each starting with ' ', '-' or '+'
}

// hunks aligns a and b (go-udiff's LCS) and groups the changes into hunks
// with n lines of context, joining hunks whose context would touch, as
// git does.
func hunks(a, b []string, n int) (out []patchHunk, added, removed int) {
	diffs := alignLines(a, b)
	for i := 0; i < len(diffs); {
		j := i
		for j+1 < len(diffs) && diffs[j+1].Start-diffs[j].End <= 2*n {
			j++
		}
		first, last := diffs[i], diffs[j]
		from := max(0, first.Start-n)
		to := min(len(a), last.End+n)
		h := patchHunk{oldStart: from, oldCount: to - from, newStart: first.ReplStart - (first.Start - from)}
		pos := from
		for _, d := range diffs[i : j+1] {
			for _, l := range a[pos:d.Start] {
				h.lines = append(h.lines, " "+l)
			}
			for _, l := range a[d.Start:d.End] {
				h.lines = append(h.lines, "-"+l)
			}
			for _, l := range b[d.ReplStart:d.ReplEnd] {
				h.lines = append(h.lines, "+"+l)
			}
			removed += d.End - d.Start
			added += d.ReplEnd - d.ReplStart
			h.newCount -= d.End - d.Start
			h.newCount += d.ReplEnd - d.ReplStart
			pos = d.End
		}
		for _, l := range a[pos:to] {
			h.lines = append(h.lines, " "+l)
		}
		h.newCount += h.oldCount
		out = append(out, h)
		i = j + 1
	}
	return out, added, removed
}

// alignLines is go-udiff's LCS of a and b after the lines found on one
// side only are set aside (they cannot match, as git's xdiff also sets
// them aside): the LCS bounds its search to stay fast on any input and
// replaces whatever is left whole, so without those lines in the way long
// changes show only the lines that changed.
func alignLines(a, b []string) []lcs.Diff {
	inA, inB := make(map[string]bool, len(a)), make(map[string]bool, len(b))
	for _, l := range a {
		inA[l] = true
	}
	for _, l := range b {
		inB[l] = true
	}
	var fa, fb []string // the lines found on both sides
	var ia, ib []int    // and where they are in a and b
	for i, l := range a {
		if inB[l] {
			fa, ia = append(fa, l), append(ia, i)
		}
	}
	for j, l := range b {
		if inA[l] {
			fb, ib = append(fb, l), append(ib, j)
		}
	}
	var out []lcs.Diff
	pa, pb := 0, 0 // past the last matched pair in a and b
	match := func(x, y int) {
		if ia[x] > pa || ib[y] > pb {
			out = append(out, lcs.Diff{Start: pa, End: ia[x], ReplStart: pb, ReplEnd: ib[y]})
		}
		pa, pb = ia[x]+1, ib[y]+1
	}
	x, y := 0, 0
	for _, d := range lcs.DiffLines(fa, fb) {
		for ; x < d.Start; x, y = x+1, y+1 {
			match(x, y)
		}
		x, y = d.End, d.ReplEnd
	}
	for ; x < len(fa); x, y = x+1, y+1 {
		match(x, y)
	}
	if pa < len(a) || pb < len(b) {
		out = append(out, lcs.Diff{Start: pa, End: len(a), ReplStart: pb, ReplEnd: len(b)})
	}
	return out
}

// rangeOf renders one side of a hunk header: start,count with ",1"
// left out, and an empty side starting at the line before.
func rangeOf(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

// writePair writes one `diff --git` section.
func writePair(w io.Writer, p filePair, pal palette) error {
	var out strings.Builder
	meta := func(format string, args ...any) {
		out.WriteString(pal.paint(pal.meta, fmt.Sprintf(format, args...)) + "\n")
	}
	nameA, nameB := prefixed("a/", p.path), prefixed("b/", p.path)
	meta("diff --git %s %s", nameA, nameB)
	b, a := p.before, p.after
	switch {
	case b.mode == "":
		meta("new file mode %s", a.mode)
	case a.mode == "":
		meta("deleted file mode %s", b.mode)
	case b.mode != a.mode:
		meta("old mode %s", b.mode)
		meta("new mode %s", a.mode)
	}
	same := !b.binary && !a.binary && b.mode != "" && a.mode != "" && string(b.content) == string(a.content)
	if !same {
		if b.mode != "" && a.mode != "" && b.mode == a.mode {
			meta("index %s..%s %s", b.blobID(), a.blobID(), a.mode)
		} else {
			meta("index %s..%s", b.blobID(), a.blobID())
		}
	}
	fromName, toName := nameA, nameB
	if b.mode == "" {
		fromName = "/dev/null"
	}
	if a.mode == "" {
		toName = "/dev/null"
	}
	switch {
	case same:
	case b.binary || a.binary:
		out.WriteString(fmt.Sprintf("Binary files %s and %s differ\n", fromName, toName))
	case len(b.content) == 0 && len(a.content) == 0:
		// An empty file created or deleted: git shows no hunk.
	default:
		meta("--- %s%s", fromName, tabIfSpace(fromName))
		meta("+++ %s%s", toName, tabIfSpace(toName))
		hs, _, _ := hunks(splitLines(b.content), splitLines(a.content), contextLines)
		for _, h := range hs {
			out.WriteString(pal.paint(pal.frag, fmt.Sprintf("@@ -%s +%s @@", rangeOf(h.oldStart, h.oldCount), rangeOf(h.newStart, h.newCount))) + "\n")
			for _, l := range h.lines {
				text, nl := strings.CutSuffix(l, "\n")
				switch l[0] {
				case '-':
					text = pal.paint(pal.old, text)
				case '+':
					text = pal.paint(pal.new, text)
				}
				out.WriteString(text + "\n")
				if !nl {
					out.WriteString("\\ No newline at end of file\n")
				}
			}
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// tabIfSpace is the tab git puts after a ---/+++ name holding a space, so
// that patch tools see where the name ends.
func tabIfSpace(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

// writePatch writes the git patch of changes.
func writePatch(j *journal.Journal, w io.Writer, changes []journal.Change, pal palette) error {
	pairs, err := filePairs(j, changes)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		if err := writePair(w, p, pal); err != nil {
			return err
		}
	}
	return nil
}

// statLine is one file of diff --stat.
type statLine struct {
	name           string
	added, removed int
	binary         bool
	sizeA, sizeB   int64
}

// writeStat writes diff --stat as git does for a terminal width of width
// columns: ` name | N ++--`, bars scaled to fit, and the summary line.
func writeStat(j *journal.Journal, w io.Writer, changes []journal.Change, pal palette, width int) error {
	pairs, err := filePairs(j, changes)
	if err != nil {
		return err
	}
	var lines []statLine
	for _, p := range pairs {
		s := statLine{name: gitQuote(p.path)}
		// A pair split from a type change is counted once, as git does.
		if n := len(lines); n > 0 && lines[n-1].name == s.name && p.before.mode == "" {
			s = lines[n-1]
			lines = lines[:n-1]
		}
		switch {
		case p.before.binary || p.after.binary:
			s.binary, s.sizeA, s.sizeB = true, s.sizeA+p.before.size, s.sizeB+p.after.size
		default:
			_, add, rem := hunks(splitLines(p.before.content), splitLines(p.after.content), 0)
			s.added, s.removed = s.added+add, s.removed+rem
		}
		lines = append(lines, s)
	}
	maxLen, maxChange, numberWidth, binWidth := 0, 0, 0, 0
	for _, s := range lines {
		maxLen = max(maxLen, utf8.RuneCountInString(s.name))
		if s.binary {
			binWidth = max(binWidth, 14+decimalWidth(int(s.sizeA))+decimalWidth(int(s.sizeB)))
			numberWidth = 3
			continue
		}
		maxChange = max(maxChange, s.added+s.removed)
	}
	numberWidth = max(numberWidth, decimalWidth(maxChange))
	width = max(width, 16+6+numberWidth)
	graphWidth := maxChange
	if maxChange+4 <= binWidth {
		graphWidth = binWidth - 4
	}
	nameWidth := maxLen
	if nameWidth+numberWidth+6+graphWidth > width {
		if graphWidth > width*3/8-numberWidth-6 {
			graphWidth = max(6, width*3/8-numberWidth-6)
		}
		if nameWidth > width-numberWidth-6-graphWidth {
			nameWidth = width - numberWidth - 6 - graphWidth
		} else {
			graphWidth = width - numberWidth - 6 - nameWidth
		}
	}
	var out strings.Builder
	var tadd, trem int
	for _, s := range lines {
		name := s.name
		if n := utf8.RuneCountInString(name); n > nameWidth {
			r := []rune(name)
			name = "..." + string(r[len(r)-(nameWidth-3):])
		}
		fmt.Fprintf(&out, " %s%s |", name, strings.Repeat(" ", nameWidth-utf8.RuneCountInString(name)))
		if s.binary {
			fmt.Fprintf(&out, " %*s %s -> %s bytes\n", numberWidth, "Bin", pal.paint(pal.old, fmt.Sprint(s.sizeA)), pal.paint(pal.new, fmt.Sprint(s.sizeB)))
			continue
		}
		add, del := s.added, s.removed
		tadd, trem = tadd+add, trem+del
		sep := ""
		if add+del > 0 {
			sep = " "
		}
		fmt.Fprintf(&out, " %*d%s", numberWidth, add+del, sep)
		if graphWidth <= maxChange {
			total := scaleLinear(add+del, graphWidth, maxChange)
			if total < 2 && add > 0 && del > 0 {
				total = 2
			}
			if add < del {
				add = scaleLinear(add, graphWidth, maxChange)
				del = total - add
			} else {
				del = scaleLinear(del, graphWidth, maxChange)
				add = total - del
			}
		}
		out.WriteString(pal.paint(pal.new, strings.Repeat("+", add)) + pal.paint(pal.old, strings.Repeat("-", del)) + "\n")
	}
	out.WriteString(statSummary(len(lines), tadd, trem) + "\n")
	_, err = io.WriteString(w, out.String())
	return err
}

// statSummary is git's closing line of --stat, plurals and all.
func statSummary(files, add, del int) string {
	s := fmt.Sprintf(" %d %s changed", files, plural.Noun(files, "file"))
	if add > 0 || del == 0 {
		s += fmt.Sprintf(", %d %s(+)", add, plural.Noun(add, "insertion"))
	}
	if del > 0 || add == 0 {
		s += fmt.Sprintf(", %d %s(-)", del, plural.Noun(del, "deletion"))
	}
	return s
}

func decimalWidth(n int) int {
	w := 1
	for ; n >= 10; n /= 10 {
		w++
	}
	return w
}

// scaleLinear is git's scaling of a bar of it out of maxChange into width
// columns: at least one column for a non-zero count.
func scaleLinear(it, width, maxChange int) int {
	if it == 0 {
		return 0
	}
	return 1 + it*(width-1)/maxChange
}
