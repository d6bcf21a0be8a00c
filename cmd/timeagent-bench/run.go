package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// genVersion changes whenever genTree would produce a different tree, so
// cached trees from an older generator are rebuilt.
const genVersion = "1"

// config is one benchmark run's shape.
type config struct {
	quick     bool
	work      string // trees, journals and scratch (outside the repository)
	bin       string // the timeagent binary
	self      string // this program, for the child commands
	out       string // markdown results file
	sizes     []int  // tree sizes (files)
	reps      int    // repetitions of cheap steps
	coldReps  int    // repetitions of cold (full-copy) steps on the largest tree
	undoN     int    // files changed before the undo
	bigMiB    int    // size of the large file
	readMiB   int    // size of the file read and written in the fuse workloads
	create    int    // small files created in the fuse workloads
	hugeBytes int64  // size of the file over 4 GiB in a fuse session
	only      string // run only this section (development): "huge" or "fuse"
}

// bench holds the state shared between sections.
type bench struct {
	cfg     config
	trees   map[int]string // size -> tree dir
	lists   map[int]string // size -> list of generated paths
	homes   map[int]string // size -> TIMEAGENT_HOME after the checkpoint section
	shadows map[int]string // size -> git shadow repository
	cpTime  map[int]time.Duration
	cold    map[int]time.Duration
	tables  []*table
	targets []target
	failed  []error // wrong results, returned after the report is written
}

func runMain(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	quick := fs.Bool("quick", os.Getenv("BENCH_QUICK") == "1", "smaller run (also BENCH_QUICK=1)")
	work := fs.String("work", envOr("BENCH_WORK", "/var/tmp/timeagent-bench"), "work directory (also BENCH_WORK)")
	bin := fs.String("bin", "bin/timeagent", "timeagent binary")
	out := fs.String("out", "bench/RESULTS.md", "markdown results file")
	reps := fs.Int("reps", 3, "repetitions of each step (median taken)")
	only := fs.String("only", "", `run only one section: "huge" (the file over 4 GiB), "hooks" (agent hooks without a session), "growth" (the journal's size after 11 sessions, and gc) or "fuse" (session start and workloads; ratios to copy mode are then missing); results are written only with an explicit -out`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *only != "" && *only != "huge" && *only != "fuse" && *only != "hooks" && *only != "growth" {
		return fmt.Errorf("run: -only %q: want huge, fuse, hooks or growth", *only)
	}
	outSet := false
	fs.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *only != "" && !outSet {
		*out = ""
	}
	// The huge file is over 4 GiB even in a quick run: that is its point.
	cfg := config{quick: *quick, work: *work, out: *out, reps: max(1, *reps), coldReps: 1,
		sizes: []int{10000, 100000}, undoN: 1000, bigMiB: 150, readMiB: 1024, create: 20000,
		hugeBytes: 4608 << 20, only: *only}
	if cfg.quick {
		cfg.sizes, cfg.bigMiB, cfg.readMiB, cfg.create = []int{2000, 10000}, 110, 256, 5000
	}
	if cfg.only != "" && cfg.only != "hooks" {
		cfg.sizes = cfg.sizes[:1]
	}
	var err error
	if cfg.bin, err = filepath.Abs(*bin); err != nil {
		return err
	}
	if cfg.self, err = os.Executable(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	b := &bench{cfg: cfg, trees: map[int]string{}, lists: map[int]string{}, homes: map[int]string{},
		shadows: map[int]string{}, cpTime: map[int]time.Duration{}, cold: map[int]time.Duration{}}
	start := time.Now()
	load, _ := os.ReadFile("/proc/loadavg")
	for _, n := range cfg.sizes {
		if err := b.prepareTree(n); err != nil {
			return err
		}
	}
	if err := b.sections(); err != nil {
		return err
	}
	md := b.report(strings.TrimSpace(string(load)), time.Since(start))
	fmt.Print(md)
	if cfg.out != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		logf("wrote %s (%v)", cfg.out, time.Since(start).Round(time.Second))
	}
	return errors.Join(b.failed...)
}

// sections runs the benchmark's sections in order (only the one asked for
// with -only).
func (b *bench) sections() error {
	cfg := b.cfg
	if cfg.only == "huge" {
		return b.hugeFile(cfg.sizes[0])
	}
	if cfg.only == "hooks" {
		for _, n := range cfg.sizes {
			if err := b.hookCapture(n); err != nil {
				return err
			}
		}
		return nil
	}
	if cfg.only == "fuse" {
		largest := cfg.sizes[len(cfg.sizes)-1]
		if err := b.prepareTree(largest); err != nil {
			return err
		}
		return b.fuse(largest)
	}
	if cfg.only == "growth" {
		return b.growth(cfg.sizes[0])
	}
	for _, n := range cfg.sizes {
		if err := b.checkpoints(n); err != nil {
			return err
		}
		if err := b.growth(n); err != nil {
			return err
		}
		if err := b.hookCapture(n); err != nil {
			return err
		}
	}
	largest := cfg.sizes[len(cfg.sizes)-1]
	if err := b.undo(largest); err != nil {
		return err
	}
	if err := b.bigFile(cfg.sizes[0]); err != nil {
		return err
	}
	if err := b.hugeFile(cfg.sizes[0]); err != nil {
		return err
	}
	return b.fuse(largest)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// label names a tree size: "10k files".
func label(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%dk files", n/1000)
	}
	return fmt.Sprintf("%d files", n)
}

// prepareTree generates the tree of n files, or reuses the one a previous run
// left if it is intact (same generator, git status clean).
func (b *bench) prepareTree(n int) error {
	dir := filepath.Join(b.cfg.work, fmt.Sprintf("tree-%d", n))
	list, marker := dir+".files", dir+".gen"
	b.trees[n], b.lists[n] = dir, list
	// Leftovers of an interrupted run.
	for _, p := range []string{"big.bin", "huge.bin", "huge-new.bin", "big-read.bin", "big-write.bin", "bench-create-1", "bench-create-2"} {
		os.RemoveAll(filepath.Join(dir, p))
	}
	if m, err := os.ReadFile(marker); err == nil && string(m) == genVersion {
		if st, err := (cmdSpec{argv: []string{"git", "-C", dir, "status", "--porcelain"}}).output(); err == nil && st == "" {
			logf("reusing %s", dir)
			return nil
		}
	}
	logf("generating %s (%s)…", dir, label(n))
	os.RemoveAll(dir)
	os.Remove(marker)
	start := time.Now()
	if err := genTree(dir, n, uint64(n), list); err != nil {
		return err
	}
	logf("  generated in %v", time.Since(start).Round(time.Millisecond))
	return os.WriteFile(marker, []byte(genVersion), 0o644)
}

// treeInfo describes a tree: entries (files+dirs+.git) and size.
func treeInfo(dir string) string {
	var files, dirs int
	var bytes int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			dirs++
		} else if info, err := d.Info(); err == nil {
			files++
			bytes += info.Size()
		}
		return nil
	})
	return fmt.Sprintf("%d files in %d directories, %.2f GiB, .git included", files, dirs, float64(bytes)/(1<<30))
}

