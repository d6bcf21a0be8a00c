//go:build linux

package agenttest

import (
	"strings"
	"testing"
	"time"
)

// writeEditScript makes the model create a file with the client's write
// tool, then edit a committed file and create another with its shell tool.
func writeEditScript() []Prompt {
	return []Prompt{{Key: "PROMPT-ONE", Text: "PROMPT-ONE: add a note and a generated file", Steps: []Step{
		{Write: "notes/new.txt", Content: "created by the write tool\nsecond line\n"},
		{Shell: "printf 'edited by the shell tool\\n' >> README.md && mkdir -p gen && echo generated > gen/out.txt"},
		{Text: "Done: PROMPT-ONE."},
	}}}
}

// writeEditChanges is what writeEditScript changes, as diff --json lines.
var writeEditChanges = []string{"created notes", "created notes/new.txt", "modified README.md", "created gen", "created gen/out.txt"}

// TestWriteEdit runs each client on one prompt whose model answer writes
// and edits files with the client's own tools: inside timeagent run (fuse
// and copy mode) the run is one task with exactly those files and undo
// restores the tree byte for byte; started directly, timeagent records
// nothing (today's behaviour: no hooks).
func TestWriteEdit(t *testing.T) {
	for _, name := range clientNames {
		for _, mode := range modes(t) {
			t.Run(name+"/"+mode, func(t *testing.T) {
				needMode(t, mode)
				start := time.Now()
				c := newClient(t, name, writeEditScript())
				before := c.manifest()
				c.prompt(writeEditScript()[0].Text, wrapRun(mode)...)
				if got := c.file("notes/new.txt"); got != "created by the write tool\nsecond line\n" {
					t.Fatalf("notes/new.txt after the run: %q\nmodel requests:\n%s", got, c.model.Dump())
				}
				if got := c.file("README.md"); !strings.HasSuffix(got, "edited by the shell tool\n") {
					t.Fatalf("README.md after the run: %q", got)
				}
				if got := c.file("gen/out.txt"); got != "generated\n" {
					t.Fatalf("gen/out.txt after the run: %q", got)
				}
				doc := c.log()
				if mode == "direct" {
					if len(doc.Tasks) != 0 {
						t.Fatalf("started directly, timeagent recorded %d task(s): %+v", len(doc.Tasks), doc.Tasks)
					}
					t.Logf("started directly: the files changed, timeagent recorded nothing (took %v)", time.Since(start).Round(time.Millisecond))
					return
				}
				if len(doc.Tasks) != 1 || doc.ActiveTask != doc.Tasks[0].ID {
					t.Fatalf("log --json: want one active task, got %+v (active %d)", doc.Tasks, doc.ActiveTask)
				}
				sameSet(t, "diff --json", c.diffPaths(), writeEditChanges)
				c.ta("undo", "--yes")
				if got := c.manifest(); got != before {
					t.Fatalf("undo did not restore the tree byte for byte:\n%s", diffManifest(before, got))
				}
				t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}
