package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
)

// scanOnce runs cow.Scan over root with cache, writing a CPU profile to
// profile when it is not empty.
func scanOnce(root *os.Root, j *journal.Journal, cache cow.Manifest, profile string) (cow.Manifest, time.Duration, error) {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return nil, 0, fmt.Errorf("scanprof: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, 0, fmt.Errorf("scanprof: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	m, _, err := cow.Scan(root, j, cow.ScanOptions{Cache: cache})
	return m, time.Since(start), err
}

// scanprofMain scans a tree into a fresh journal twice (cold, then warm with
// the first scan as the stat cache), as copy mode does, and reports the time
// of each and of saving the stat cache; with -cpuprofile it writes
// FILE.cold and FILE.warm for go tool pprof.
func scanprofMain(args []string) error {
	fs := flag.NewFlagSet("scanprof", flag.ContinueOnError)
	dir := fs.String("dir", "", "tree to scan")
	prof := fs.String("cpuprofile", "", "write CPU profiles to FILE.cold and FILE.warm")
	memprof := fs.String("memprofile", "", "write a heap profile (after the cold scan) to FILE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("scanprof: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return fmt.Errorf("scanprof: %w", err)
	}
	defer root.Close()
	jdir, err := os.MkdirTemp("", "scanprof-journal-")
	if err != nil {
		return fmt.Errorf("scanprof: %w", err)
	}
	defer os.RemoveAll(jdir)
	j, err := journal.Open(jdir, abs)
	if err != nil {
		return err
	}
	defer j.Close()
	name := func(s string) string {
		if *prof == "" {
			return ""
		}
		return *prof + "." + s
	}
	m, cold, err := scanOnce(root, j, nil, name("cold"))
	if err != nil {
		return err
	}
	fmt.Printf("after the cold scan: %s\n", memStatus())
	if *memprof != "" {
		f, err := os.Create(*memprof)
		if err != nil {
			return fmt.Errorf("scanprof: %w", err)
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
		if err != nil {
			return fmt.Errorf("scanprof: %w", err)
		}
	}
	start := time.Now()
	if err := j.PutStats(m, nil); err != nil {
		return err
	}
	put := time.Since(start)
	start = time.Now()
	cache, err := j.StatCache()
	if err != nil {
		return err
	}
	load := time.Since(start)
	_, warm, err := scanOnce(root, j, cache, name("warm"))
	if err != nil {
		return err
	}
	fmt.Printf("after the warm scan: %s\n", memStatus())
	fmt.Printf("entries %d: cold scan %v, put stats %v, load stats %v, warm scan %v\n",
		len(m), cold.Round(time.Millisecond), put.Round(time.Millisecond), load.Round(time.Millisecond), warm.Round(time.Millisecond))
	return nil
}

// memStatus reports the Go heap and the process's resident set split into
// anonymous and file-backed (mmapped journal files) pages.
func memStatus() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, _ := os.ReadFile("/proc/self/status")
	var fields []string
	for _, line := range strings.Split(string(st), "\n") {
		for _, k := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
			if strings.HasPrefix(line, k+":") {
				fields = append(fields, k+" "+strings.TrimSpace(strings.TrimPrefix(line, k+":")))
			}
		}
	}
	return fmt.Sprintf("heap in use %d MiB, Go sys %d MiB; %s", ms.HeapInuse>>20, ms.Sys>>20, strings.Join(fields, ", "))
}
