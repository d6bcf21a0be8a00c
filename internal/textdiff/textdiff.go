// Package textdiff renders unified diffs of text and counts changed lines.
// It is small on purpose: the common prefix and suffix are cut first, and the
// middle is aligned by a longest-common-subsequence table when it is small
// enough, else shown as replaced whole.
package textdiff

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// maxCells bounds the LCS table (lines before × lines after in the middle).
const maxCells = 4 << 20

type opKind byte

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

type op struct {
	kind opKind
	line string
}

// Lines splits text into lines, keeping each line's newline.
func Lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func script(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{opEqual, l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{opEqual, l})
	}
	return ops
}

func middle(a, b []string) []op {
	var ops []op
	if len(a)*len(b) > maxCells || len(a) == 0 || len(b) == 0 {
		for _, l := range a {
			ops = append(ops, op{opDelete, l})
		}
		for _, l := range b {
			ops = append(ops, op{opInsert, l})
		}
		return ops
	}
	n, m := len(a), len(b)
	// t[i][j] = LCS length of a[i:] and b[j:], in one flat slice.
	t := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 { return t[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := at(i+1, j)
			if w := at(i, j+1); w > v {
				v = w
			}
			if a[i] == b[j] {
				v = at(i+1, j+1) + 1
			}
			t[i*(m+1)+j] = v
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{opEqual, a[i]})
			i, j = i+1, j+1
		case at(i+1, j) >= at(i, j+1):
			ops = append(ops, op{opDelete, a[i]})
			i++
		default:
			ops = append(ops, op{opInsert, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{opDelete, a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, op{opInsert, b[j]})
	}
	return ops
}

// Count returns the number of lines added and removed from a to b.
func Count(a, b []byte) (added, removed int) {
	for _, o := range script(Lines(a), Lines(b)) {
		switch o.kind {
		case opInsert:
			added++
		case opDelete:
			removed++
		}
	}
	return added, removed
}

// Unified writes a unified diff of a and b with the given file names and
// three lines of context. Nothing is written when they are equal.
func Unified(w io.Writer, nameA, nameB string, a, b []byte) error {
	ops := script(Lines(a), Lines(b))
	const ctx = 3
	var buf strings.Builder
	fmt.Fprintf(&buf, "--- %s\n+++ %s\n", nameA, nameB)
	changed := false
	for start := 0; start < len(ops); {
		// find the next change
		k := start
		for k < len(ops) && ops[k].kind == opEqual {
			k++
		}
		if k == len(ops) {
			break
		}
		changed = true
		lo := k - ctx
		if lo < start {
			lo = start
		}
		// extend the hunk while changes are within 2*ctx of each other
		hi := k
		for {
			for hi < len(ops) && ops[hi].kind != opEqual {
				hi++
			}
			eq := hi
			for eq < len(ops) && ops[eq].kind == opEqual {
				eq++
			}
			if eq < len(ops) && eq-hi <= 2*ctx {
				hi = eq
				continue
			}
			break
		}
		end := hi + ctx
		if end > len(ops) {
			end = len(ops)
		}
		aStart, bStart := 1, 1
		for _, o := range ops[:lo] {
			if o.kind != opInsert {
				aStart++
			}
			if o.kind != opDelete {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range ops[lo:end] {
			if o.kind != opInsert {
				aLen++
			}
			if o.kind != opDelete {
				bLen++
			}
		}
		fmt.Fprintf(&buf, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[lo:end] {
			prefix := " "
			switch o.kind {
			case opDelete:
				prefix = "-"
			case opInsert:
				prefix = "+"
			}
			buf.WriteString(prefix + o.line)
			if !strings.HasSuffix(o.line, "\n") {
				buf.WriteString("\n\\ No newline at end of file\n")
			}
		}
		start = end
	}
	if !changed {
		return nil
	}
	_, err := io.WriteString(w, buf.String())
	return err
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
