package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// patchNode is one path of a test tree: a file (content, executable bit)
// or a symlink (target).
type patchNode struct {
	link    bool
	content string // file content or symlink target
	exec    bool
}

// patchPaths are the paths a random tree draws from: none is a prefix
// directory of another, so no change is a file turning into a directory.
var patchPaths = []string{"a.txt", "b", "c.sh", "with space.txt", "q\"ü\\.txt", "d/x.txt", "d/y", "d/e/z.txt", "f/only.txt"}

// genContent draws text: lines from a small alphabet (so edits share
// lines), with or without a trailing newline, sometimes empty.
func genContent(t *rapid.T, label string) string {
	lines := rapid.SliceOfN(rapid.SampledFrom([]string{"alpha", "beta", "gamma", "delta", "", "  indented", "tab\tline"}), 0, 12).Draw(t, label+" lines")
	s := strings.Join(lines, "\n")
	if len(lines) > 0 && rapid.Bool().Draw(t, label+" newline") {
		s += "\n"
	}
	return s
}

func genNode(t *rapid.T, label string) patchNode {
	if rapid.IntRange(0, 5).Draw(t, label+" kind") == 0 {
		return patchNode{link: true, content: rapid.SampledFrom([]string{"a.txt", "../b", "d/x.txt", "nowhere", "with space"}).Draw(t, label+" target")}
	}
	return patchNode{content: genContent(t, label), exec: rapid.IntRange(0, 3).Draw(t, label+" exec") == 0}
}

// editContent changes a few lines of s (so the patch has real hunks with
// context), or draws it anew.
func editContent(t *rapid.T, label, s string) string {
	if rapid.IntRange(0, 3).Draw(t, label+" anew") == 0 {
		return genContent(t, label)
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for n := rapid.IntRange(1, 3).Draw(t, label+" edits"); n > 0; n-- {
		i := rapid.IntRange(0, len(lines)).Draw(t, label+" at")
		word := rapid.SampledFrom([]string{"new\n", "beta\n", "changed\n", "last"}).Draw(t, label+" word")
		switch {
		case i < len(lines) && rapid.Bool().Draw(t, label+" delete"):
			lines = append(lines[:i], lines[i+1:]...)
		default:
			lines = append(lines[:i], append([]string{word}, lines[i:]...)...)
		}
	}
	// A line without its newline can only stay last.
	for i := 0; i < len(lines)-1; i++ {
		if !strings.HasSuffix(lines[i], "\n") {
			lines[i] += "\n"
		}
	}
	return strings.Join(lines, "")
}

// writeTree writes tree into root.
func writeTree(t testing.TB, root string, tree map[string]patchNode) {
	t.Helper()
	for p, n := range tree {
		full := filepath.Join(root, filepath.FromSlash(p))
		if n.link {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			testrepo.Symlink(t, n.content, full)
			continue
		}
		perm := os.FileMode(0o644)
		if n.exec {
			perm = 0o755
		}
		testrepo.WriteFile(t, full, []byte(n.content), perm)
	}
}

// snapshot describes the files and symlinks under root (directories and
// .git left out: a patch carries neither), with mode and exact content.
func snapshot(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s file %04o %q", rel, info.Mode().Perm(), b))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s symlink %q", rel, target))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sessionTo runs one copy-mode session that turns before into after (each
// differing path removed, then copied from a prepared tree), and returns
// the id of its last task.
func sessionTo(e *env, before, after map[string]patchNode) uint64 {
	e.t.Helper()
	src := filepath.Join(e.scratch, "after")
	writeTree(e.t, src, after)
	var script []string
	for _, p := range patchPaths {
		b, inB := before[p]
		a, inA := after[p]
		if inB == inA && b == a {
			continue
		}
		script = append(script, "rm -f "+shq(p))
		if inA {
			script = append(script, "mkdir -p "+shq(filepath.Dir(p)), "cp -a "+shq(filepath.Join(src, p))+" "+shq(p))
		}
	}
	script = append(script, "true")
	e.sh("copy", strings.Join(script, "\n"))
	l := e.log()
	if len(l.Tasks) == 0 {
		e.t.Fatal("no task recorded")
	}
	last := l.Tasks[0].ID
	for _, tk := range l.Tasks {
		if tk.ID > last {
			last = tk.ID
		}
	}
	return last
}

// gitApply applies patch with git apply in a fresh clone of the root's
// first commit and returns the clone.
func gitApply(e *env, patch string) (string, error) {
	e.t.Helper()
	clone := filepath.Join(e.scratch, "clone")
	testrepo.Git(e.t, e.scratch, e.baseEnv(), "clone", "-q", e.root, clone)
	if patch == "" {
		// Nothing changed (every drawn path absent before and after):
		// git apply refuses an empty input, and there is nothing to apply.
		return clone, nil
	}
	pf := filepath.Join(e.scratch, "p.patch")
	if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", pf)
	cmd.Dir = clone
	cmd.Env = e.baseEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return clone, fmt.Errorf("git apply: %v: %s", err, out)
	}
	return clone, nil
}

