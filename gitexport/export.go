// Package gitexport turns a run of tasks into git commits (`timeagent
// export FROM..TO --git`): one commit per task, built with git plumbing in
// a temporary index (GIT_INDEX_FILE), so the user's index, working tree and
// HEAD are never touched. Files git ignores are named in the commit
// message, not added; .git itself is never exported. It knows the journal
// and the task tree, not the CLI.
package gitexport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// ErrNotAncestor: FROM is not an ancestor of TO, so FROM..TO is no run of tasks.
var ErrNotAncestor = errors.New("FROM is not an ancestor of TO")

// ErrBranchExists: the branch to create exists already.
var ErrBranchExists = errors.New("branch exists")

// Options say what to export and where.
type Options struct {
	// Dir is the root: a git working tree.
	Dir      string
	From, To tasks.ID
	// Branch is the branch to create (it must not exist); "" creates none.
	Branch string
	// Patch, when not nil, receives the commits as a patch series (git
	// format-patch --stdout).
	Patch io.Writer
}

// Commit is one exported task.
type Commit struct {
	Task   tasks.ID `json:"task"`
	Commit string   `json:"commit"`
	// Ignored are the paths the task wrote that git ignores: named in the
	// message, not added.
	Ignored []string `json:"ignored"`
}

// Result is what an export made.
type Result struct {
	Branch string `json:"branch,omitempty"`
	// Base is the commit the first task's commit has as parent: HEAD, or
	// a commit of the files at FROM when they differ from HEAD's.
	Base string `json:"base"`
	// BaseAdded: Base is a commit of the files at FROM made by the export.
	BaseAdded bool     `json:"baseAdded"`
	Commits   []Commit `json:"commits"`
}

// Export makes one commit per task on the path from opts.From (excluded)
// down to opts.To. The files at FROM are found from the working tree (what
// `git add -A` would stage) moved back along the history from the task the
// files are in.
func Export(j *journal.Journal, opts Options) (Result, error) {
	var res Result
	tree, err := j.Tree()
	if err != nil {
		return res, err
	}
	walk, err := tree.Path(opts.From, opts.To)
	if err != nil {
		return res, fmt.Errorf("export %d..%d: %w", opts.From, opts.To, err)
	}
	if len(walk.Up) > 0 {
		return res, fmt.Errorf("export %d..%d: %w: give a task and one of its descendants (timeagent log shows the tree)", opts.From, opts.To, ErrNotAncestor)
	}
	if len(walk.Down) == 0 {
		return res, fmt.Errorf("export %d..%d: no task between them to export", opts.From, opts.To)
	}
	st, err := j.State()
	if err != nil {
		return res, err
	}
	g, err := newGit(opts.Dir)
	if err != nil {
		return res, err
	}
	defer g.close()
	if opts.Branch != "" {
		if _, err := g.run(nil, "check-ref-format", "--branch", opts.Branch); err != nil {
			return res, fmt.Errorf("export: %q is not a valid branch name", opts.Branch)
		}
		if _, err := g.run(nil, "rev-parse", "--verify", "-q", "refs/heads/"+opts.Branch); err == nil {
			return res, fmt.Errorf("export: %w: %s (choose another --branch)", ErrBranchExists, opts.Branch)
		}
	}
	for _, who := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		if _, err := g.run(nil, "var", who); err != nil {
			return res, fmt.Errorf("export: git does not know who you are, which its commits need: run `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`")
		}
	}
	head, _ := g.run(nil, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	headTree, err := g.run([]byte{}, "mktree") // the empty tree: the files of no commit
	if err != nil {
		return res, err
	}
	if head != "" {
		if _, err := g.run(nil, "read-tree", head); err != nil {
			return res, err
		}
		headTree, _ = g.run(nil, "rev-parse", head+"^{tree}")
	}
	if _, err := g.run(nil, "add", "-A", "--", "."); err != nil {
		return res, err
	}
	// The working tree is at the applied task: move the index to FROM.
	plan, err := cow.MakePlan(tree, j, st.Applied, opts.From)
	if err != nil {
		return res, fmt.Errorf("export: the files at task %d: %w", opts.From, err)
	}
	if _, err := g.set(j, plan.Target); err != nil {
		return res, err
	}
	base, err := g.run(nil, "write-tree")
	if err != nil {
		return res, err
	}
	res.Base = head
	if base != headTree {
		msg := fmt.Sprintf("The files at timeagent task %d\n\nThe state the exported tasks start from, where it differs from HEAD\n(changes not committed to git when the first task began).\n", opts.From)
		if res.Base, err = g.commit(base, head, msg, time.Time{}); err != nil {
			return res, err
		}
		res.BaseAdded = true
	}
	parent := res.Base
	for _, id := range walk.Down {
		t, _ := tree.Get(id)
		layer, err := j.Layer(id)
		if err != nil {
			return res, err
		}
		states := make(map[string]journal.NodeState, len(layer))
		for _, c := range layer {
			states[c.Path] = c.After
		}
		ignored, err := g.set(j, states)
		if err != nil {
			return res, fmt.Errorf("export task %d: %w", id, err)
		}
		treeID, err := g.run(nil, "write-tree")
		if err != nil {
			return res, err
		}
		c, err := g.commit(treeID, parent, message(t, ignored), t.Created)
		if err != nil {
			return res, fmt.Errorf("export task %d: %w", id, err)
		}
		res.Commits = append(res.Commits, Commit{Task: id, Commit: c, Ignored: ignored})
		parent = c
	}
	if opts.Branch != "" {
		if _, err := g.run(nil, "update-ref", "-m", "timeagent export", "refs/heads/"+opts.Branch, parent, ""); err != nil {
			return res, fmt.Errorf("export: create branch %s: %w", opts.Branch, err)
		}
		res.Branch = opts.Branch
	}
	if opts.Patch != nil {
		args := []string{"format-patch", "--stdout", "--no-signature"}
		if res.Base == "" {
			args = append(args, "--root", parent)
		} else {
			args = append(args, res.Base+".."+parent)
		}
		out, err := g.output(args...)
		if err != nil {
			return res, err
		}
		if _, err := opts.Patch.Write(out); err != nil {
			return res, fmt.Errorf("export: write the patch series: %w", err)
		}
	}
	return res, nil
}

