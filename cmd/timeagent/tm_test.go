package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTMWithoutTerminal: tm needs a terminal and says so; bare timeagent
// without one prints the help, as before.
func TestTMWithoutTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.fails(1, "tm")
	contains(t, "tm without a terminal", r.Stderr, "tm needs a terminal", "timeagent log")
	r = e.ok()
	contains(t, "bare timeagent", r.Stdout, "Usage:", "tm ")
	e.fails(2, "no-such-command")
}

// TestMoveJSONConfirm: a move refused for drift says so in its --json
// error document (what the menu asks about), and --yes moves.
func TestMoveJSONConfirm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "v0\n", 0o644)
	e.sh("copy", `echo v1 > a.txt`)
	e.write("a.txt", "edited\n", 0o644)
	r := e.fails(1, "undo", "--json")
	var doc jsonErrorDoc
	if err := json.Unmarshal([]byte(r.Stderr), &doc); err != nil {
		t.Fatalf("stderr is not one JSON document: %v\n%s", err, r.Stderr)
	}
	if !doc.Confirm || len(doc.Drifted) != 1 || doc.Drifted[0] != "a.txt" || doc.OutsideTask != 2 || doc.SchemaVersion != 1 {
		t.Fatalf("error document %+v", doc)
	}
	if got := e.read("a.txt"); got != "edited\n" {
		t.Fatalf("the refused undo changed a.txt to %q", got)
	}
	e.ok("undo", "--json", "--yes")
	if got := e.read("a.txt"); got != "v0\n" {
		t.Fatalf("undo --yes: a.txt is %q", got)
	}
}

// TestLogTouching lists the tasks that changed a path containing the text.
func TestLogTouching(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sh("copy", `echo 1 > src.go`)
	e.sh("copy", `mkdir docs; echo 2 > docs/guide.md`)
	e.sh("copy", `echo 3 > src.go; echo 3 > docs/other.txt`)
	for _, c := range []struct{ q, want string }{{"src", "[1 3]"}, {"docs/", "[2 3]"}, {"guide", "[2]"}, {"none", "[]"}} {
		var doc logJSON
		e.jsonOf(&doc, "log", "--json", "--touching", c.q)
		ids := []string{}
		for _, x := range doc.Tasks {
			ids = append(ids, strings.TrimSpace(string(rune('0'+x.ID))))
		}
		if got := "[" + strings.Join(ids, " ") + "]"; got != c.want {
			t.Errorf("--touching %s: %s, want %s", c.q, got, c.want)
		}
	}
}