// TestPatchGitApply: for random before and after trees (edits, adds,
// deletes, mode changes, symlinks, with and without a trailing newline),
// git apply of `diff --patch --from 0 --to N` onto the before tree gives
// the after tree, byte for byte and mode for mode.
func TestPatchGitApply(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		before := map[string]patchNode{}
		for _, p := range patchPaths {
			if rapid.Bool().Draw(rt, p+" before") {
				before[p] = genNode(rt, p)
			}
		}
		after := map[string]patchNode{}
		for _, p := range patchPaths {
			b, ok := before[p]
			switch op := rapid.IntRange(0, 5).Draw(rt, p+" op"); {
			case !ok && op < 3:
			case !ok:
				after[p] = genNode(rt, p+" new")
			case op == 0: // deleted
			case op == 1: // unchanged
				after[p] = b
			case op == 2: // mode change, maybe with an edit
				n := b
				if !n.link {
					n.exec = !n.exec
					if rapid.Bool().Draw(rt, p+" edit too") {
						n.content = editContent(rt, p, n.content)
					}
				}
				after[p] = n
			case op == 3: // replaced by another node
				after[p] = genNode(rt, p+" new")
			default: // edited
				n := b
				if n.link {
					n.content += "2"
				} else {
					n.content = editContent(rt, p, n.content)
				}
				after[p] = n
			}
		}
		e := newEnv(t)
		writeTree(t, e.root, before)
		e.git("add", "-A")
		e.git("commit", "-q", "--allow-empty", "-m", "before")
		last := sessionTo(e, before, after)
		want := snapshot(t, e.root)
		patch := e.ok("diff", "--patch", "--from", "0", "--to", fmt.Sprint(last)).Stdout
		if patch == "no changes\n" {
			patch = ""
		}
		clone, err := gitApply(e, patch)
		if err != nil {
			rt.Fatalf("%v\npatch:\n%s", err, patch)
		}
		if got := snapshot(t, clone); got != want {
			rt.Fatalf("git apply gives another tree\nwant:\n%s\ngot:\n%s\npatch:\n%s", want, got, patch)
		}
	})
}

// fixedPatchCase is the case of the golden files: an edit, an add, a
// delete, a mode change, a symlink, a binary file and missing newlines.
func fixedPatchCase(t *testing.T) *env {
	e := newEnv(t)
	e.write("edit.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", 0o644)
	e.write("gone.txt", "bye\nbye\n", 0o644)
	e.write("run.sh", "#!/bin/sh\necho hi\n", 0o644)
	e.write("nonl.txt", "no newline", 0o644)
	e.write("bin.dat", "\x00\x01\x02", 0o644)
	e.write("with space.txt", "a\nb\n", 0o644)
	e.write("type", "file, then a symlink\n", 0o644)
	e.write("empty", "", 0o644)
	testrepo.Symlink(t, "edit.txt", e.path("link"))
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "before")
	e.sh("copy", `printf 'one\ntwo\n3\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n' > edit.txt
rm gone.txt
chmod 755 run.sh
printf 'no newline\nnow one\n' > nonl.txt
printf 'new\nfile\n' > added.txt
printf '\000\003' > bin.dat
ln -sfn run.sh link
printf 'a\nB\n' > 'with space.txt'
printf 'x\n' > 'ü.txt'
rm type; ln -s edit.txt type
rm empty; : > new-empty`)
	return e
}

// goldenText compares human output with testdata/NAME (rewritten under
// -update).
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs from the golden file (go test -update rewrites it):\n--- want\n%s\n--- got\n%s", p, want, got)
	}
}

