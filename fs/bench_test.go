//go:build linux

package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// benchTree makes a git repository of files files in 100 directories and
// one 64 MiB file.
func benchTree(b *testing.B, root string, files int) {
	for i := 0; i < files; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d/f%05d.txt", i%100, i))
		writeFile(b, p, []byte(fmt.Sprintf("file %d\nsome searchable content\n", i)), 0o644)
	}
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i)
	}
	writeFile(b, filepath.Join(root, "big.bin"), big, 0o644)
	cmd := exec.Command("bash", "-ec", "cd "+root+"\ngit init -q && git add -A && git -c user.name=t -c user.email=t@e commit -qm init")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
}

// timeWarm runs script twice in dir and returns the second (warm) run's time.
func timeWarm(b *testing.B, dir, script string) time.Duration {
	var d time.Duration
	for i := 0; i < 2; i++ {
		start := time.Now()
		cmd := exec.Command("bash", "-ec", "cd "+dir+"\n"+script)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", script, err, out)
		}
		d = time.Since(start)
	}
	return d
}

// BenchmarkWorkloads compares warm workloads inside the mount with the same
// work on a native directory and reports mount/native ratios.
func BenchmarkWorkloads(b *testing.B) {
	native := b.TempDir()
	benchTree(b, native, 10000)
	o, cleanup := setupOverlay(b, func(root string) { benchTree(b, root, 10000) })
	defer cleanup()
	workloads := []struct{ name, script string }{
		{"git-status", "git status --porcelain >/dev/null"},
		{"find", "find . -type f >/dev/null"},
		{"grep", "grep -r searchable --exclude-dir=.git . >/dev/null"},
		{"read-64MiB", "cat big.bin >/dev/null"},
		{"create-2k", "rm -rf new; mkdir new; for i in $(seq 1 2000); do echo $i > new/f$i; done"},
		{"write-64MiB", "head -c 67108864 /dev/zero > out.bin; rm out.bin"},
	}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				n := timeWarm(b, native, w.script)
				m := timeWarm(b, o.root, w.script)
				b.ReportMetric(float64(m)/float64(n), "ratio")
				b.ReportMetric(float64(m.Microseconds())/1000, "mount-ms")
				b.ReportMetric(float64(n.Microseconds())/1000, "native-ms")
			}
		})
	}
}

// BenchmarkCopyUpStall measures how long reads of unrelated files take
// while a 1 GiB lower file is copied up (its first open for writing):
// "read-max-ms" and "read-p99-ms" against "copyup-ms", the copy-up's own
// time. Run it with -benchtime 1x (make bench does).
func BenchmarkCopyUpStall(b *testing.B) {
	const bigSize = 1 << 30
	for i := 0; i < b.N; i++ {
		o, cleanup := setupOverlay(b, func(root string) {
			for k := 0; k < 2000; k++ {
				writeFile(b, filepath.Join(root, fmt.Sprintf("other/d%02d/f%04d.txt", k%20, k)), []byte("unrelated\n"), 0o644)
			}
			f, err := os.Create(filepath.Join(root, "big.bin"))
			if err != nil {
				b.Fatal(err)
			}
			chunk := make([]byte, 1<<20)
			for off := 0; off < bigSize; off += len(chunk) {
				for j := range chunk {
					chunk[j] = byte(off>>20 + j)
				}
				if _, err := f.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		})
		copied := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			f, err := os.OpenFile(filepath.Join(o.root, "big.bin"), os.O_WRONLY, 0)
			if err == nil {
				err = f.Close()
			}
			if err != nil {
				b.Error(err)
			}
			copied <- time.Since(start)
		}()
		var lat []time.Duration
		var copyup time.Duration
		for k := 0; ; k++ {
			select {
			case copyup = <-copied:
			default:
			}
			if copyup != 0 || k == 2000 {
				break
			}
			t0 := time.Now()
			if _, err := os.ReadFile(filepath.Join(o.root, fmt.Sprintf("other/d%02d/f%04d.txt", k%20, k))); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		if copyup == 0 {
			copyup = <-copied
		}
		cleanup()
		if len(lat) == 0 {
			b.Fatal("no read ran during the copy-up")
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lat[len(lat)-1]), "read-max-ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), "read-p99-ms")
		b.ReportMetric(float64(len(lat)), "reads")
		b.ReportMetric(ms(copyup), "copyup-ms")
	}
}
