package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// chattr's +i and +a: FS_IMMUTABLE_FL and FS_APPEND_FL of linux/fs.h.
const (
	chattrI = 0x10
	chattrA = 0x20
)

// setInodeFlags sets or clears FS_IMMUTABLE_FL / FS_APPEND_FL on p, as
// chattr +i / +a does.
func setInodeFlags(p string, set, clear int) error {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	v, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("get flags of %s: %w", p, err)
	}
	v = v&^uint32(clear) | uint32(set)
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(v)); err != nil {
		return fmt.Errorf("set flags of %s: %w", p, err)
	}
	return nil
}

// fillFlags makes immutable and append-only files and directories (returns
// the paths to unflag before removal).
func fillFlags(root string) error {
	for _, d := range []string{"immdir", "appdir"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"imm.txt", "app.log", "plain.txt", "immdir/in.txt", "appdir/in.txt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("line\n"), 0o644); err != nil {
			return err
		}
	}
	for p, fl := range map[string]int{"imm.txt": chattrI, "immdir": chattrI,
		"app.log": chattrA, "appdir": chattrA} {
		if err := setInodeFlags(filepath.Join(root, p), fl, 0); err != nil {
			return err
		}
	}
	return nil
}

// unflag clears the flags fillFlags set, so the tree can be removed.
func unflag(root string) {
	for _, p := range []string{"imm.txt", "immdir", "app.log", "appdir"} {
		setInodeFlags(filepath.Join(root, p), 0, chattrI|chattrA)
	}
}

// Immutable and append-only files and directories (chattr +i, +a) refuse
// through the overlay what they refuse on disk, with the same errno: the
// session's final apply could not make those changes.
func TestImmutableAppendOnly(t *testing.T) {
	model := t.TempDir()
	if err := fillFlags(model); err != nil {
		var en unix.Errno
		if errors.As(err, &en) && (en == unix.ENOTTY || en == unix.EOPNOTSUPP || en == unix.EINVAL) {
			t.Skipf("the test dir's file system has no immutable/append-only flags (chattr): %v", err)
		}
		t.Fatal(err)
	}
	defer unflag(model)
	var fillErr error
	o, cleanup := setupOverlay(t, func(root string) { fillErr = fillFlags(root) })
	defer cleanup()
	defer unflag(o.lower.dir.Name())
	if fillErr != nil {
		t.Fatal(fillErr)
	}
	open := func(name string, flags int) func(string) error {
		return func(root string) error {
			f, err := os.OpenFile(filepath.Join(root, name), flags, 0)
			if err != nil {
				return err
			}
			if flags&os.O_APPEND != 0 {
				if _, err := f.WriteString("more\n"); err != nil {
					f.Close()
					return err
				}
			}
			return f.Close()
		}
	}
	at := func(fn func(string) error) func(string) error { return fn }
	ops := []struct {
		name string
		do   func(root string) error
	}{
		{"open imm.txt for writing", open("imm.txt", os.O_WRONLY)},
		{"append to imm.txt", open("imm.txt", os.O_WRONLY|os.O_APPEND)},
		{"open imm.txt with O_TRUNC", open("imm.txt", os.O_RDONLY|os.O_TRUNC)},
		{"truncate imm.txt", at(func(r string) error { return os.Truncate(filepath.Join(r, "imm.txt"), 1) })},
		{"chmod imm.txt", at(func(r string) error { return os.Chmod(filepath.Join(r, "imm.txt"), 0o600) })},
		{"unlink imm.txt", at(func(r string) error { return os.Remove(filepath.Join(r, "imm.txt")) })},
		{"rename imm.txt", at(func(r string) error { return os.Rename(filepath.Join(r, "imm.txt"), filepath.Join(r, "x")) })},
		{"rename over imm.txt", at(func(r string) error {
			return os.Rename(filepath.Join(r, "plain.txt"), filepath.Join(r, "imm.txt"))
		})},
		{"link imm.txt", at(func(r string) error { return os.Link(filepath.Join(r, "imm.txt"), filepath.Join(r, "l")) })},
		{"open app.log for writing", open("app.log", os.O_WRONLY)},
		{"open app.log with O_TRUNC", open("app.log", os.O_WRONLY|os.O_APPEND|os.O_TRUNC)},
		{"truncate app.log", at(func(r string) error { return os.Truncate(filepath.Join(r, "app.log"), 1) })},
		{"chmod app.log", at(func(r string) error { return os.Chmod(filepath.Join(r, "app.log"), 0o600) })},
		{"unlink app.log", at(func(r string) error { return os.Remove(filepath.Join(r, "app.log")) })},
		{"rename app.log", at(func(r string) error { return os.Rename(filepath.Join(r, "app.log"), filepath.Join(r, "x")) })},
		{"append to app.log", open("app.log", os.O_WRONLY|os.O_APPEND)},
		{"create in immdir", at(func(r string) error { return os.WriteFile(filepath.Join(r, "immdir/new"), nil, 0o644) })},
		{"unlink in immdir", at(func(r string) error { return os.Remove(filepath.Join(r, "immdir/in.txt")) })},
		{"rmdir immdir", at(func(r string) error { return os.Remove(filepath.Join(r, "immdir")) })},
		{"write a file in immdir", open("immdir/in.txt", os.O_WRONLY|os.O_APPEND)},
		{"create in appdir", at(func(r string) error { return os.WriteFile(filepath.Join(r, "appdir/new"), nil, 0o644) })},
		{"unlink in appdir", at(func(r string) error { return os.Remove(filepath.Join(r, "appdir/in.txt")) })},
		{"rename out of appdir", at(func(r string) error {
			return os.Rename(filepath.Join(r, "appdir/in.txt"), filepath.Join(r, "y"))
		})},
		{"unlink plain.txt", at(func(r string) error { return os.Remove(filepath.Join(r, "plain.txt")) })},
	}
	for _, op := range ops {
		want, got := errnoOf(op.do(model)), errnoOf(op.do(o.root))
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%s: on disk %v, through the overlay %v", op.name, want, got)
		}
	}
	for _, p := range []string{"app.log", "immdir/in.txt", "imm.txt"} {
		w, _ := os.ReadFile(filepath.Join(model, p))
		g, _ := os.ReadFile(filepath.Join(o.root, p))
		if string(w) != string(g) {
			t.Errorf("%s: on disk %q, through the overlay %q", p, w, g)
		}
	}
}