// message is a task's commit message: its summary, where it came from, and
// the ignored paths it wrote.
func message(t tasks.Task, ignored []string) string {
	var b strings.Builder
	summary := strings.TrimSpace(t.Summary)
	if summary == "" {
		summary = fmt.Sprintf("timeagent task %d", t.ID)
	}
	b.WriteString(summary)
	fmt.Fprintf(&b, "\n\ntimeagent task %d (%s", t.ID, t.Kind)
	if t.Session != 0 {
		fmt.Fprintf(&b, ", session %d", t.Session)
	}
	b.WriteString(")\n")
	if len(ignored) > 0 {
		b.WriteString("\nWritten but not added (git ignores them):\n")
		for _, p := range ignored {
			b.WriteString("  " + p + "\n")
		}
	}
	return b.String()
}

// git runs git in the root with a temporary index.
type git struct {
	dir, tmp, index string
	env             []string
}

func newGit(dir string) (*git, error) {
	tmp, err := os.MkdirTemp("", "timeagent-export-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	g := &git{dir: dir, tmp: tmp, index: filepath.Join(tmp, "index")}
	g.env = append(os.Environ(), "GIT_INDEX_FILE="+g.index)
	if _, err := g.run(nil, "rev-parse", "--git-dir"); err != nil {
		g.close()
		return nil, fmt.Errorf("export --git needs a git repository at %s: %w", dir, err)
	}
	return g, nil
}

func (g *git) close() { _ = os.RemoveAll(g.tmp) }

// run runs git with stdin and returns its stdout, trimmed.
func (g *git) run(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = g.dir, g.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// output runs git and returns its stdout as is.
func (g *git) output(args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = g.dir, g.env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out, nil
}

// commit makes a commit of treeID on parent ("" for none) dated when (the
// present when zero).
func (g *git) commit(treeID, parent, msg string, when time.Time) (string, error) {
	args := []string{"commit-tree", treeID, "-F", "-"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	saved := g.env
	if !when.IsZero() {
		g.env = append(append([]string{}, g.env...), fmt.Sprintf("GIT_AUTHOR_DATE=@%d +0000", when.Unix()))
	}
	defer func() { g.env = saved }()
	return g.run([]byte(msg), args...)
}

// set makes the index hold states (path -> its new state): files and
// symlinks are hashed into git's objects and staged, anything else removes
// the path. Paths under .git are never staged; new paths git ignores are
// left out and returned.
func (g *git) set(j *journal.Journal, states map[string]journal.NodeState) (ignored []string, err error) {
	ignored = []string{}
	paths := make([]string, 0, len(states))
	for p := range states {
		if p == ".git" || strings.HasPrefix(p, ".git/") {
			continue
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var add []string
	for _, p := range paths {
		if k := states[p].Kind; k == journal.File || k == journal.Symlink {
			add = append(add, p)
		}
	}
	skip := map[string]bool{}
	if len(add) > 0 {
		out, err := g.checkIgnore(add)
		if err != nil {
			return nil, err
		}
		for _, p := range out {
			skip[p] = true
			ignored = append(ignored, p)
		}
	}
	var info bytes.Buffer
	var blobs []string
	var blobPaths []string
	for _, p := range paths {
		s := states[p]
		if (s.Kind != journal.File && s.Kind != journal.Symlink) || skip[p] {
			fmt.Fprintf(&info, "0 %s\t%s\x00", strings.Repeat("0", 40), p)
			continue
		}
		f := filepath.Join(g.tmp, fmt.Sprintf("blob%d", len(blobs)))
		var content []byte
		if s.Kind == journal.Symlink {
			content = []byte(s.Target)
		} else if content, err = j.ReadBlob(s.Blob); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if err := os.WriteFile(f, content, 0o600); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		blobs = append(blobs, f)
		blobPaths = append(blobPaths, p)
	}
	var ids string
	if len(blobs) > 0 {
		if ids, err = g.run([]byte(strings.Join(blobs, "\n")+"\n"), "hash-object", "-w", "--no-filters", "--stdin-paths"); err != nil {
			return nil, err
		}
	}
	sc := bufio.NewScanner(strings.NewReader(ids))
	for i := 0; len(blobs) > 0 && sc.Scan(); i++ {
		p := blobPaths[i]
		s := states[p]
		mode := "100644"
		switch {
		case s.Kind == journal.Symlink:
			mode = "120000"
		case s.Mode&0o111 != 0:
			mode = "100755"
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, sc.Text(), p)
		_ = os.Remove(blobs[i])
	}
	if info.Len() > 0 {
		if _, err := g.run(info.Bytes(), "update-index", "--add", "--remove", "--replace", "-z", "--index-info"); err != nil {
			return nil, err
		}
	}
	return ignored, nil
}

// checkIgnore returns the paths git ignores (tracked paths never are).
func (g *git) checkIgnore(paths []string) ([]string, error) {
	cmd := exec.Command("git", "check-ignore", "-z", "--stdin")
	cmd.Dir, cmd.Env = g.dir, g.env
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, fmt.Errorf("git check-ignore: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var res []string
	for _, p := range strings.Split(out.String(), "\x00") {
		if p != "" {
			res = append(res, p)
		}
	}
	return res, nil
}
