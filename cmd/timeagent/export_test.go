package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// gitView keeps of a manifest what git stores: files (content and the
// executable bit) and symlinks, without .git and the given ignored paths.
func gitView(t *testing.T, m string, ignored map[string]bool) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimRight(m, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 6 || f[0] == ".git" || strings.HasPrefix(f[0], ".git/") || ignored[f[0]] {
			continue
		}
		switch f[1] {
		case "file":
			exec := "-"
			if strings.ContainsAny(f[2][len(f[2])-3:], "1357") {
				exec = "x"
			}
			out = append(out, f[0]+" file "+exec+" "+f[4])
		case "symlink":
			out = append(out, f[0]+" symlink "+f[5])
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// gitOut runs git in dir and returns its trimmed stdout.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestExportRoundTrip: three tasks (a change, a new executable and a
// symlink, a deletion and a new directory, an ignored log each time) over
// uncommitted changes are exported as commits; checking each one out gives
// the task's tree except the ignored files; the user's index, HEAD and
// files are untouched; the patch series applies to HEAD and gives the last
// task's tree; a second export to the same branch is refused.
func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write(".gitignore", "*.log\n", 0o644)
	e.write("a.txt", "a0\n", 0o644)
	e.write("old.txt", "old\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "init")
	e.write("a.txt", "a0, not committed\n", 0o644)
	head := gitOut(t, e.root, "rev-parse", "HEAD")
	e.sh("copy", "echo a1 >> a.txt; echo one > one.log")
	e.sh("copy", `printf '#!/bin/sh\necho hi\n' > run.sh; chmod 755 run.sh; ln -s a.txt link; echo two > two.log`)
	e.sh("copy", "rm old.txt; mkdir -p sub/deep; echo deep > sub/deep/f.txt; echo three > sub/three.log")
	ignored := map[string]bool{"one.log": true, "two.log": true, "sub/three.log": true}
	var trees []string
	for _, id := range []string{"1", "2", "3"} {
		e.ok("switch", id)
		trees = append(trees, gitView(t, e.manifest(), ignored))
	}
	status := gitOut(t, e.root, "status", "--porcelain")
	// .git gains the commits' objects and the branch: compare the rest.
	outsideGit := func(m string) string {
		var keep []string
		for _, l := range strings.Split(m, "\n") {
			if !strings.HasPrefix(l, ".git/") && !strings.HasPrefix(l, ".git\t") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	before := outsideGit(e.manifest())
	index, err := os.ReadFile(filepath.Join(e.root, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}

	var doc exportDoc
	e.jsonOf(&doc, "export", "0..3", "--git", "--branch", "exp", "--json")
	if !doc.BaseAdded || len(doc.Commits) != 3 {
		t.Fatalf("export: %+v", doc)
	}
	if got := gitOut(t, e.root, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved: %s -> %s", head, got)
	}
	if got := gitOut(t, e.root, "status", "--porcelain"); got != status {
		t.Fatalf("git status changed:\n%s\nwant\n%s", got, status)
	}
	sameManifest(t, "the files after export", before, outsideGit(e.manifest()))
	if now, err := os.ReadFile(filepath.Join(e.root, ".git", "index")); err != nil || string(now) != string(index) {
		t.Fatalf("the user's index changed (%v)", err)
	}
	if len(doc.Commits[0].Ignored) != 1 || doc.Commits[0].Ignored[0] != "one.log" {
		t.Fatalf("task 1's ignored paths: %v", doc.Commits[0].Ignored)
	}
	msg := gitOut(t, e.root, "log", "-1", "--format=%B", doc.Commits[2].Commit)
	contains(t, "task 3's message", msg, "rm old.txt", "timeagent task 3", "sub/three.log")
	for i, c := range doc.Commits {
		wt := filepath.Join(t.TempDir(), "wt")
		gitOut(t, e.root, "worktree", "add", "-q", "--detach", wt, c.Commit)
		got := gitView(t, manifest(t, wt), nil)
		if got != trees[i] {
			t.Fatalf("commit of task %d:\n%s\nwant\n%s", c.Task, got, trees[i])
		}
		gitOut(t, e.root, "worktree", "remove", "--force", wt)
	}
	if branch := gitOut(t, e.root, "rev-parse", "exp"); branch != doc.Commits[2].Commit {
		t.Fatalf("branch exp at %s, want %s", branch, doc.Commits[2].Commit)
	}
	r := e.fails(1, "export", "0..3", "--git", "--branch", "exp")
	contains(t, "export to an existing branch", r.Stderr, "exists", "--branch")
	r = e.fails(2, "export", "3", "--git")
	contains(t, "export without ..", r.Stderr, "FROM..TO")
	e.ok("switch", "1")
	e.sh("copy", "echo side > side.txt")
	r = e.fails(1, "export", "3..4", "--git")
	contains(t, "export across branches", r.Stderr, "not an ancestor")

	// The patch series of tasks 2..3 applies on top of task 1's commit.
	patch := e.ok("export", "1..3", "--patch").Stdout
	contains(t, "patch series", patch, "Subject: [PATCH 1/2]", "Subject: [PATCH 2/2]", "run.sh")
	wt := filepath.Join(t.TempDir(), "wt")
	gitOut(t, e.root, "worktree", "add", "-q", "--detach", wt, doc.Commits[0].Commit)
	pf := filepath.Join(t.TempDir(), "series.mbox")
	if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "am", "-q", pf)
	cmd.Dir = wt
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git am: %v\n%s", err, out)
	}
	if got := gitView(t, manifest(t, wt), nil); got != trees[2] {
		t.Fatalf("after git am of the series:\n%s\nwant\n%s", got, trees[2])
	}
}
