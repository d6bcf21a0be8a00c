package main

import (
	"fmt"
	"strings"
	"testing"
)

// destroyScript is an agent destroying work the way agents do.
const destroyScript = `set -e
git checkout -q -- .
git clean -qfdx
rm -rf docs
printf 'overwritten\000binary' > assets/logo.bin
chmod -x scripts/run.sh
ln -sfn README.md link-to-main
rmdir empty2 2>/dev/null || true
echo generated > GENERATED.txt
mkdir -p newdir/sub && printf 'new\n' > newdir/sub/file.txt
ln -s newdir new-dir-link
`

// TestUndoRedoDestroyedWork: undo restores the pre-session tree byte for
// byte, redo the post-session tree, for every kind of file.
func TestUndoRedoDestroyedWork(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			pre := e.manifest()
			e.sh(mode, destroyScript)
			post := e.manifest()
			if pre == post {
				t.Fatal("the agent changed nothing")
			}
			for _, gone := range []string{"NOTES.md", ".env", "big.bin", "secret.txt", "dangling", "docs", "empty", "build"} {
				if exists(e.path(gone)) {
					t.Fatalf("the agent did not remove %s", gone)
				}
			}
			r := e.ok("undo")
			contains(t, "undo", r.Stdout, "task 1 → task 0")
			sameManifest(t, "after undo", pre, e.manifest())
			e.ok("redo")
			sameManifest(t, "after redo", post, e.manifest())
			e.ok("undo")
			sameManifest(t, "after the second undo", pre, e.manifest())
			if st := e.status(); st.ActiveTask != 0 || st.State != "completed" || st.Mode != mode {
				t.Fatalf("status after undo: %+v", st)
			}
		})
	}
}

// TestTaskTree walks the task tree: base and leaf limits, a refused deep
// undo, branching, switch, and redo following the most recently visited
// child.
func TestTaskTree(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("base.txt", "base\n", 0o644)
			m0 := e.manifest()
			long := strings.Repeat("x", 70) + " and more words after eighty"
			e.ok("run", "--mode", mode, "-m", long, "--", "sh", "-c", "echo a > a.txt")
			m1 := e.manifest()
			e.sh(mode, "echo b > b.txt")
			m2 := e.manifest()

			// Undo deeper than the base is refused as a whole.
			r := e.fails(1, "undo", "5")
			contains(t, "undo 5", r.Stderr, "timeagent: ")
			sameManifest(t, "after a refused undo 5", m2, e.manifest())
			if st := e.status(); st.ActiveTask != 2 {
				t.Fatalf("undo 5 moved the active task to %d", st.ActiveTask)
			}
			// Redo at the leaf.
			r = e.fails(1, "redo")
			contains(t, "redo at leaf", r.Stderr, "nothing to redo")
			oneLine(t, r.Stderr)
			// Undo to the base, then once more.
			e.ok("undo", "2")
			sameManifest(t, "undo 2", m0, e.manifest())
			r = e.fails(1, "undo")
			contains(t, "undo at base", r.Stderr, "already at the base")
			oneLine(t, r.Stderr)
			sameManifest(t, "after a refused undo", m0, e.manifest())

			// Back to task 1 and branch from it.
			e.ok("redo")
			sameManifest(t, "redo to 1", m1, e.manifest())
			e.sh(mode, "echo c > c.txt")
			m3 := e.manifest()
			l := e.log()
			if len(l.Tasks) != 3 || l.ActiveTask != 3 || l.CurrentTask != 3 {
				t.Fatalf("log after the branch: %+v", l)
			}
			want := map[uint64]logTask{
				1: {ID: 1, Parent: 0, Summary: long[:80], Kind: "agent", Status: "past", HasBranches: true, Session: 1, Files: 1},
				2: {ID: 2, Parent: 1, Summary: "sh -c echo b > b.txt", Kind: "agent", Status: "other", Session: 2, Files: 1},
				3: {ID: 3, Parent: 1, Summary: "sh -c echo c > c.txt", Kind: "agent", Status: "current", Session: 3, Files: 1},
			}
			for id, w := range want {
				if got := l.task(t, id); got != w {
					t.Fatalf("task %d:\n got %+v\nwant %+v", id, got, w)
				}
			}

			// The old future is kept and reachable.
			e.ok("switch", "2")
			sameManifest(t, "switch 2", m2, e.manifest())
			e.ok("switch", "0")
			sameManifest(t, "switch 0", m0, e.manifest())
			e.ok("switch", "3")
			sameManifest(t, "switch 3", m3, e.manifest())
			// Redo follows the most recently visited child.
			e.ok("switch", "2")
			e.ok("undo")
			sameManifest(t, "undo from 2", m1, e.manifest())
			l = e.log()
			if s2, s3 := l.task(t, 2).Status, l.task(t, 3).Status; s2 != "future" || s3 != "future" {
				t.Fatalf("at task 1 after visiting 2: status of 2 = %s, of 3 = %s", s2, s3)
			}
			e.ok("redo")
			sameManifest(t, "redo after visiting 2", m2, e.manifest())
			e.ok("switch", "3")
			e.ok("undo")
			e.ok("redo")
			sameManifest(t, "redo after visiting 3", m3, e.manifest())

			// Human log: markers and summaries.
			e.ok("undo")
			out := e.ok("log").Stdout
			contains(t, "log", out, "→⎇", "↯", long[:80], "sh -c echo b > b.txt", "(base: before the first task)")
			if strings.Contains(out, long[:81]) {
				t.Fatalf("log shows more than 80 characters of the summary:\n%s", out)
			}
			for _, line := range strings.Split(out, "\n") {
				if (strings.Contains(line, "echo c") || strings.Contains(line, "echo b")) && !strings.Contains(line, " ↯  ") {
					t.Fatalf("tasks 2 and 3 are in the future of task 1 (↯): %q\n%s", line, out)
				}
			}
			// Drawn as a graph: the two branches join at task 1.
			contains(t, "log graph", out, "├─╯\n")
		})
	}
}