// ta runs timeagent in tree with home as TIMEAGENT_HOME.
func (b *bench) ta(home, tree string, args ...string) cmdSpec {
	return cmdSpec{argv: append([]string{b.cfg.bin, "-C", tree}, args...), env: []string{"TIMEAGENT_HOME=" + home}}
}

// git runs git on the shadow repository with tree as work tree.
func gitShadow(shadow, tree, script string) cmdSpec {
	g := fmt.Sprintf("git --git-dir=%q --work-tree=%q", shadow, tree)
	return sh(strings.ReplaceAll(script, "GIT", g))
}

// checkpoints measures copy-mode sessions against cp -a and a git shadow
// repository on the tree of n files.
func (b *bench) checkpoints(n int) error {
	tree := b.trees[n]
	logf("checkpoints, %s", label(n))
	largest := n == b.cfg.sizes[len(b.cfg.sizes)-1]
	coldReps := b.cfg.reps
	if largest {
		coldReps = b.cfg.coldReps
	}
	dst := filepath.Join(b.cfg.work, "cp-dst")
	shadow := filepath.Join(b.cfg.work, fmt.Sprintf("shadow-%d.git", n))
	home := filepath.Join(b.cfg.work, fmt.Sprintf("home-%d", n))
	snap := gitShadow(shadow, tree, "GIT add -A && GIT commit -q --allow-empty -m snap")
	session := b.ta(home, tree, "run", "--mode", "copy", "--", "true")
	initShadow := func() error {
		os.RemoveAll(shadow)
		_, err := sh(fmt.Sprintf("git init -q --bare %q && git --git-dir=%q config user.email b@example.com && git --git-dir=%q config user.name bench", shadow, shadow, shadow)).output()
		return err
	}
	// First (cold) steps: the git shadow's first snapshot and timeagent's
	// first session, alternating when repeated.
	var gitFirst, cold, cp, gitSecond, warm timing
	for r := 0; r < coldReps; r++ {
		if err := gitFirst.once(initShadow, snap); err != nil {
			return err
		}
		if err := cold.once(func() error { return os.RemoveAll(home) }, session); err != nil {
			return err
		}
	}
	// Repeated steps interleaved, so that load from other processes on the
	// machine falls on all of them alike.
	for r := 0; r < b.cfg.reps; r++ {
		if err := cp.once(func() error { return os.RemoveAll(dst) }, cmdSpec{argv: []string{"cp", "-a", tree, dst}}); err != nil {
			return err
		}
		if err := gitSecond.once(nil, snap); err != nil {
			return err
		}
		if err := warm.once(nil, session); err != nil {
			return err
		}
	}
	os.RemoveAll(dst)
	b.shadows[n] = shadow
	b.homes[n] = home
	b.cpTime[n], b.cold[n] = cp.median(), cold.median()

	t := &table{
		title: fmt.Sprintf("Copy-mode checkpoint, %s (%s)", label(n), treeInfo(tree)),
		head:  []string{"step", "median s", "vs `cp -a`", "vs git snapshot (same pass)", "CPU s", "peak RSS MiB"},
	}
	t.row("`cp -a` of the tree to a fresh dir", secs(cp.median()), "1.00x", "", secs(cp.medianCPU()), "")
	t.row("git shadow snapshot, first (`add -A && commit`)", secs(gitFirst.median()), ratio(gitFirst.median(), cp.median()), "1.00x", secs(gitFirst.medianCPU()), "")
	t.row("git shadow snapshot, second (unchanged tree)", secs(gitSecond.median()), ratio(gitSecond.median(), cp.median()), "1.00x", secs(gitSecond.medianCPU()), "")
	t.row("timeagent copy session, first (cold, empty journal)", secs(cold.median()), ratio(cold.median(), cp.median()), ratio(cold.median(), gitFirst.median()), secs(cold.medianCPU()), fmt.Sprintf("%.0f", cold.peakRSS()))
	t.row("timeagent copy session, second (warm, unchanged tree)", secs(warm.median()), ratio(warm.median(), cp.median()), ratio(warm.median(), gitSecond.median()), secs(warm.medianCPU()), fmt.Sprintf("%.0f", warm.peakRSS()))
	t.notes = append(t.notes, fmt.Sprintf("Wall-clock medians of %d interleaved runs (%d for the first/cold steps); CPU s is user+system time. A session is `timeagent run --mode copy -- true` (scan before and after the child). The git shadow snapshot does not include the tree's own `.git/` (git refuses to add it); timeagent's does.", b.cfg.reps, coldReps))
	b.tables = append(b.tables, t)
	if largest {
		r := float64(warm.median()) / float64(cp.median())
		b.targets = append(b.targets, target{
			what:     fmt.Sprintf("second copy session over an unchanged %s tree ≤ 0.5x `cp -a`", label(n)),
			measured: fmt.Sprintf("%.2fx (%s s vs %s s; CPU %s s vs %s s)", r, secs(warm.median()), secs(cp.median()), secs(warm.medianCPU()), secs(cp.medianCPU())),
			met:      boolp(r <= 0.5),
		})
	}
	return nil
}

