package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// hugeUnit is the length of the random unit a huge file repeats: 64 MiB and
// an odd number of bytes, so no two 1 MiB-aligned chunks of a file under
// 64 TiB are equal and the journal's chunk dedup cannot shrink it; the
// generator is a cat of a cached file, never the bottleneck.
const hugeUnit = 64<<20 + 4097

// hugeSteps are the timed steps of the huge-file script, in order.
var hugeSteps = []string{
	"write a new %s file (`dd … conv=fsync`)",
	"change 16 MiB at 4.2 GiB (`dd conv=notrunc`) and append 16 MiB (`>>`, O_APPEND) to the %s file",
	"read both back: `sha256sum` of the two %s files",
}

// hugeScript is a sh script: sh SCRIPT OUT DIR SUMS runs the huge-file steps
// in DIR, appending "index nanoseconds status" lines to OUT and the
// sha256sum output to SUMS.
func (b *bench) hugeScript(unit string, size int64) string {
	var s strings.Builder
	reps := size/hugeUnit + 2
	fmt.Fprintf(&s, "out=$1; sums=$3; cd \"$2\" || exit 1\nUNIT=%q; REPS=%d; SIZE=%d\n", unit, reps, size)
	// Every write starts at a different odd offset into the unit, so its
	// chunks are new to the journal, not copies of huge.bin's.
	cmds := []string{
		`{ tail -c +1000004 "$UNIT"; i=0; while [ $i -lt $REPS ]; do cat "$UNIT"; i=$((i+1)); done; } | head -c $SIZE | dd of=huge-new.bin bs=1M iflag=fullblock conv=fsync status=none`,
		// 4300 MiB is past 4 GiB (4096 MiB).
		`tail -c +4099 "$UNIT" | head -c 16M | dd of=huge.bin bs=1M seek=4300 iflag=fullblock conv=notrunc status=none && tail -c +12345 "$UNIT" | head -c 16M >> huge.bin`,
		`sha256sum huge.bin huge-new.bin > "$sums"`,
	}
	for i, c := range cmds {
		fmt.Fprintf(&s, "s=$(date +%%s%%N); ( %s ); rc=$?; e=$(date +%%s%%N); echo \"%d $((e-s)) $rc\" >> \"$out\"; [ $rc = 0 ] || exit $rc\n", c, i)
	}
	return s.String()
}

// hugeTimes reads the huge script's output file: each step's time.
func hugeTimes(file string) ([]time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("huge file: %w", err)
	}
	d := make([]time.Duration, len(hugeSteps))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var i, rc int
		var ns int64
		if _, err := fmt.Sscanf(line, "%d %d %d", &i, &ns, &rc); err == nil && rc == 0 && i >= 0 && i < len(d) {
			d[i] = time.Duration(ns)
		}
	}
	return d, nil
}

// makeUnit writes hugeUnit bytes from /dev/urandom to file, unless a unit of
// that size is there already.
func makeUnit(file string) error {
	if fi, err := os.Stat(file); err == nil && fi.Size() == hugeUnit {
		return nil
	}
	_, err := sh(fmt.Sprintf("head -c %d /dev/urandom > %q", hugeUnit, file)).output()
	return err
}

// makeHuge writes a file of size bytes repeating the unit.
func makeHuge(file, unit string, size int64) error {
	u, err := os.ReadFile(unit)
	if err != nil {
		return fmt.Errorf("huge file: %w", err)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("huge file: %w", err)
	}
	for left := size; left > 0; left -= int64(len(u)) {
		if _, err = f.Write(u[:min(left, int64(len(u)))]); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("huge file %s: %w", file, err)
	}
	return nil
}

