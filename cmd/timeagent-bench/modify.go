package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// readList reads a file of paths, one a line.
func readList(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read list %s: %w", file, err)
	}
	return strings.Fields(string(b)), nil
}

// pick returns n paths spread evenly over all (offset by seed).
func pick(all []string, n int, seed int) []string {
	n = min(n, len(all))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[(i*len(all)/n+seed)%len(all)])
	}
	return out
}

// modifyFiles rewrites each path under root with a new first line (tag) in
// front of its old content.
func modifyFiles(root string, paths []string, tag string) error {
	for _, p := range paths {
		full := filepath.Join(root, p)
		b, err := os.ReadFile(full)
		if err != nil {
			return fmt.Errorf("modify %s: %w", p, err)
		}
		if err := os.WriteFile(full, append([]byte("// "+tag+"\n"), b...), 0o644); err != nil {
			return fmt.Errorf("modify %s: %w", p, err)
		}
	}
	return nil
}

func modifyMain(args []string) error {
	fs := flag.NewFlagSet("modify", flag.ContinueOnError)
	list := fs.String("list", "", "file listing the tree's paths")
	root := fs.String("root", ".", "tree root")
	n := fs.Int("n", 1000, "number of files to modify")
	seed := fs.Int("seed", 0, "which files (offset) and what tag")
	out := fs.String("out", "", "write the modified paths here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	all, err := readList(*list)
	if err != nil {
		return err
	}
	paths := pick(all, *n, *seed)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("modify: %w", err)
		}
	}
	return modifyFiles(*root, paths, fmt.Sprintf("modified by bench, seed %d", *seed))
}
