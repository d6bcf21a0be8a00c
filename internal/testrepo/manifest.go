// Package testrepo holds what the integration tests of several packages
// share about a tree: its full manifest and a readable difference of two.
package testrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest describes every entry under root (root itself excluded), one
// sorted line each: path, type, mode (all permission bits, setuid, setgid,
// sticky), size, sha256 of the content and symlink target. Two trees with
// equal manifests are equal byte for byte.
func Manifest(root string) (string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		perm := fmt.Sprintf("%04o", uint32(mode.Perm())|extraBits(mode))
		switch {
		case mode.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			lines = append(lines, fmt.Sprintf("%s\tfile\t%s\t%d\t%s\t", rel, perm, len(b), hex.EncodeToString(sum[:])))
		case mode.IsDir():
			if rel != "." {
				lines = append(lines, fmt.Sprintf("%s\tdir\t%s\t\t\t", rel, perm))
			}
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s\tsymlink\t\t\t\t%s", rel, target))
		default:
			lines = append(lines, fmt.Sprintf("%s\tother(%v)\t%s\t\t\t", rel, mode.Type(), perm))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("manifest of %s: %w", root, err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

func extraBits(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// Diff lists the lines that differ between two manifests ("- " only in
// want, "+ " only in got), at most max of them; "" when they are equal.
func Diff(want, got string, max int) string {
	if want == got {
		return ""
	}
	wl, gl := LineSet(want), LineSet(got)
	var diff []string
	for l := range wl {
		if !gl[l] {
			diff = append(diff, "- "+l)
		}
	}
	for l := range gl {
		if !wl[l] {
			diff = append(diff, "+ "+l)
		}
	}
	sort.Slice(diff, func(i, j int) bool { return diff[i][2:] < diff[j][2:] })
	if len(diff) > max {
		diff = append(diff[:max], fmt.Sprintf("… and %d more", len(diff)-max))
	}
	return strings.Join(diff, "\n")
}

// LineSet returns the lines of a manifest as a set.
func LineSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[l] = true
	}
	return m
}