// sha256File is the hex sha256 of a file's content.
func sha256File(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("sha256: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return "", fmt.Errorf("sha256 %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readSums parses sha256sum output into name -> hash.
func readSums(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("huge file: %w", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			m[f[1]] = f[0]
		}
	}
	return m, nil
}

// gib formats bytes as GiB.
func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// hugeFile measures a file over 4 GiB in a fuse session on the tree of n
// files: an existing huge.bin changed past 4 GiB and appended to, and a new
// huge-new.bin written with dd, both read back inside the mount; then undo
// and redo. The same script runs on a native directory for the ratios. A
// wrong byte is recorded as a missed target and returned as an error after
// the report is written (b.failed).
func (b *bench) hugeFile(n int) error {
	tree := b.trees[n]
	size := b.cfg.hugeBytes
	what := "> 4 GiB file: correct after session, undo, redo"
	logf("file over 4 GiB (%s) in a fuse session, %s", gib(size), label(n))
	t := &table{
		title: fmt.Sprintf("A %s file in a fuse session, %s tree", gib(size), label(n)),
		head:  []string{"step", "native s", "timeagent s", "timeagent / native", "CPU s", "peak RSS MiB of timeagent (anonymous)"},
	}
	b.tables = append(b.tables, t)
	// Peak: the lower file and the new one, their copies in the upper tree
	// and in the journal, and the apply's temporary files: 7 sizes.
	need := 7*size + 2<<30
	if free, err := freeBytes(b.cfg.work); err != nil || free < need {
		reason := fmt.Sprintf("skipped: %s free in %s, the step needs %s", gib(free), b.cfg.work, gib(need))
		if err != nil {
			reason = "skipped: " + err.Error()
		}
		logf("  %s", reason)
		t.notes = append(t.notes, reason)
		b.targets = append(b.targets, target{what: what, measured: reason})
		return nil
	}
	unit := filepath.Join(b.cfg.work, "huge-unit.bin")
	if err := makeUnit(unit); err != nil {
		return err
	}
	script := filepath.Join(b.cfg.work, "huge.sh")
	if err := os.WriteFile(script, []byte(b.hugeScript(unit, size)), 0o644); err != nil {
		return fmt.Errorf("huge file: %w", err)
	}
	home := filepath.Join(b.cfg.work, "home-huge")
	native := filepath.Join(b.cfg.work, "huge-native")
	big, fresh := filepath.Join(tree, "huge.bin"), filepath.Join(tree, "huge-new.bin")
	cleanup := func() {
		for _, p := range []string{home, native, big, fresh} {
			os.RemoveAll(p)
		}
	}
	cleanup()
	defer cleanup()

	// Native: the same script on a plain directory.
	if err := os.MkdirAll(native, 0o755); err != nil {
		return fmt.Errorf("huge file: %w", err)
	}
	if err := makeHuge(filepath.Join(native, "huge.bin"), unit, size); err != nil {
		return err
	}
	natOut, natSums := filepath.Join(b.cfg.work, "huge-native.out"), filepath.Join(b.cfg.work, "huge-native.sums")
	os.Remove(natOut)
	natRun, err := measure(1, nil, cmdSpec{argv: []string{"sh", script, natOut, native, natSums}})
	if err != nil {
		return err
	}
	natTimes, err := hugeTimes(natOut)
	if err != nil {
		return err
	}
	want, err := readSums(natSums)
	if err != nil {
		return err
	}
	os.RemoveAll(native)

	// timeagent: the huge file exists before the session.
	if err := makeHuge(big, unit, size); err != nil {
		return err
	}
	orig, err := sha256File(big)
	if err != nil {
		return err
	}
	taOut, taSums := filepath.Join(b.cfg.work, "huge-timeagent.out"), filepath.Join(b.cfg.work, "huge-timeagent.sums")
	os.Remove(taOut)
	os.Remove(taSums)
	var problems []string
	check := func(when, file, want string) {
		got, err := sha256File(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", when, err))
		} else if got != want {
			problems = append(problems, fmt.Sprintf("%s: sha256 of %s is %.16s…, want %.16s…", when, filepath.Base(file), got, want))
		}
	}
	absent := func(when, file string) {
		if _, err := os.Lstat(file); !os.IsNotExist(err) {
			problems = append(problems, fmt.Sprintf("%s: %s still there (%v)", when, filepath.Base(file), err))
		}
	}
	session, err := measure(1, nil, b.ta(home, tree, "run", "--mode", "fuse", "--", "sh", script, taOut, tree, taSums))
	if err != nil {
		problems = append(problems, "session: "+err.Error())
	}
	taTimes, _ := hugeTimes(taOut)
	var journal int64
	var undo, redo *timing
	if err == nil {
		if got, err := readSums(taSums); err != nil || got["huge.bin"] != want["huge.bin"] || got["huge-new.bin"] != want["huge-new.bin"] {
			problems = append(problems, fmt.Sprintf("inside the mount: sha256sum %v, native %v (%v)", got, want, err))
		}
		check("after the session", big, want["huge.bin"])
		check("after the session", fresh, want["huge-new.bin"])
		journal = diskUsage(home)
		if undo, err = measure(1, nil, b.ta(home, tree, "undo", "--yes")); err != nil {
			problems = append(problems, "undo: "+err.Error())
		} else {
			check("after undo", big, orig)
			absent("after undo", fresh)
			if redo, err = measure(1, nil, b.ta(home, tree, "redo", "--yes")); err != nil {
				problems = append(problems, "redo: "+err.Error())
			} else {
				check("after redo", big, want["huge.bin"])
				check("after redo", fresh, want["huge-new.bin"])
			}
		}
	}

	name := gib(size)
	for i, st := range hugeSteps {
		nat, ta := natTimes[i], time.Duration(0)
		if taTimes != nil {
			ta = taTimes[i]
		}
		t.row(fmt.Sprintf(st, name), secs(nat), secs(ta), ratio(ta, nat), "", "")
	}
	rss := func(t *timing) string {
		if t == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f (%.0f)", t.peakRSS(), t.peakAnon())
	}
	if session != nil && len(session.samples) > 0 {
		t.row("whole session: `run --mode fuse` (mount, the steps above, apply to the real tree, unmount)", secs(natRun.median()), secs(session.median()), ratio(session.median(), natRun.median()), secs(session.medianCPU()), rss(session))
	}
	if undo != nil {
		t.row("`timeagent undo --yes` (restore huge.bin, remove huge-new.bin)", "", secs(undo.median()), "", secs(undo.medianCPU()), rss(undo))
	}
	if redo != nil {
		t.row("`timeagent redo --yes` (both files again)", "", secs(redo.median()), "", secs(redo.medianCPU()), rss(redo))
	}
	ok := len(problems) == 0
	t.notes = append(t.notes, fmt.Sprintf("huge.bin (%s, incompressible, no two 1 MiB chunks alike) exists before the session; the agent (`sh`) runs the three steps in the mount, then the same script runs on a native directory. Peak RSS is /usr/bin/time's maximum resident set, which counts the pages of the journal's memory-mapped value log; anonymous is RssAnon sampled every 100 ms. Journal on disk after the session: %s (the before state of huge.bin and the content of huge-new.bin; the changed 32 MiB of huge.bin are new chunks, the rest is deduplicated).", name, gib(journal)))
	if ok {
		t.notes = append(t.notes, fmt.Sprintf("sha256 inside the mount equals native, and the real files after the session, after undo (original %.16s…) and after redo are byte for byte right: **true**. One run.", orig))
	} else {
		t.notes = append(t.notes, "**Wrong:** "+strings.Join(problems, "; "))
	}
	peak, anon := 0.0, 0.0
	for _, x := range []*timing{session, undo, redo} {
		if x != nil {
			peak, anon = max(peak, x.peakRSS()), max(anon, x.peakAnon())
		}
	}
	b.targets = append(b.targets, target{
		what:     what,
		measured: fmt.Sprintf("sha256 right after session, undo, redo: %v; session %s s (%s native), journal %s, peak RSS %.0f MiB (anonymous %.0f MiB)", ok, secs(session.median()), ratio(session.median(), natRun.median()), gib(journal), peak, anon),
		met:      boolp(ok),
	})
	if !ok {
		b.failed = append(b.failed, fmt.Errorf("huge file: %s", strings.Join(problems, "; ")))
	}
	return nil
}
