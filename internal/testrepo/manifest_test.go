package testrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestSeesEveryDifference: content, mode, type and link target
// changes all change the manifest, and Diff names the path.
func TestManifestSeesEveryDifference(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "f"), []byte("a"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(os.Symlink("f", filepath.Join(dir, "l")))
	base, err := Manifest(dir)
	must(err)
	changes := []func(){
		func() { must(os.WriteFile(filepath.Join(dir, "f"), []byte("b"), 0o644)) },
		func() { must(os.Chmod(filepath.Join(dir, "f"), 0o755)) },
		func() { must(os.Chmod(filepath.Join(dir, "d"), 0o700|os.ModeSetgid)) },
		func() { must(os.Remove(filepath.Join(dir, "l"))); must(os.Symlink("d", filepath.Join(dir, "l"))) },
	}
	prev := base
	for i, change := range changes {
		change()
		m, err := Manifest(dir)
		must(err)
		if m == prev {
			t.Errorf("change %d left the manifest equal", i)
		}
		if d := Diff(prev, m, 10); !strings.Contains(d, "- ") || !strings.Contains(d, "+ ") {
			t.Errorf("change %d: Diff = %q", i, d)
		}
		prev = m
	}
	if Diff(base, base, 10) != "" {
		t.Error("Diff of equal manifests is not empty")
	}
}
