//go:build unix

package cow

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// buildRealisticTree fills dir with what a real repository holds: nested
// directories, an empty one, an executable, a private file, a setgid
// directory, symlinks (dangling, to a directory, relative up), a fifo, a
// 5 MiB binary, a .git directory and a socket (which scans skip).
func buildRealisticTree(t tb, dir string) {
	t.Helper()
	write(t, dir, "README.md", "# hello\n", 0o644)
	write(t, dir, "src/main.go", "package main\n\nfunc main() {}\n", 0o644)
	write(t, dir, "src/pkg/deep/nested/file.txt", "deep\n", 0o644)
	write(t, dir, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write(t, dir, ".env", "SECRET=1\n", 0o600)
	write(t, dir, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, dir, ".git/objects/ab/cdef", "\x78\x01binary", 0o444)
	write(t, dir, "empty.txt", "", 0o644)
	mustDo(t, os.MkdirAll(filepath.Join(dir, "emptydir"), 0o755))
	mustDo(t, os.MkdirAll(filepath.Join(dir, "shared"), 0o755))
	mustDo(t, os.Chmod(filepath.Join(dir, "shared"), 0o775|os.ModeSetgid))
	mustDo(t, os.Symlink("does/not/exist", filepath.Join(dir, "dangling")))
	mustDo(t, os.Symlink("src", filepath.Join(dir, "srclink")))
	mustDo(t, os.Symlink("../README.md", filepath.Join(dir, "src/readme-up")))
	mustDo(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o640))
	big := make([]byte, 5<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	mustDo(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "assets/blob.bin"), big, 0o644))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	mustDo(t, err)
	t.Cleanup(func() { ln.Close() })
}