// undo measures undoing a session that changed undoN files of the tree of n
// files, against restoring them with cp -a and with git checkout.
func (b *bench) undo(n int) error {
	tree, home, shadow, list := b.trees[n], b.homes[n], b.shadows[n], b.lists[n]
	logf("undo of %d files, %s", b.cfg.undoN, label(n))
	mod := filepath.Join(b.cfg.work, "modified.list")
	stash := filepath.Join(b.cfg.work, "stash")
	modify := func(seed int) cmdSpec {
		return cmdSpec{argv: []string{b.cfg.self, "modify", "-list", list, "-root", tree, "-n", fmt.Sprint(b.cfg.undoN), "-seed", fmt.Sprint(seed), "-out", mod}}
	}
	clean := func() error {
		st, err := (cmdSpec{argv: []string{"git", "-C", tree, "status", "--porcelain"}}).output()
		if err == nil && st != "" {
			err = fmt.Errorf("undo: tree not restored: %.500s", st)
		}
		return err
	}
	var session, undo, cp, checkout timing
	for r := 0; r < b.cfg.reps; r++ {
		seed := 7919 * (r + 1)
		m := modify(seed)
		s, err := measure(1, nil, b.ta(home, tree, append([]string{"run", "--mode", "copy", "--"}, m.argv...)...))
		if err != nil {
			return err
		}
		session.add(s.samples[0])
		u, err := measure(1, nil, b.ta(home, tree, "undo", "--yes"))
		if err != nil {
			return err
		}
		undo.add(u.samples[0])
		if err := clean(); err != nil {
			return err
		}
		// cp -a of the same originals back over the modified files.
		os.RemoveAll(stash)
		os.MkdirAll(stash, 0o755)
		if _, err := (cmdSpec{argv: []string{"sh", "-c", fmt.Sprintf("xargs -a %q cp -a --parents -t %q", mod, stash)}, dir: tree}).output(); err != nil {
			return err
		}
		if _, err := m.output(); err != nil {
			return err
		}
		c, err := measure(1, nil, cmdSpec{argv: []string{"cp", "-a", stash + "/.", tree + "/"}})
		if err != nil {
			return err
		}
		cp.add(c.samples[0])
		if err := clean(); err != nil {
			return err
		}
		if _, err := m.output(); err != nil {
			return err
		}
		g, err := measure(1, nil, gitShadow(shadow, tree, fmt.Sprintf("GIT checkout --pathspec-from-file=%q -- ", mod)))
		if err != nil {
			return err
		}
		checkout.add(g.samples[0])
		if err := clean(); err != nil {
			return err
		}
	}
	os.RemoveAll(stash)
	t := &table{
		title: fmt.Sprintf("Undo of %d changed files, %s", b.cfg.undoN, label(n)),
		head:  []string{"step", "median s", "vs `cp -a` of the files", "vs `git checkout` of the files", "CPU s", "peak RSS MiB"},
	}
	t.row(fmt.Sprintf("timeagent copy session changing %d files", b.cfg.undoN), secs(session.median()), "", "", secs(session.medianCPU()), fmt.Sprintf("%.0f", session.peakRSS()))
	t.row("`timeagent undo --yes`", secs(undo.median()), ratio(undo.median(), cp.median()), ratio(undo.median(), checkout.median()), secs(undo.medianCPU()), fmt.Sprintf("%.0f", undo.peakRSS()))
	t.row("`cp -a` of the original files back", secs(cp.median()), "1.00x", ratio(cp.median(), checkout.median()), secs(cp.medianCPU()), "")
	t.row("`git checkout` of them from the shadow repo", secs(checkout.median()), ratio(checkout.median(), cp.median()), "1.00x", secs(checkout.medianCPU()), "")
	t.notes = append(t.notes, fmt.Sprintf("Medians of %d rounds; each round modifies a different set of files and checks with `git status` that the tree is restored.", b.cfg.reps))
	b.tables = append(b.tables, t)
	b.targets = append(b.targets, target{
		what:     fmt.Sprintf("undo of %d changed files < 1 s (%s tree)", b.cfg.undoN, label(n)),
		measured: fmt.Sprintf("%s s wall (%s s CPU)", secs(undo.median()), secs(undo.medianCPU())),
		met:      boolp(undo.median() < time.Second),
	})
	return nil
}

