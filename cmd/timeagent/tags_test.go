package main

import (
	"strings"
	"testing"
)

type tagLogTask struct {
	ID   uint64   `json:"id"`
	Tags []string `json:"tags"`
}

type tagLogDoc struct {
	Tasks []tagLogTask `json:"tasks"`
}

// TestTags names tasks: tag the active task and a given one, list, show in
// log (human and JSON), refuse to move a tag without --force, switch, undo
// and diff by name, delete, and refuse bad names with exit 2.
func TestTags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	e.sh("copy", "echo a1 > a.txt")
	m1 := e.manifest()
	e.sh("copy", "echo a2 > a.txt")
	m2 := e.manifest()

	r := e.ok("tag", "good")
	contains(t, "tag good", r.Stdout, "good", "task 2")
	e.ok("tag", "first", "1")
	r = e.ok("tag")
	contains(t, "tag list", r.Stdout, "first", "good")
	if i, j := strings.Index(r.Stdout, "first"), strings.Index(r.Stdout, "good"); i > j {
		t.Fatalf("tags not sorted by name:\n%s", r.Stdout)
	}
	r = e.ok("log")
	contains(t, "log", r.Stdout, "[first]", "[good]")

	var l tagLogDoc
	e.jsonOf(&l, "log", "--json")
	got := map[uint64][]string{}
	for _, x := range l.Tasks {
		if x.Tags == nil {
			t.Fatalf("task %d has no tags field (want [] at least)", x.ID)
		}
		got[x.ID] = x.Tags
	}
	if strings.Join(got[1], ",") != "first" || strings.Join(got[2], ",") != "good" {
		t.Fatalf("log --json tags: %v", got)
	}

	// Moving a tag needs --force.
	r = e.fails(1, "tag", "good", "1")
	contains(t, "move without --force", r.Stderr, "good", "task 2", "--force")
	e.ok("tag", "--force", "good", "1")
	e.ok("tag", "--force", "good", "2")

	// switch, diff and undo by name.
	e.ok("switch", "first")
	sameManifest(t, "switch first", m1, e.manifest())
	e.ok("switch", "good")
	sameManifest(t, "switch good", m2, e.manifest())
	var d diffDoc
	e.jsonOf(&d, "diff", "--json", "--task", "good")
	if d.From != 1 || d.To != 2 {
		t.Fatalf("diff --task good: %+v", d)
	}
	e.jsonOf(&d, "diff", "--json", "--from", "first", "--to", "good")
	if d.From != 1 || d.To != 2 || len(d.Changes) != 1 {
		t.Fatalf("diff --from first --to good: %+v", d)
	}
	r = e.ok("diff-file", "--task", "good", "a.txt")
	contains(t, "diff-file --task good", r.Stdout, "a2")
	e.ok("undo", "first")
	sameManifest(t, "undo first", m1, e.manifest())
	r = e.fails(1, "undo", "good")
	contains(t, "undo to a later task", r.Stderr, "good", "switch")
	e.ok("switch", "2")

	// Unknown names and tasks.
	r = e.fails(2, "switch", "nosuch")
	contains(t, "switch nosuch", r.Stderr, "nosuch", "timeagent tag")
	r = e.fails(2, "undo", "nosuch")
	contains(t, "undo nosuch", r.Stderr, "nosuch", "invalid count")
	e.fails(1, "tag", "x", "99")

	// Delete.
	e.ok("tag", "--delete", "first")
	r = e.ok("tag")
	if strings.Contains(r.Stdout, "first") {
		t.Fatalf("deleted tag still listed:\n%s", r.Stdout)
	}
	e.fails(1, "tag", "--delete", "first")
	e.fails(2, "switch", "first")

	// Bad names: exit 2 with the rule named.
	for name, rule := range map[string]string{
		"12":                     "digits",
		"a b":                    "whitespace",
		"-x":                     "-",
		"":                       "empty",
		strings.Repeat("n", 200): "long",
	} {
		r := e.fails(2, "tag", "--", name)
		contains(t, "tag "+name, r.Stderr, rule)
	}
	sameManifest(t, "at the end", m2, e.manifest())
}
