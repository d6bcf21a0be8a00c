package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completions runs cobra's hidden __complete command as the bash, zsh and
// fish scripts do and returns the candidates (the words before any tab)
// and the directive line.
func (e *env) completions(args ...string) (words []string, directive string) {
	e.t.Helper()
	r := e.ok(append([]string{"__complete"}, args...)...)
	return parseCompletions(e.t, r.Stdout)
}

func parseCompletions(t *testing.T, out string) (words []string, directive string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("no directive in the completion output:\n%s", out)
	}
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, lines[len(lines)-1]
}

// TestCompletion: task ids, tag names and the words of --mode and --color
// complete from a real repository with history; file names are not
// offered where a command takes none.
func TestCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a\n", 0o644)
	e.ok("run", "--mode", "copy", "-m", "first", "--", "sh", "-c", "echo 1 > a.txt")
	e.ok("run", "--mode", "copy", "-m", "second", "--", "sh", "-c", "echo 2 > a.txt")
	e.ok("tag", "good", "1")
	const noFiles = ":4" // cobra.ShellCompDirectiveNoFileComp
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"switch", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"revert", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"diff", "--task", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"diff", "--from", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"diff-file", "--to", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"tag", "other", ""}, []string{"2", "1", "0", "good"}},
		{[]string{"undo", ""}, []string{"good"}},
		{[]string{"tag", "--delete", ""}, []string{"good"}},
		{[]string{"run", "--mode", ""}, []string{"auto", "copy", "fuse"}},
		{[]string{"diff", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"log", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"integrate", ""}, []string{"claude", "codex", "gemini"}},
		{[]string{"status", ""}, nil},
		{[]string{"switch", "1", ""}, nil},
	} {
		words, directive := e.completions(tc.args...)
		if strings.Join(words, " ") != strings.Join(tc.want, " ") || directive != noFiles {
			t.Errorf("complete %q: %q %s, want %q %s", tc.args, words, directive, tc.want, noFiles)
		}
	}
	// The descriptions name the task.
	r := e.ok("__complete", "switch", "")
	contains(t, "descriptions", r.Stdout, "2\t(active) second\n", "1\tfirst\n", "good\ttag of task 1\n")
	// -C reaches the history of another directory.
	c := e.cmd("__complete", "-C", e.root, "switch", "")
	c.Dir = e.scratch
	if words, _ := parseCompletions(t, runCmd(t, c, c.Args[1:]).Stdout); len(words) != 4 {
		t.Errorf("complete with -C from elsewhere: %q", words)
	}
	// Outside a repository: no candidates, no error.
	c = e.cmd("__complete", "switch", "")
	c.Dir = e.scratch
	if r := runCmd(t, c, c.Args[1:]); r.Code != 0 || r.Stdout != noFiles+"\n" {
		t.Errorf("complete outside a repository:\n%s", r)
	}
	// During a session the running session answers.
	e.ok("run", "--mode", "copy", "--", "sh", "-c", `"$TA" __complete switch "" > "$SCRATCH/during"`)
	b, err := os.ReadFile(filepath.Join(e.scratch, "during"))
	if err != nil {
		t.Fatal(err)
	}
	if words, _ := parseCompletions(t, string(b)); strings.Join(words, " ") != "3 2 1 0 good" {
		t.Errorf("complete during a session: %q", words)
	}
	// bash runs its script for real (with a stand-in for bash-completion's
	// _get_comp_words_by_ref, which the script calls).
	if _, err := exec.LookPath("bash"); err == nil {
		script := `_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(timeagent completion bash)
COMP_WORDS=(timeagent diff --task ""); COMP_CWORD=3; COMP_LINE="timeagent diff --task "; COMP_POINT=${#COMP_LINE}
__start_timeagent 2>/dev/null
echo "${COMPREPLY[*]}"`
		c := exec.Command("bash", "-c", script)
		c.Dir = e.root
		c.Env = append(e.baseEnv(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := c.Output()
		if err != nil || string(out) != "3 2 1 0 good\n" {
			t.Errorf("bash completion of diff --task: %q, %v", out, err)
		}
	}
	// The scripts of the three shells call __complete.
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out := e.ok("completion", sh).Stdout; !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: no call of __complete in\n%.300s", sh, out)
		}
	}
}

// TestTaskCandidates: ids newest first, then the base, then the tag names
// sorted; descriptions on one line, cut at 60 characters without
// splitting a character.
func TestTaskCandidates(t *testing.T) {
	long := strings.Repeat("é", 70)
	doc := logJSON{Tasks: []taskJSON{
		{ID: 1, Summary: "first\nline", Status: "past", Tags: []string{"zeta"}},
		{ID: 2, Summary: long, Status: "current", Tags: []string{"alpha"}},
		{ID: 3, Summary: "later", Status: "future"},
	}}
	got := taskCandidates(doc, true, true)
	want := []string{
		"3\t(undone) later",
		"2\t(active) " + strings.Repeat("é", 59) + "…",
		"1\tfirst line",
		"0\tthe base: before the first task",
		"alpha\ttag of task 2",
		"zeta\ttag of task 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := taskCandidates(doc, false, true); len(got) != 2 || !strings.HasPrefix(got[0], "alpha\t") {
		t.Fatalf("tag names only: %q", got)
	}
}
