package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/recovery"
)

// ErrNoRoot means the directory is not inside a git repository nor inside
// a directory with history, and no explicit root was given.
var ErrNoRoot = errors.New("not inside a git repository")

// FindRoot returns the canonical root for dir: explicit when given (it must
// be an existing directory), else the nearer of two candidates, each dir or
// one of its ancestors: the nearest directory that has a journal (found
// without git, so a root whose .git the agent deleted is still found) and
// `git rev-parse --show-toplevel` run in dir. In a repository nested inside
// another one, or a plain directory with history inside a repository, the
// inner one is the root. A dead session's stale mount on the way is
// detached first, so the root can be found at all (Open reports it as
// detached).
func FindRoot(dir, explicit string) (string, error) {
	if explicit != "" {
		p := explicit
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := CheckStopped(p); err != nil {
			return "", err
		}
		if err := recovery.DetachDead(p); err != nil {
			return "", err
		}
		return canonicalDir(p)
	}
	if err := CheckStopped(dir); err != nil {
		return "", err
	}
	if err := recovery.DetachDead(dir); err != nil {
		return "", err
	}
	cwd, err := canonicalDir(dir)
	if err != nil {
		return "", err
	}
	hist := nearestHistory(cwd)
	if hist == cwd {
		return hist, nil // nothing can be nearer
	}
	top, err := gitToplevel(dir)
	switch {
	case err != nil && hist != "":
		return hist, nil
	case err != nil:
		return "", err
	case hist != "" && InsideRoot(top, hist):
		return hist, nil
	}
	return top, nil
}

// nearestHistory returns the nearest of cwd (canonical) and its ancestors
// that is a root with a journal, or "" when there is none.
func nearestHistory(cwd string) string {
	base, err := BaseStateDir()
	if err != nil {
		return ""
	}
	for d := cwd; ; {
		if hasHistory(base, d) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// gitToplevel returns the canonical top directory of the git working tree
// holding dir (ErrNoRoot when there is none).
func gitToplevel(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("find root of %s: git rev-parse did not answer within %v: a file system on the way does not answer (a stopped or hung timeagent session? see `ps`); pass --root DIR to skip git", dir, gitWait)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%w: %s", ErrNoRoot, dir)
		}
		return "", fmt.Errorf("find root of %s: run git: %w", dir, err)
	}
	top := strings.TrimRight(out.String(), "\r\n")
	if top == "" {
		return "", fmt.Errorf("%w: %s (a bare repository has no working tree)", ErrNoRoot, dir)
	}
	return canonicalDir(filepath.FromSlash(top))
}

// gitWait bounds the git command that finds the root: it only walks up from
// the directory, so a longer wait means a file system that does not answer.
const gitWait = 30 * time.Second

func canonicalDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", p, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", p, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", p, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("root %s: not a directory", p)
	}
	return real, nil
}
