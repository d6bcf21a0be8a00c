package xattr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopy copies attributes between real files: small, empty and larger
// than the first read buffer, and none from a file that has none.
func TestCopy(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("v", 1000)
	for _, tc := range []struct {
		name  string
		attrs map[string]string
	}{
		{"none", nil},
		{"small", map[string]string{"user.a": "1", "user.empty": ""}},
		{"large", map[string]string{"user.big": big, "user." + strings.Repeat("n", 200): "long name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := filepath.Join(dir, tc.name+".src"), filepath.Join(dir, tc.name+".dst")
			for _, p := range []string{src, dst} {
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range tc.attrs {
				if err := unix.Lsetxattr(src, k, []byte(v), 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := Copy(src, dst); err != nil {
				t.Fatal(err)
			}
			names, err := list(dst)
			if err != nil || len(names) != len(tc.attrs) {
				t.Fatalf("dst has %q (%v), want %d attributes", names, err, len(tc.attrs))
			}
			for k, v := range tc.attrs {
				got, err := get(dst, k)
				if err != nil || string(got) != v {
					t.Errorf("%s: %q, %v; want %q", k, got, err, v)
				}
			}
		})
	}
	if err := Copy(filepath.Join(dir, "missing"), filepath.Join(dir, "small.dst")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("copy from a missing file: %v", err)
	}
}
