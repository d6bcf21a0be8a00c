package main

import (
	"strings"
	"testing"
)

// TestEscapedNames: a file name holding an escape sequence, a carriage
// return and a newline cannot erase or forge lines of run's summary, diff
// (all three forms), log or status: each is printed escaped, on its line.
// JSON keeps the name as it is.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := "evil\x1b[2K\r\nforged"
	e.extra = append(e.extra, "NAME="+name)
	r := e.sh("copy", "printf 'x\\n' > \"$NAME\" # \x1b[2K\r")
	outputs := map[string]string{"run": r.Stderr}
	for _, args := range [][]string{{"diff"}, {"diff", "--stat"}, {"diff", "--patch"}, {"log"}, {"status"}} {
		outputs[strings.Join(args, " ")] = e.ok(args...).Stdout
	}
	for cmd, out := range outputs {
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("%s prints a control character:\n%q", cmd, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "forged") {
				t.Errorf("%s: a name forges a line:\n%s", cmd, out)
			}
		}
	}
	contains(t, "run", outputs["run"], `"evil\x1b[2K\r\nforged"`)
	contains(t, "diff", outputs["diff"], `"evil\x1b[2K\r\nforged"`)
	var doc struct {
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
	}
	e.jsonOf(&doc, "diff", "--json")
	if len(doc.Changes) != 1 || doc.Changes[0].Path != name {
		t.Errorf("diff --json: %+v", doc)
	}
}

// TestEscapeName pins the escaping of names.
func TestEscapeName(t *testing.T) {
	for in, want := range map[string]string{
		"a/b.go":            "a/b.go",
		"with space/ü.txt":  "with space/ü.txt",
		`say "hi"`:          `say "hi"`,
		"a\nb":              `"a\nb"`,
		"\x1b[2K":           `"\x1b[2K"`,
		"cr\r":              `"cr\r"`,
		"bidi\u202etxt.exe": `"bidi\u202etxt.exe"`,
		"bad\xffutf8":       `"bad\xffutf8"`,
	} {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %s, want %s", in, got, want)
		}
	}
}
