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

// ErrNoRoot means the directory is not inside a git repository and no
// explicit root was given.
var ErrNoRoot = errors.New("not inside a git repository")

// FindRoot returns the canonical root for dir: explicit when given (it must
// be an existing directory), else `git rev-parse --show-toplevel` run in dir.
// A dead session's stale mount on the way is detached first, so the root can
// be found at all (Open reports it as detached).
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
