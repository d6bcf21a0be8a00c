//go:build linux

package crashtest

import (
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// damage changes the journal's files on disk in one way.
type damage struct {
	name string
	do   func(t *testing.T, files []string)
}

var damages = []damage{
	{"vlog-truncated", func(t *testing.T, files []string) {
		for _, f := range withExt(files, ".vlog") {
			if fi, err := os.Stat(f); err == nil && fi.Size() > 1024 {
				if err := os.Truncate(f, fi.Size()*6/10); err != nil {
					t.Fatal(err)
				}
			}
		}
	}},
	{"vlog-flipped", func(t *testing.T, files []string) {
		flip(t, largest(t, withExt(files, ".vlog")), 0.5)
	}},
	{"sst-flipped", func(t *testing.T, files []string) {
		for _, f := range withExt(files, ".sst") {
			flip(t, f, 0.5)
		}
	}},
	{"manifest-flipped", func(t *testing.T, files []string) {
		flip(t, largest(t, withExt(files, "MANIFEST")), 0.7)
	}},
}

// TestCorruptJournal: the journal's files are damaged on disk after a
// session (a truncated value log, flipped bytes). Every command then either
// works or fails with one clear line (never a panic or a Go stack trace),
// verify exits 1 naming damage, and no apply writes wrong bytes: every path
// of the tree is in its pre-session or its post-session state.
func TestCorruptJournal(t *testing.T) {
	t.Parallel()
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rng := rand.New(rand.NewSource(int64(len(d.name))))
			for _, name := range []string{"big1", "big2", "big3"} {
				b := make([]byte, 64<<10)
				rng.Read(b)
				writeFile(t, e.path(name), b, 0o644)
			}
			b := make([]byte, 64<<10)
			rng.Read(b)
			writeFile(t, filepath.Join(e.scratch, "new1"), b, 0o644)
			pre := e.manifest()
			if r := e.ta("run", "--mode", "copy", "--", "sh", "-c", `cp "$SCRATCH/new1" big1; rm big2; echo x > a`); r.Code != 0 {
				t.Fatalf("session: %s", r)
			}
			post := e.manifest()

			files, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal", "*"))
			if len(files) == 0 {
				t.Fatal("no journal files")
			}
			d.do(t, files)

			for _, args := range [][]string{{"status"}, {"log"}, {"diff"}, {"verify"}, {"undo", "--yes"},
				{"status"}, {"redo", "--yes"}, {"recover"}, {"undo", "--yes"}, {"verify"}} {
				r := e.ta(args...)
				t.Logf("%s: exit %d: %s", strings.Join(args, " "), r.Code, firstLine(r.Stderr))
				if r.Code != 0 {
					oneLine(t, strings.Join(args, " "), r.Stderr)
				}
				if args[0] == "verify" {
					if r.Code != 1 {
						t.Fatalf("verify of a damaged journal: want exit 1:\n%s", r)
					}
					contains(t, "verify", strings.ToLower(r.Stdout+r.Stderr), "damage")
					if strings.Contains(r.Stderr, "finish the interrupted") {
						t.Errorf("verify did not run: the recovery it runs first failed (%s)", firstLine(r.Stderr))
					}
				}
				got := e.manifest()
				if left := stagingLeft(got); len(left) > 0 {
					t.Errorf("after %q, a failed apply left its staging files in the tree: %v", args, left)
					got = withoutStaging(got)
				}
				if bad := neither(pre, post, got); bad != "" {
					t.Fatalf("after %q the tree has paths in neither the pre- nor the post-session state:\n%s\n%s", args, bad, r)
				}
			}
		})
	}
}

// TestEmptyJournalFile: badger creates a new value log (and memtable log)
// file when the journal opens and writes its header just after; a kill -9 in
// between leaves an empty file (TestKillApply hits it about one run in
// five). The next command must still open the journal: the empty file holds
// no data.
func TestEmptyJournalFile(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{".vlog", ".mem"} {
		t.Run(strings.TrimPrefix(ext, "."), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			pre := e.manifest()
			if r := e.ta("run", "--mode", "copy", "--", "sh", "-c", "echo x > a"); r.Code != 0 {
				t.Fatalf("session: %s", r)
			}
			dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal"))
			if len(dirs) != 1 {
				t.Fatalf("journal dirs: %v", dirs)
			}
			// The next file number: badger names value logs %06d.vlog and
			// memtable logs %05d.mem.
			name := "000999.vlog"
			if ext == ".mem" {
				name = "00999.mem"
			}
			if err := os.WriteFile(filepath.Join(dirs[0], name), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			r := e.ta("status")
			if r.Code != 0 {
				t.Fatalf("an empty %s file left by a kill -9 makes status fail:\n%s", ext, r)
			}
			e.ok("undo")
			sameManifest(t, "after undo", pre, e.manifest())
		})
	}
}

// neither lists the manifest lines of got that are neither the pre nor the
// post state of their path, and the paths missing where both states have them.
func neither(pre, post, got string) string {
	byPath := func(m string) map[string]string {
		out := map[string]string{}
		for _, l := range strings.Split(m, "\n") {
			if l != "" {
				out[strings.SplitN(l, "\t", 2)[0]] = l
			}
		}
		return out
	}
	a, b, g := byPath(pre), byPath(post), byPath(got)
	var bad []string
	for p, l := range g {
		if l != a[p] && l != b[p] {
			bad = append(bad, "+ "+l)
		}
	}
	for p := range a {
		if _, ok := g[p]; !ok {
			if _, ok := b[p]; ok {
				bad = append(bad, "- "+p+" (missing)")
			}
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func withExt(files []string, suffix string) []string {
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, suffix) {
			out = append(out, f)
		}
	}
	return out
}

func largest(t *testing.T, files []string) string {
	t.Helper()
	best, size := "", int64(-1)
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > size {
			best, size = f, fi.Size()
		}
	}
	if best == "" {
		t.Fatal("no file to damage")
	}
	return best
}

// flip inverts 64 bytes of f starting at the fraction at of its size.
func flip(t *testing.T, f string, at float64) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	off := int(float64(len(b)) * at)
	for i := off; i < off+64 && i < len(b); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// stagingPrefix names an apply's staging files (cow.StagingPrefix).
const stagingPrefix = ".timeagent-tmp-"

// stagingLeft lists the staging files in a manifest.
func stagingLeft(m string) []string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		p := strings.SplitN(l, "\t", 2)[0]
		if strings.HasPrefix(filepath.Base(p), stagingPrefix) {
			out = append(out, p)
		}
	}
	return out
}

// withoutStaging drops the staging files' lines from a manifest.
func withoutStaging(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if !strings.HasPrefix(filepath.Base(strings.SplitN(l, "\t", 2)[0]), stagingPrefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
