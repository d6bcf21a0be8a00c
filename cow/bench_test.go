package cow

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// makeSmallFiles writes n small files (20 per directory, two levels deep).
func makeSmallFiles(b *testing.B, dir string, n int) {
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/2000), fmt.Sprintf("s%03d", i/20%100), fmt.Sprintf("f%02d.txt", i%20))
		if i%20 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content := fmt.Sprintf("file %d\n%0*d\n", i, 50+i%300, i)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanSmallFiles measures copy-mode scans of a tree of small files
// (COW_BENCH_FILES, default 100000) against `cp -a` of the same tree:
//
//	go test ./cow/ -run '^$' -bench ScanSmallFiles -benchtime 1x
func BenchmarkScanSmallFiles(b *testing.B) {
	n := 100_000
	if s := os.Getenv("COW_BENCH_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	base := b.TempDir()
	src := filepath.Join(base, "src")
	makeSmallFiles(b, src, n)
	time.Sleep(racyWindow + 100*time.Millisecond) // let the files age past the racy window
	for b.Loop() {
		start := time.Now()
		if out, err := exec.Command("cp", "-a", src, filepath.Join(base, "copy")).CombinedOutput(); err != nil {
			b.Fatalf("cp -a: %v: %s", err, out)
		}
		cp := time.Since(start)
		if err := os.RemoveAll(filepath.Join(base, "copy")); err != nil {
			b.Fatal(err)
		}
		root := openRoot(b, src)
		j := openJournal(b, src)
		start = time.Now()
		first, _, err := Scan(root, j, ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		scan1 := time.Since(start)
		start = time.Now()
		if err := j.PutStats(first, nil); err != nil {
			b.Fatal(err)
		}
		putStats := time.Since(start)
		start = time.Now()
		cache, err := j.StatCache()
		if err != nil {
			b.Fatal(err)
		}
		load := time.Since(start)
		reads := 0
		readHook = func(string) { reads++ }
		start = time.Now()
		second, _, err := Scan(root, j, ScanOptions{Cache: cache})
		scan2 := time.Since(start)
		readHook = nil
		if err != nil {
			b.Fatal(err)
		}
		if len(second) != len(first) || reads != 0 {
			b.Fatalf("second scan: %d entries (first %d), %d files re-read", len(second), len(first), reads)
		}
		b.ReportMetric(cp.Seconds(), "cp-a-s")
		b.ReportMetric(scan1.Seconds(), "scan1-s")
		b.ReportMetric(putStats.Seconds(), "putstats-s")
		b.ReportMetric(load.Seconds(), "loadcache-s")
		b.ReportMetric(scan2.Seconds(), "scan2-s")
		b.ReportMetric((load+scan2).Seconds()/cp.Seconds(), "second/cp")
		b.Logf("%d files: cp -a %v; first scan %v; PutStats %v; StatCache load %v; second scan %v (%.2fx cp -a, %.2fx with the cache load)",
			n, cp, scan1, putStats, load, scan2, scan2.Seconds()/cp.Seconds(), (load+scan2).Seconds()/cp.Seconds())
	}
}

// BenchmarkUndo1000 measures the undo of a session that changed 1,000 files
// (drift check and apply included) in a tree of COW_BENCH_FILES files
// (default 100000), reporting wall and CPU time:
//
//	go test ./cow/ -run '^$' -bench Undo1000 -benchtime 1x
func BenchmarkUndo1000(b *testing.B) {
	n := 100_000
	if s := os.Getenv("COW_BENCH_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	for i := range 1000 {
		write(b, dir, fmt.Sprintf("src/pkg%02d/file%03d.go", i/50, i), fmt.Sprintf("package p\n// v1 %d\n", i), 0o644)
	}
	if n > 1000 {
		makeSmallFiles(b, filepath.Join(dir, "other"), n-1000)
	}
	root := openRoot(b, dir)
	j := openJournal(b, dir)
	runSession(b, j, root, func() {
		for i := range 1000 {
			write(b, dir, fmt.Sprintf("src/pkg%02d/file%03d.go", i/50, i), fmt.Sprintf("package p\n// version two %d\n", i), 0o644)
		}
	})
	to := []tasks.ID{0, 1}
	i := 0
	for b.Loop() {
		b.StopTimer()
		// An undo comes later than the session's end; the journal's
		// background work (flushes, compactions) settles meanwhile.
		time.Sleep(max(racyWindow+100*time.Millisecond, 3*time.Second))
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime()
		res, err := Transition(j, root, to[i%2], TransitionOptions{Reason: "undo"})
		if err != nil {
			b.Fatal(err)
		}
		wall, cpu := time.Since(start), cpuTime()-cpu0
		if res.Written != 1000 {
			b.Fatalf("wrote %d paths", res.Written)
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.Logf("transition %d -> %d of 1000 files in a %d-file tree: wall %v, cpu %v", res.From, res.To, n, wall, cpu)
		i++
	}
}
