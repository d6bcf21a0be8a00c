//go:build unix

package cow

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestScanRealisticTree(t *testing.T) {
	dir := t.TempDir()
	buildRealisticTree(t, dir)
	blobs := newMemBlobs()
	m, skipped, err := Scan(openRoot(t, dir), blobs, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0] != "sock" {
		t.Errorf("skipped = %v, want [sock]", skipped)
	}
	want := map[string]struct {
		kind   NodeKind
		mode   fs.FileMode
		target string
	}{
		"README.md":                    {fileKind, 0o644, ""},
		"src":                          {dirKind, 0o755, ""},
		"src/pkg/deep/nested/file.txt": {fileKind, 0o644, ""},
		"bin/run.sh":                   {fileKind, 0o755, ""},
		".env":                         {fileKind, 0o600, ""},
		".git":                         {dirKind, 0o755, ""},
		".git/objects/ab/cdef":         {fileKind, 0o444, ""},
		"empty.txt":                    {fileKind, 0o644, ""},
		"emptydir":                     {dirKind, 0o755, ""},
		"shared":                       {dirKind, 0o775 | fs.ModeSetgid, ""},
		"dangling":                     {symlinkKind, 0, "does/not/exist"},
		"srclink":                      {symlinkKind, 0, "src"},
		"src/readme-up":                {symlinkKind, 0, "../README.md"},
		"pipe":                         {fifoKind, 0o640, ""},
		"assets/blob.bin":              {fileKind, 0o644, ""},
	}
	for p, w := range want {
		e, ok := m[p]
		if !ok {
			t.Errorf("%s missing from the manifest", p)
			continue
		}
		if e.Kind != w.kind || e.Mode != w.mode || e.Target != w.target {
			t.Errorf("%s = %s %v %q, want %s %v %q", p, e.Kind, e.Mode, e.Target, w.kind, w.mode, w.target)
		}
	}
	if _, ok := m["srclink/main.go"]; ok {
		t.Error("the scan followed a symlink to a directory")
	}
	if len(m) != 24 {
		t.Errorf("manifest has %d entries, want 24: %v", len(m), sortedKeys(m))
	}
	for p, e := range m {
		if e.Kind != fileKind {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if e.Size != int64(len(data)) || !bytes.Equal(blobs.bytes(e.Blob), data) {
			t.Errorf("%s: stored content differs from the file (%d bytes)", p, len(data))
		}
	}
	if e := m["assets/blob.bin"]; e.Size != 5<<20 {
		t.Errorf("big file size = %d", e.Size)
	}
}

func TestScanReportsHardLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a", "shared", 0o644)
	write(t, dir, "single", "one", 0o644)
	mustDo(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub-b")))
	var links []string
	m, _, err := Scan(openRoot(t, dir), newMemBlobs(), ScanOptions{HardLinks: func(p string) { links = append(links, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0] != "a" || links[1] != "sub-b" {
		t.Errorf("hard links reported: %v", links)
	}
	if m["a"].Blob != m["sub-b"].Blob || m["a"].Kind != fileKind {
		t.Error("hard-linked files are not recorded as two files with the same content")
	}
}

func TestScanExclude(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "keep.txt", "k", 0o644)
	write(t, dir, "state/db", "x", 0o644)
	m, _, err := Scan(openRoot(t, dir), newMemBlobs(), ScanOptions{
		Exclude: func(rel string) bool { return rel == "state" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["state"]; ok || len(m) != 1 {
		t.Errorf("manifest = %v, want only keep.txt", sortedKeys(m))
	}
}

func TestScanStatCache(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		write(t, dir, filepath.Join("d", string(rune('a'+i%5)), "f"+string(rune('0'+i%10))+string(rune('a'+i/10))), "content", 0o644)
	}
	write(t, dir, "change-me", "v1", 0o644)
	settle(t)
	root := openRoot(t, dir)
	blobs := newMemBlobs()
	reads := countReads(t)
	first, _, err := Scan(root, blobs, ScanOptions{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.Load(); got != 51 {
		t.Fatalf("first scan read %d files, want 51", got)
	}
	time.Sleep(50 * time.Millisecond)
	reads.Store(0)
	second, _, err := Scan(root, blobs, ScanOptions{Cache: first})
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.Load(); got != 0 {
		t.Errorf("second scan over an unchanged tree read %d files, want 0", got)
	}
	if d := diffStates(states(first), states(second)); d != "" {
		t.Errorf("second scan differs:\n%s", d)
	}
	// A change of content with the same size is seen (ctime moves).
	write(t, dir, "change-me", "v2", 0o644)
	reads.Store(0)
	third, _, err := Scan(root, blobs, ScanOptions{Cache: second})
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.Load(); got != 1 {
		t.Errorf("third scan read %d files, want 1", got)
	}
	if string(blobs.bytes(third["change-me"].Blob)) != "v2" {
		t.Error("third scan kept the stale content")
	}
	// Just-written files are marked racy: the next scan reads them again.
	if third["change-me"].CtimeNs != racyCtime {
		t.Error("a file changed just before the scan was trusted for the next scan")
	}
}

func TestScanProgress(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/b", "x", 0o644)
	write(t, dir, "c", "y", 0o644)
	var p countingProgress
	if _, _, err := Scan(openRoot(t, dir), newMemBlobs(), ScanOptions{Progress: &p}); err != nil {
		t.Fatal(err)
	}
	if p.started != 1 || p.done != 1 || p.n.Load() != 3 {
		t.Errorf("progress: %d starts, %d added, %d done; want 1, 3, 1", p.started, p.n.Load(), p.done)
	}
}

type countingProgress struct {
	started, done int
	n             atomic.Int64
}

func (p *countingProgress) Start(string, int64) { p.started++ }
func (p *countingProgress) Add(n int64)         { p.n.Add(n) }
func (p *countingProgress) Done()               { p.done++ }

func TestScanRereadsFileChangingDuringRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "busy.log", "first\n", 0o644)
	calls := 0
	readHook = func(p string) {
		calls++
		if calls == 1 { // the writer appends while the scan reads
			f, err := os.OpenFile(filepath.Join(dir, "busy.log"), os.O_WRONLY|os.O_APPEND, 0)
			mustDo(t, err)
			_, err = f.WriteString("second\n")
			mustDo(t, err)
			mustDo(t, f.Close())
		}
	}
	defer func() { readHook = nil }()
	blobs := newMemBlobs()
	m, _, err := Scan(openRoot(t, dir), blobs, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("read %d times, want 2", calls)
	}
	if got := string(blobs.bytes(m["busy.log"].Blob)); got != "first\nsecond\n" || m["busy.log"].Size != int64(len(got)) {
		t.Errorf("content %q size %d", got, m["busy.log"].Size)
	}
}

// TestLargeFileRoundTrip streams a file over 100 MiB through the real
// journal: scan it in, apply it to another tree, compare.
func TestLargeFileRoundTrip(t *testing.T) {
	src := t.TempDir()
	p := filepath.Join(src, "huge.bin")
	f, err := os.Create(p)
	mustDo(t, err)
	mustDo(t, f.Truncate(120<<20))
	for _, off := range []int64{0, 1 << 20, 64<<20 + 7, 120<<20 - 5} {
		_, err := f.WriteAt([]byte("mark"), off)
		mustDo(t, err)
	}
	mustDo(t, f.Close())
	j := openJournal(t, src)
	m, _, err := Scan(openRoot(t, src), j, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m["huge.bin"].Size != 120<<20 {
		t.Fatalf("size %d", m["huge.bin"].Size)
	}
	dst := t.TempDir()
	if _, err := Apply(openRoot(t, dst), j, states(m), nil); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(p)
	mustDo(t, err)
	b, err := os.ReadFile(filepath.Join(dst, "huge.bin"))
	mustDo(t, err)
	if !bytes.Equal(a, b) {
		t.Error("the applied copy differs from the original")
	}
}
