package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// words is the vocabulary of the generated text files: source-like text,
// compressible about as well as real code.
var words = strings.Fields(`func return if else for range var const type struct interface map chan go
defer select case switch break continue package import error nil true false string int uint64 byte
len cap make new append copy delete panic recover ctx err ok value key index path file name size
mode data buf reader writer close open read write sync lock unlock mutex journal layer task blob
chunk scan tree root node state change before after apply undo redo switch branch session mode
fuse copy commit checkpoint manifest stat cache inode mtime ctime hash xxhash badger txn batch
the a of to in is that it with as on for by this be are from at or an will can which when
{ } ( ) [ ] := = == != <= >= && || + - * / % ; , . // /* */ # " ' : => -> <- ...`)

// textPool builds n bytes of line-broken random words from rng.
func textPool(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, n+128)
	line := 0
	for len(b) < n {
		w := words[rng.IntN(len(words))]
		b = append(b, w...)
		line += len(w) + 1
		if line > 40+rng.IntN(60) {
			b = append(b, '\n')
			for i := rng.IntN(4); i > 0; i-- {
				b = append(b, '\t')
			}
			line = 0
		} else {
			b = append(b, ' ')
		}
	}
	return b[:n]
}

// fileSize draws a realistic small-file size: mostly 1-8 KiB, some larger
// (about 10.6 KiB on average, so 100k files are about 1 GiB).
func fileSize(rng *rand.Rand) int {
	switch r := rng.Float64(); {
	case r < 0.80:
		return 1<<10 + rng.IntN(7<<10)
	case r < 0.96:
		return 8<<10 + rng.IntN(24<<10)
	default:
		return 32<<10 + rng.IntN(128<<10)
	}
}

var (
	dirNames = strings.Fields("src pkg internal lib cmd test tests docs api core util model view service store web app config scripts tools vendor assets")
	exts     = strings.Fields(".go .go .go .ts .js .py .md .json .txt .c .h .rs")
)

// genTree writes n files under dir (which must not exist) as a git
// repository with one commit holding them all, so .git/ (one pack) is part
// of the tree. It writes the list of generated paths to listFile.
func genTree(dir string, n int, seed uint64, listFile string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("gen %s: already exists", dir)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7157))
	pool := textPool(rng, 16<<20)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen %s: %w", dir, err)
	}
	if out, err := exec.Command("git", "-C", dir, "init", "-q", "-b", "main").CombinedOutput(); err != nil {
		return fmt.Errorf("gen %s: git init: %v: %s", dir, err, out)
	}
	// Directories: a random tree, about 25 files per directory, depth <= 6.
	type gdir struct {
		path  string
		depth int
	}
	ndirs := max(1, n/25)
	dirs := make([]gdir, 0, ndirs)
	seen := map[string]bool{}
	for len(dirs) < ndirs {
		parent := gdir{}
		if len(dirs) > 0 && rng.IntN(8) != 0 {
			parent = dirs[rng.IntN(len(dirs))]
		}
		if parent.depth >= 6 {
			continue
		}
		name := dirNames[rng.IntN(len(dirNames))]
		if parent.depth > 0 || rng.IntN(2) == 0 {
			name = fmt.Sprintf("%s%d", name, rng.IntN(1000))
		}
		p := filepath.Join(parent.path, name)
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return fmt.Errorf("gen %s: %w", p, err)
		}
		dirs = append(dirs, gdir{p, parent.depth + 1})
	}

	imp := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	stdin, err := imp.StdinPipe()
	if err != nil {
		return fmt.Errorf("gen %s: fast-import: %w", dir, err)
	}
	imp.Stderr = os.Stderr
	if err := imp.Start(); err != nil {
		return fmt.Errorf("gen %s: fast-import: %w", dir, err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	paths := make([]string, 0, n)
	for i := 0; i < n; i++ {
		d := dirs[rng.IntN(len(dirs))]
		p := filepath.ToSlash(filepath.Join(d.path, fmt.Sprintf("f%06d%s", i, exts[rng.IntN(len(exts))])))
		size := fileSize(rng)
		head := fmt.Sprintf("// %s generated %d\n", p, i)
		off := rng.IntN(len(pool) - size)
		data := append([]byte(head), pool[off:off+max(0, size-len(head))]...)
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
			return fmt.Errorf("gen %s: %w", p, err)
		}
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", i+1, len(data))
		w.Write(data)
		w.WriteByte('\n')
		paths = append(paths, p)
	}
	fmt.Fprintf(w, "commit refs/heads/main\nauthor Bench <bench@example.com> 1700000000 +0000\n"+
		"committer Bench <bench@example.com> 1700000000 +0000\ndata 8\ninitial\n")
	for i, p := range paths {
		fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, p)
	}
	w.WriteString("\n")
	if err := w.Flush(); err != nil {
		return fmt.Errorf("gen %s: fast-import: %w", dir, err)
	}
	stdin.Close()
	if err := imp.Wait(); err != nil {
		return fmt.Errorf("gen %s: fast-import: %w", dir, err)
	}
	// Fill the index from the commit and refresh its stat data, as a clone
	// would leave it: "git status" is then clean and fast.
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"update-index", "-q", "--refresh"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("gen %s: git %s: %v: %s", dir, args[0], err, out)
		}
	}
	if err := os.WriteFile(listFile, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("gen %s: %w", listFile, err)
	}
	return nil
}

func genMain(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to create")
	n := fs.Int("n", 10000, "number of files")
	seed := fs.Uint64("seed", 1, "random seed")
	list := fs.String("list", "", "file to write the generated paths to (default DIR.files)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("gen: -dir is required")
	}
	if *list == "" {
		*list = filepath.Clean(*dir) + ".files"
	}
	return genTree(*dir, *n, *seed, *list)
}
