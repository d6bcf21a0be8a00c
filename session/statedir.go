package session

import (
	"errors"
	"fmt"
	"io/fs"
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
	if err := privateDirs(base, "roots", filepath.Base(dir)); err != nil {
		return "", err
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

// stateDirIn is the state directory of root under the base state directory.
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

// hasHistory reports whether the canonical directory dir is a root with a
// journal under base, the base state directory. It only looks: nothing is
// created.
func hasHistory(base, dir string) bool {
	sd := stateDirIn(base, dir)
	owner, err := os.ReadFile(filepath.Join(sd, "root"))
	if err != nil || string(owner) != dir {
		return false
	}
	st, err := os.Stat(journalDir(sd))
	return err == nil && st.IsDir()
}

// privateDirs makes sure base and each of names below it (base/names[0]/
// names[1]...) exist, are directories owned by the caller, and that none
// below the base is a symlink or writable by other users. It creates what
// is missing 0700 and never changes the mode of a directory it did not
// create: the base may be shared (TIMEAGENT_HOME=/tmp).
func privateDirs(base string, names ...string) error {
	if _, err := os.Lstat(base); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(base, 0o700); err != nil {
			return fmt.Errorf("%w %s: %w", ErrStateDir, base, err)
		}
		if err := os.Chmod(base, 0o700); err != nil {
			return fmt.Errorf("%w: protect %s: %w", ErrStateDir, base, err)
		}
	}
	// The base itself may be reached through a symlink: the user chose it.
	fi, err := os.Stat(base)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStateDir, base, err)
	}
	if err := checkStateDir(base, fi); err != nil {
		return err
	}
	p := base
	for _, n := range names {
		p = filepath.Join(p, n)
		err := os.Mkdir(p, 0o700)
		created := err == nil
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w %s: %w", ErrStateDir, p, err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrStateDir, p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symlink, and timeagent follows none below %s: remove it", ErrStateDir, p, base)
		}
		if err := checkStateDir(p, fi); err != nil {
			return err
		}
		if created {
			if err := os.Chmod(p, 0o700); err != nil {
				return fmt.Errorf("%w: protect %s: %w", ErrStateDir, p, err)
			}
		} else if othersCanWrite(fi) {
			return fmt.Errorf("%w: %s is writable by other users: run chmod go-w %s, or set %s", ErrStateDir, p, p, HomeEnv)
		}
	}
	return nil
}

// checkStateDir refuses a state directory that is not a directory or that
// another user owns.
func checkStateDir(p string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory: move it away, or set %s", ErrStateDir, p, HomeEnv)
	}
	if uid, mine := ownedByCaller(fi); !mine {
		return fmt.Errorf("%w: %s is owned by another user (uid %d): set %s to a directory of your own", ErrStateDir, p, uid, HomeEnv)
	}
	return nil
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