// bigFile measures sessions and an undo with a file over 100 MiB in the tree
// of n files, and checks its bytes come back.
func (b *bench) bigFile(n int) error {
	tree, home := b.trees[n], b.homes[n]
	big := filepath.Join(tree, "big.bin")
	logf("large file (%d MiB), %s", b.cfg.bigMiB, label(n))
	defer os.Remove(big)
	if _, err := sh(fmt.Sprintf("head -c %d /dev/urandom > %q", b.cfg.bigMiB<<20, big)).output(); err != nil {
		return err
	}
	sum := func() (string, error) {
		out, err := (cmdSpec{argv: []string{"sha256sum", big}}).output()
		return strings.Fields(out + " ")[0], err
	}
	before, err := sum()
	if err != nil {
		return err
	}
	add, err := measure(1, nil, b.ta(home, tree, "run", "--mode", "copy", "--", "true"))
	if err != nil {
		return err
	}
	// Overwrite 1 MiB in the middle and append 1 MiB.
	change := fmt.Sprintf("dd if=/dev/urandom of=%q bs=1M count=1 seek=%d conv=notrunc status=none && head -c 1048576 /dev/urandom >> %q", big, b.cfg.bigMiB/2, big)
	modify, err := measure(1, nil, b.ta(home, tree, "run", "--mode", "copy", "--", "sh", "-c", change))
	if err != nil {
		return err
	}
	undo, err := measure(1, nil, b.ta(home, tree, "undo", "--yes"))
	if err != nil {
		return err
	}
	after, err := sum()
	if err != nil {
		return err
	}
	cp, err := measure(1, func() error { return os.RemoveAll(big + ".copy") }, cmdSpec{argv: []string{"cp", "-a", big, big + ".copy"}})
	os.Remove(big + ".copy")
	if err != nil {
		return err
	}
	t := &table{
		title: fmt.Sprintf("A %d MiB file in the %s tree", b.cfg.bigMiB, label(n)),
		head:  []string{"step", "s", "vs `cp -a` of the file", "CPU s", "peak RSS MiB of timeagent"},
	}
	t.row("`cp -a` of the file", secs(cp.median()), "1.00x", secs(cp.medianCPU()), "")
	t.row("copy session that finds it new (stores it)", secs(add.median()), ratio(add.median(), cp.median()), secs(add.medianCPU()), fmt.Sprintf("%.0f", add.peakRSS()))
	t.row("copy session that changes 1 MiB in the middle and appends 1 MiB", secs(modify.median()), ratio(modify.median(), cp.median()), secs(modify.medianCPU()), fmt.Sprintf("%.0f", modify.peakRSS()))
	t.row("`timeagent undo --yes`", secs(undo.median()), ratio(undo.median(), cp.median()), secs(undo.medianCPU()), fmt.Sprintf("%.0f", undo.peakRSS()))
	ok := before == after
	t.notes = append(t.notes, fmt.Sprintf("sha256 after undo equals the original: **%v** (%s…). Random (incompressible) content; one run each.", ok, before[:16]))
	b.tables = append(b.tables, t)
	b.targets = append(b.targets, target{
		what:     fmt.Sprintf("a %d MiB file restored byte for byte by undo", b.cfg.bigMiB),
		measured: fmt.Sprintf("sha256 equal: %v; peak RSS %.0f MiB", ok, max(add.peakRSS(), modify.peakRSS(), undo.peakRSS())),
		met:      boolp(ok),
	})
	if !ok {
		return fmt.Errorf("large file: sha256 after undo %s, want %s", after, before)
	}
	return nil
}