// TestDrift: an undo over a file edited since its task ended refuses without
// a terminal, keeps the edit as an outside task, and --yes applies.
func TestDrift(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			pre := e.manifest()
			e.sh(mode, "echo agent > NOTES.md; echo made > made.txt")
			edit := "edited by hand\x00after the session\n"
			e.write("NOTES.md", edit, 0o644)
			drifted := e.manifest()

			r := e.fails(1, "undo")
			contains(t, "drift refusal", r.Stderr, "NOTES.md", "--yes")
			if strings.Contains(r.Stderr, "made.txt") {
				t.Fatalf("made.txt did not drift but is listed:\n%s", r)
			}
			sameManifest(t, "after the refused undo", drifted, e.manifest())
			l := e.log()
			var outside *logTask
			for i := range l.Tasks {
				if l.Tasks[i].Kind == "outside" {
					outside = &l.Tasks[i]
				}
			}
			if outside == nil || outside.Files != 1 || outside.Parent != 1 {
				t.Fatalf("want an outside task (child of 1, one file) in the log: %+v", l.Tasks)
			}
			contains(t, "log", e.ok("log").Stdout, "[outside]")
			var d diffDoc
			e.jsonOf(&d, "diff", "--json", "--task", fmt.Sprint(outside.ID))
			if len(d.Changes) != 1 || d.Changes[0].Path != "NOTES.md" || d.Changes[0].Change != "modified" {
				t.Fatalf("outside task's diff: %+v", d)
			}

			e.ok("undo", "--yes")
			sameManifest(t, "undo --yes", pre, e.manifest())
			e.ok("switch", fmt.Sprint(outside.ID))
			sameManifest(t, "switch to the outside task", drifted, e.manifest())
			if got := e.read("NOTES.md"); got != edit {
				t.Fatalf("NOTES.md = %q, want the edit back", got)
			}
		})
	}
}

// TestManyTasks: ids past 9 stay numbers (ordering, parents, undo N,
// switch), every command in a fresh process.
func TestManyTasks(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("keep", "keep\n", 0o644)
			pre := e.manifest()
			e.sh(mode, `set -e; i=1; while [ $i -le 11 ]; do echo $i > f$i; "$TA" checkpoint -m "after $i" > /dev/null; i=$((i+1)); done; echo 12 > f12`)
			l := e.log()
			if len(l.Tasks) != 12 || l.ActiveTask != 12 {
				t.Fatalf("log: %+v", l)
			}
			for i, x := range l.Tasks {
				if x.ID != uint64(i+1) || x.Parent != uint64(i) || x.Files != 1 || x.Session != 1 {
					t.Fatalf("task %d: %+v", i+1, x)
				}
			}
			files := func(n int) {
				t.Helper()
				for i := 1; i <= 12; i++ {
					if got, want := exists(e.path(fmt.Sprintf("f%d", i))), i <= n; got != want {
						t.Fatalf("at task %d: f%d exists = %v", n, i, got)
					}
				}
			}
			e.ok("undo", "11")
			files(1)
			e.ok("switch", "10")
			files(10)
			e.ok("redo", "2")
			files(12)
			e.fails(1, "undo", "13")
			files(12)
			e.ok("undo", "--session")
			files(0)
			sameManifest(t, "undo --session", pre, e.manifest())
			e.ok("switch", "12")
			files(12)
		})
	}
}

// TestUndoReplacedReadOnlyDirs: the agent makes directories read-only and
// puts them where a file and a symlink were. Undo must open them up to
// empty them, and then give the file its own mode back and leave the
// symlink's target alone, not hand them the directories' old mode.
func TestUndoReplacedReadOnlyDirs(t *testing.T) {
	const script = `set -e
rm f && mkdir f && echo x > f/x && chmod 0555 f
rm l && mkdir l && echo y > l/y && chmod 0555 l
`
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("f", "a file\n", 0o644)
			e.write("other", "the link's target\n", 0o600)
			symlink(t, "other", e.path("l"))
			pre := e.manifest()
			e.sh(mode, script)
			post := e.manifest()
			e.ok("undo")
			sameManifest(t, "after undo", pre, e.manifest())
			e.ok("redo")
			sameManifest(t, "after redo", post, e.manifest())
		})
	}
}
