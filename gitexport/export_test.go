package gitexport

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// gitIn runs git in dir with a fixed identity and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// history makes a repository with one committed file and a journal whose
// tasks 1 -> 2 change it and 3 branches off task 1; the files are at task 2.
func history(t *testing.T) (*journal.Journal, string) {
	t.Helper()
	root := t.TempDir()
	gitIn(t, root, "init", "-q")
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal"), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	file := func(s string) journal.NodeState {
		r, err := j.PutBytes([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return journal.NodeState{Kind: journal.File, Mode: 0o644, Size: int64(len(s)), Blob: r}
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, n := range []struct {
		id, parent    tasks.ID
		before, after string
	}{{1, 0, "", "v1\n"}, {2, 1, "v1\n", "v2\n"}, {3, 1, "v1\n", "v3\n"}} {
		before := journal.NodeState{}
		if n.before != "" {
			before = file(n.before)
		}
		_, err := cow.CreateTask(j, cow.NewTask{Task: tasks.Task{ID: n.id, Parent: n.parent, Summary: "task", Kind: tasks.KindAgent,
			Created: now, Ended: now}, Changes: []journal.Change{{Path: "f", Before: before, After: file(n.after)}}, Activate: true, Applied: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Update(func(tx *journal.Tx) error {
		st, err := tx.State()
		st.Active, st.Applied = 2, 2
		if err != nil {
			return err
		}
		return tx.SetState(st)
	}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
	return j, root
}

// TestExport: a branch of one commit per task with the task's content and
// date; a second export to it, a range across branches and a directory
// that is no repository are refused with errors that say so.
func TestExport(t *testing.T) {
	j, root := history(t)
	res, err := Export(j, Options{Dir: root, From: 0, To: 3, Branch: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Commits) != 2 || res.Commits[0].Task != 1 || res.Commits[1].Task != 3 || res.BaseAdded {
		t.Fatalf("export 0..3: %+v", res)
	}
	if got := gitIn(t, root, "show", "b:f"); got != "v3" {
		t.Fatalf("f on the branch: %q", got)
	}
	if got := gitIn(t, root, "log", "-1", "--format=%aI", "b"); got != "2026-03-01T12:00:00Z" && got != "2026-03-01T12:00:00+00:00" {
		t.Fatalf("author date %q", got)
	}
	if _, err := Export(j, Options{Dir: root, From: 0, To: 3, Branch: "b"}); !errors.Is(err, ErrBranchExists) {
		t.Fatalf("export to an existing branch: %v", err)
	}
	if _, err := Export(j, Options{Dir: root, From: 2, To: 3, Branch: "c"}); !errors.Is(err, ErrNotAncestor) {
		t.Fatalf("export across branches: %v", err)
	}
	if _, err := Export(j, Options{Dir: t.TempDir(), From: 0, To: 2, Branch: "c"}); err == nil || !strings.Contains(err.Error(), "needs a git repository") {
		t.Fatalf("export outside a repository: %v", err)
	}
	var patch strings.Builder
	if _, err := Export(j, Options{Dir: root, From: 1, To: 2, Patch: &patch}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.String(), "-v1\n+v2\n") {
		t.Fatalf("patch of 1..2:\n%s", patch.String())
	}
}
