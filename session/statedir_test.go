package session

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStateDirShared: a base directory timeagent did not create (like /tmp)
// keeps its mode; a symlink below the base and a directory owned by another
// user are refused.
func TestStateDirShared(t *testing.T) {
	t.Run("base kept as it is", func(t *testing.T) {
		base := t.TempDir()
		if err := os.Chmod(base, os.ModePerm|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		t.Setenv(HomeEnv, base)
		dir, err := StateDir("/some/root")
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(base)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModePerm|os.ModeSticky) != 0o777|os.ModeSticky {
			t.Errorf("base mode changed to %v", fi.Mode())
		}
		for _, d := range []string{filepath.Join(base, "roots"), dir} {
			if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a 0700 directory", d, fi.Mode(), err)
			}
		}
	})
	t.Run("new base is private", func(t *testing.T) {
		base := filepath.Join(t.TempDir(), "a", "b")
		t.Setenv(HomeEnv, base)
		if _, err := StateDir("/some/root"); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("new base: %v, %v", fi.Mode(), err)
		}
	})
	t.Run("symlink below the base", func(t *testing.T) {
		base, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(base, "roots")); err != nil {
			t.Fatal(err)
		}
		t.Setenv(HomeEnv, base)
		_, err := StateDir("/some/root")
		if err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("StateDir through a symlink: %v", err)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
			t.Errorf("wrote through the symlink: %v", entries)
		}
	})
	t.Run("other users' directories", func(t *testing.T) {
		if runtime.GOOS == "windows" || os.Geteuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		for _, level := range []string{"base", "roots"} {
			base := t.TempDir()
			owned := base
			if level == "roots" {
				owned = filepath.Join(base, "roots")
				if err := os.Mkdir(owned, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chown(owned, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			t.Setenv(HomeEnv, base)
			_, err := StateDir("/some/root")
			if err == nil || !strings.Contains(err.Error(), "another user") {
				t.Errorf("%s owned by another user: %v", level, err)
			}
		}
	})
	t.Run("writable by others below the base", func(t *testing.T) {
		base := t.TempDir()
		roots := filepath.Join(base, "roots")
		if err := os.Mkdir(roots, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(roots, 0o777); err != nil {
			t.Fatal(err)
		}
		t.Setenv(HomeEnv, base)
		if _, err := StateDir("/some/root"); err == nil || !strings.Contains(err.Error(), "other users") {
			t.Errorf("roots writable by others: %v", err)
		}
		if fi, _ := os.Stat(roots); fi.Mode().Perm() != 0o777 {
			t.Errorf("roots chmodded to %v", fi.Mode())
		}
	})
}
