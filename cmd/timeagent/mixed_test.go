package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestModesMixedOnOneRoot runs sessions of both modes, and undo, on one
// root in the orders auto mode produces when it falls back: a copy-mode
// session's first scan must record only what really changed outside a
// session, and every state stays reachable byte for byte (switch 0 once
// deleted the whole repository, .git included).
func TestModesMixedOnOneRoot(t *testing.T) {
	cases := []struct {
		name  string
		steps []string // "fuse", "copy", "undo", "edit" (main.go changed outside a session; a copy session follows)
	}{
		{"fuse then copy", []string{"fuse", "copy"}},
		{"fuse, undo, copy", []string{"fuse", "undo", "copy"}},
		{"fuse, edit, copy", []string{"fuse", "edit", "copy"}},
		{"copy, fuse, edit, copy", []string{"copy", "fuse", "edit", "copy"}},
		{"fuse, fuse, undo, edit, copy, fuse", []string{"fuse", "fuse", "undo", "edit", "copy", "fuse"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			states := map[uint64]string{0: e.manifest()}
			edited := ""
			for i, step := range c.steps {
				switch step {
				case "fuse", "copy":
					e.sh(step, fmt.Sprintf("echo step%d >> main.go && rm -f NOTES.md && echo new > new%d.txt", i, i))
				case "undo":
					e.ok("undo")
				case "edit":
					e.write("main.go", fmt.Sprintf("edited by the user between sessions, step %d\n", i), 0o644)
					edited = e.manifest()
					continue
				}
				if edited != "" {
					// The copy session's scan kept the edit as an outside task.
					var found bool
					for _, task := range e.log().Tasks {
						if task.Kind == "outside" {
							states[task.ID], found = edited, true
						}
					}
					if !found {
						t.Fatalf("step %d: the edit of main.go was not kept as an outside task", i)
					}
					edited = ""
				}
				states[e.status().ActiveTask] = e.manifest()
			}
			// Every outside task holds only what the user changed outside.
			for _, task := range e.log().Tasks {
				if task.Kind == "outside" && task.Files != 1 {
					t.Fatalf("outside task %d records %d files; only main.go changed outside a session", task.ID, task.Files)
				}
			}
			for id, want := range states {
				e.ok("switch", strconv.FormatUint(id, 10))
				sameManifest(t, "switch "+strconv.FormatUint(id, 10), want, e.manifest())
			}
			e.ok("switch", "0")
			sameManifest(t, "switch 0", states[0], e.manifest())
			if out, err := exec.Command("git", "-C", e.root, "fsck", "--no-progress").CombinedOutput(); err != nil {
				t.Fatalf("git fsck after switch 0: %v\n%s", err, out)
			}
			if !strings.Contains(e.read("main.go"), "hello, uncommitted work") {
				t.Fatal("main.go lost the user's uncommitted edit")
			}
		})
	}
}
