package cow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestApplyKeepsXattrs: a file the apply rewrites (new content, in a
// directory that exists, or with a new mode too) keeps its extended
// attributes; a new file gets none.
func TestApplyKeepsXattrs(t *testing.T) {
	dir := tempDir(t)
	attrs := map[string]string{"user.origin": "real", "user.empty": ""}
	if os.Geteuid() == 0 {
		attrs["trusted.tag"] = "t1"
	}
	for _, p := range []string{"a.txt", "sub/b.txt", "mode.txt"} {
		write(t, dir, p, "old\n", 0o644)
		for k, v := range attrs {
			if err := unix.Lsetxattr(filepath.Join(dir, p), k, []byte(v), 0); err != nil {
				t.Fatalf("setxattr: %v", err)
			}
		}
	}
	blobs := newMemBlobs()
	ref, err := blobs.PutBlob(strings.NewReader("new content\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := func(mode os.FileMode) NodeState {
		return NodeState{Kind: fileKind, Mode: mode, Size: ref.Size, Blob: ref}
	}
	root := openRoot(t, dir)
	target := map[string]NodeState{"a.txt": file(0o644), "sub/b.txt": file(0o644), "mode.txt": file(0o600), "new.txt": file(0o644)}
	if _, err := Apply(root, blobs, target, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		keep bool
	}{{"a.txt", true}, {"sub/b.txt", true}, {"mode.txt", true}, {"new.txt", false}} {
		p := filepath.Join(dir, tc.path)
		if b, err := os.ReadFile(p); err != nil || string(b) != "new content\n" {
			t.Fatalf("%s: %q %v", tc.path, b, err)
		}
		for k, v := range attrs {
			buf := make([]byte, 64)
			n, err := unix.Lgetxattr(p, k, buf)
			switch {
			case tc.keep && (err != nil || string(buf[:n]) != v):
				t.Errorf("%s %s: %q, %v; want %q", tc.path, k, buf[:max(n, 0)], err, v)
			case !tc.keep && err != unix.ENODATA:
				t.Errorf("%s %s: %q, %v; want none", tc.path, k, buf[:max(n, 0)], err)
			}
		}
	}
}
