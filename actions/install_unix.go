//go:build !windows

package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// installProxy makes dir/tool a symlink to self.
func installProxy(dir, self, tool string) error {
	p := filepath.Join(dir, tool)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("install proxy %s: %w", p, err)
	}
	if err := os.Symlink(self, p); err != nil {
		return fmt.Errorf("install proxy %s: %w", p, err)
	}
	return nil
}
