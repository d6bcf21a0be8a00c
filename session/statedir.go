package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// HomeEnv overrides the base state directory.
const HomeEnv = "TIMEAGENT_HOME"

// Environment variables given to the child of a session (decision 10).
const (
	EnvRoot    = "TIMEAGENT_ROOT"
	EnvSession = "TIMEAGENT_SESSION"
	EnvControl = "TIMEAGENT_CONTROL"
)

// ErrStateDir means the state directory cannot be created or written.
var ErrStateDir = errors.New("cannot create the state directory")

// BaseStateDir returns the directory holding the state of every root.
func BaseStateDir() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		return filepath.Abs(h)
	}
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "timeagent"), nil
		}
	case "darwin":
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, "Library", "Application Support", "timeagent"), nil
		}
	default:
		if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "timeagent"), nil
		}
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, ".local", "state", "timeagent"), nil
		}
	}
	return "", errors.New("cannot find a state directory: set TIMEAGENT_HOME")
}

// StateDir returns (creating it 0700) the state directory of root: one
// directory per canonical root path, recording that path in a file "root".
func StateDir(root string) (string, error) {
	base, err := BaseStateDir()
	if err != nil {
		return "", err
	}
	dir := stateDirIn(base, root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrStateDir, dir, err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		return "", fmt.Errorf("%w: protect %s: %w", ErrStateDir, base, err)
	}
	rf := filepath.Join(dir, "root")
	if b, err := os.ReadFile(rf); err == nil {
		if string(b) != root {
			return "", fmt.Errorf("state dir %s belongs to %q, not %q: move it away or set %s", dir, string(b), root, HomeEnv)
		}
	} else if err := writeFileAtomic(rf, []byte(root), 0o600); err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrStateDir, dir, err)
	}
	return dir, nil
}

// stateDirIn is the state directory of root under base.
func stateDirIn(base, root string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(root))
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join(base, "roots", fmt.Sprintf("%s-%016x", name, xxhash.Sum64String(root)))
}

// stateDirPath is StateDir's answer without creating or checking anything.
func stateDirPath(root string) (string, error) {
	base, err := BaseStateDir()
	if err != nil {
		return "", err
	}
	return stateDirIn(base, root), nil
}

// InsideRoot reports whether path p lies inside root (or is root).
func InsideRoot(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// writeFileAtomic writes b to name through a temporary file, fsync and rename.
func writeFileAtomic(name string, b []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-"+filepath.Base(name)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ErrStateDirDeleted means the state directory was deleted while a session
// had it open: its history is lost.
var ErrStateDirDeleted = errors.New("was deleted while the session ran")

// CheckStateDir returns an error wrapping ErrStateDirDeleted when the
// journal of w's state dir is gone.
func (w *Workspace) CheckStateDir() error {
	_, err := os.Stat(filepath.Join(journalDir(w.StateDir), "MANIFEST"))
	if !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("the state directory %s %w: the history of %s is lost (its files stay as the session left them); the next timeagent command starts a new history",
		w.StateDir, ErrStateDirDeleted, w.Root)
}
