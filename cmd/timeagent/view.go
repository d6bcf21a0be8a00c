package main

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/timeagent-dev/timeagent/journal"
)

// changeKind names a change: created, modified, deleted or typechanged.
func changeKind(c journal.Change) string {
	switch {
	case c.Before.Kind == journal.Absent:
		return "created"
	case c.After.Kind == journal.Absent:
		return "deleted"
	case c.Before.Kind != c.After.Kind:
		return "typechanged"
	}
	return "modified"
}

func changeSymbol(kind string) string {
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

// nodeJSON is a node state in JSON output.
type nodeJSON struct {
	Type   string `json:"type"`
	Mode   string `json:"mode,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Target string `json:"target,omitempty"`
}

func toNodeJSON(s journal.NodeState) nodeJSON {
	n := nodeJSON{Type: s.Kind.String()}
	switch s.Kind {
	case journal.File:
		size := s.Size
		n.Size = &size
		n.Mode = fmt.Sprintf("%04o", uint32(s.Mode.Perm())|extraBits(s))
	case journal.Dir, journal.Fifo:
		n.Mode = fmt.Sprintf("%04o", uint32(s.Mode.Perm())|extraBits(s))
	case journal.Symlink:
		n.Target = s.Target
	}
	return n
}

// extraBits renders setuid, setgid and sticky in the octal mode.
func extraBits(s journal.NodeState) uint32 {
	var b uint32
	if s.Mode&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if s.Mode&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if s.Mode&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// describeNode is a short human description of a node state.
func describeNode(s journal.NodeState) string {
	n := toNodeJSON(s)
	switch s.Kind {
	case journal.File:
		return fmt.Sprintf("file %s, %s", n.Mode, humanSize(s.Size))
	case journal.Symlink:
		return "symlink -> " + s.Target
	case journal.Absent:
		return "absent"
	}
	return n.Type + " " + n.Mode
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// shellQuote renders argv for display, quoting words a shell would split.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, s := range argv {
		if s != "" && strings.IndexFunc(s, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@+,%", r))
		}) < 0 {
			out[i] = s
			continue
		}
		out[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