// TestPatchStatGolden: the human --patch and --stat of a fixed case, as
// git prints them.
func TestPatchStatGolden(t *testing.T) {
	t.Parallel()
	e := fixedPatchCase(t)
	goldenText(t, "diff-patch.txt", e.ok("diff", "--patch").Stdout)
	goldenText(t, "diff-stat.txt", e.ok("diff", "--stat").Stdout)
	// git's own stat of the same change agrees.
	e.git("add", "-A")
	cmd := exec.Command("git", "diff", "--cached", "--no-renames", "--stat", "HEAD")
	cmd.Dir, cmd.Env = e.root, e.baseEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.ok("diff", "--stat").Stdout; got != string(out) {
		t.Fatalf("diff --stat differs from git's:\n--- git\n%s\n--- timeagent\n%s", out, got)
	}
	// And so does git's patch (without its function names after @@).
	cmd = exec.Command("git", "-c", "core.quotePath=true", "diff", "--cached", "--no-renames", "--no-color", "HEAD")
	cmd.Dir, cmd.Env = e.root, e.baseEnv()
	if out, err = cmd.Output(); err != nil {
		t.Fatal(err)
	}
	if got := e.ok("diff", "--patch").Stdout; got != string(out) {
		t.Fatalf("diff --patch differs from git's:\n--- git\n%s\n--- timeagent\n%s", out, got)
	}
}

// TestPatchLargeFileSmallEdit: a 2-line edit in a 3,000-line file shows as
// 2 changed lines with 3 lines of context each, not the whole file.
func TestPatchLargeFileSmallEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	e.write("big.txt", b.String(), 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "before")
	e.sh("copy", `sed -i -e 's/^line 1000$/line one thousand/' -e 's/^line 2000$/line two thousand/' big.txt`)
	patch := e.ok("diff", "--patch").Stdout
	var plus, minus, ctx, hunks int
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "@@"):
			hunks++
		case strings.HasPrefix(l, "+"):
			plus++
		case strings.HasPrefix(l, "-"):
			minus++
		case strings.HasPrefix(l, " "):
			ctx++
		}
	}
	if plus != 2 || minus != 2 || hunks != 2 || ctx != 12 {
		t.Fatalf("want 2 hunks, +2 -2 and 12 context lines; got %d hunks +%d -%d, %d context:\n%.2000s", hunks, plus, minus, ctx, patch)
	}
	contains(t, "diff --patch", patch, "@@ -997,7 +997,7 @@", "@@ -1997,7 +1997,7 @@")
	stat := e.ok("diff", "--stat").Stdout
	contains(t, "diff --stat", stat, " big.txt | 4 ++--\n", " 1 file changed, 2 insertions(+), 2 deletions(-)\n")

	// Bars longer than the width are scaled as git scales them.
	e.sh("copy", `seq 1 2500 > counted.txt; sed -i 's/^line 1.*$/line/' big.txt`)
	e.git("add", "-A")
	cmd := exec.Command("git", "diff", "--cached", "--stat", "HEAD")
	cmd.Dir, cmd.Env = e.root, e.baseEnv()
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.ok("diff", "--stat", "--from", "0", "--to", "2").Stdout; got != string(want) {
		t.Fatalf("diff --stat differs from git's:\n--- git\n%s\n--- timeagent\n%s", want, got)
	}
}

// TestDiffColor: colour only when asked or on a terminal, never with
// NO_COLOR in auto, never in JSON.
func TestDiffColor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "one\n", 0o644)
	e.sh("copy", "printf 'two\\n' > a.txt")
	if out := e.ok("diff", "--patch").Stdout; strings.Contains(out, "\x1b[") {
		t.Fatalf("colour when stdout is not a terminal:\n%q", out)
	}
	out := e.ok("diff", "--patch", "--color=always").Stdout
	contains(t, "--color=always", out, "\x1b[1mdiff --git a/a.txt b/a.txt\x1b[m", "\x1b[31m-one\x1b[m", "\x1b[32m+two\x1b[m", "\x1b[36m@@ -1 +1 @@\x1b[m")
	contains(t, "--stat --color=always", e.ok("diff", "--stat", "--color=always").Stdout, "\x1b[32m+\x1b[m\x1b[31m-\x1b[m")
	if out := e.ok("diff", "--patch", "--color=never").Stdout; strings.Contains(out, "\x1b[") {
		t.Fatalf("colour with --color=never:\n%q", out)
	}
	e.fails(2, "diff", "--patch", "--color=sometimes")
}