// report renders every table and the targets as markdown.
func (b *bench) report(load string, took time.Duration) string {
	var s strings.Builder
	mode := "full"
	if b.cfg.quick {
		mode = "quick (BENCH_QUICK=1)"
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	version, _ := (cmdSpec{argv: []string{b.cfg.bin, "version"}}).output()
	rev, _ := (cmdSpec{argv: []string{"git", "describe", "--always", "--dirty"}}).output()
	fmt.Fprintf(&s, "## Benchmark results\n\n")
	fmt.Fprintf(&s, "Generated by `make bench` (%s) on %s: %d CPUs, Linux %s, %s, load average at start %s; took %v. ",
		mode, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), strings.TrimSpace(string(kernel)), runtime.Version(), load, took.Round(time.Second))
	fmt.Fprintf(&s, "Binary: %s (source %s). ", strings.TrimSpace(version), strings.TrimSpace(rev))
	fmt.Fprintf(&s, "All ratios come from the same run; times are wall-clock medians with the page cache warm (nothing dropped).\n\n")
	s.WriteString("### Targets\n\n| target | measured | verdict |\n| --- | --- | --- |\n")
	for _, t := range b.targets {
		fmt.Fprintf(&s, "| %s | %s | %s |\n", t.what, t.measured, verdict(t.met))
	}
	s.WriteString("\n")
	for _, t := range b.tables {
		s.WriteString(t.markdown())
	}
	return s.String()
}
