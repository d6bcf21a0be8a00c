//go:build windows

package actions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// installProxy makes dir/<tool>.exe (a hard link to self, or a copy) and the
// dir/<tool>.cmd shim.
func installProxy(dir, self, tool string) error {
	exe := filepath.Join(dir, tool+".exe")
	if err := os.Remove(exe); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("install proxy %s: %w", exe, err)
	}
	if err := os.Link(self, exe); err != nil {
		if err := copyFile(self, exe); err != nil {
			return fmt.Errorf("install proxy %s: %w", exe, err)
		}
	}
	shim, err := WindowsShim(self, tool)
	if err != nil {
		return fmt.Errorf("install proxy %s: %w", tool, err)
	}
	cmd := filepath.Join(dir, tool+".cmd")
	if err := os.WriteFile(cmd, []byte(shim), 0o700); err != nil {
		return fmt.Errorf("install proxy %s: %w", cmd, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
