package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// removeEmptyLogs deletes zero-length value-log (.vlog) and memtable (.mem)
// files. Badger creates them empty and sizes them just after; a kill -9 in
// between leaves a file that holds no data but makes every later Open fail.
func removeEmptyLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open journal %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, ".mem")) {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("open journal %s: remove empty %s: %w", dir, name, err)
		}
	}
	return nil
}
