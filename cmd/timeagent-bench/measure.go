package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// sample is one timed run of a command.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system time of the command and its waited-for children
	maxRSS int64         // KiB: the largest resident set of the command or one of its children
	// maxAnon is the largest anonymous resident set (KiB) of the command
	// itself, sampled every 100 ms: maxRSS also counts file pages the
	// command maps, such as the journal's memory-mapped value log.
	maxAnon int64
}

// cmdSpec is a command to run: argv, working directory and extra env.
type cmdSpec struct {
	argv []string
	dir  string
	env  []string
}

// sh makes a cmdSpec running script with sh -c.
func sh(script string) cmdSpec { return cmdSpec{argv: []string{"sh", "-c", script}} }

// run runs c to completion under /usr/bin/time (for its CPU time and peak
// RSS, which this process's rusage would inflate with its own), timing it.
// Output is kept for the error only.
func (c cmdSpec) run() (sample, error) {
	tf, err := os.CreateTemp("", "bench-time-")
	if err != nil {
		return sample{}, fmt.Errorf("run: %w", err)
	}
	tf.Close()
	defer os.Remove(tf.Name())
	argv := append([]string{"/usr/bin/time", "-o", tf.Name(), "-f", "%U %S %M"}, c.argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	if err = cmd.Start(); err != nil {
		return sample{}, fmt.Errorf("run %s: %w", c.argv[0], err)
	}
	done := make(chan struct{})
	anon := make(chan int64)
	go func() { anon <- sampleAnon(cmd.Process.Pid, done) }()
	err = cmd.Wait()
	close(done)
	s := sample{wall: time.Since(start), maxAnon: <-anon}
	if b, rerr := os.ReadFile(tf.Name()); rerr == nil {
		// The last line holds the figures ("Command exited with non-zero status" may precede it).
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var u, sy float64
		if _, serr := fmt.Sscanf(lines[len(lines)-1], "%f %f %d", &u, &sy, &s.maxRSS); serr == nil {
			s.cpu = time.Duration((u + sy) * float64(time.Second))
		}
	}
	if err != nil {
		tail := strings.TrimSpace(out.String())
		if len(tail) > 2000 {
			tail = "…" + tail[len(tail)-2000:]
		}
		return s, fmt.Errorf("%s: %w: %s", strings.Join(c.argv, " "), err, tail)
	}
	return s, nil
}

// sampleAnon polls the anonymous resident set of the children of pid (the
// command /usr/bin/time runs) until done, and returns the largest in KiB.
func sampleAnon(pid int, done <-chan struct{}) int64 {
	var peak int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, k := range strings.Fields(string(kids)) {
			st, _ := os.ReadFile("/proc/" + k + "/status")
			for _, line := range strings.Split(string(st), "\n") {
				var kb int64
				if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &kb); err == nil {
					peak = max(peak, kb)
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// output runs c and returns its combined output.
func (c cmdSpec) output() (string, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(c.argv, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// timing is the samples of one measured step.
type timing struct {
	samples []sample
}

func (t *timing) add(s sample) { t.samples = append(t.samples, s) }

// median is the median wall time (0 when there are no samples).
func (t *timing) median() time.Duration {
	if t == nil || len(t.samples) == 0 {
		return 0
	}
	d := make([]time.Duration, len(t.samples))
	for i, s := range t.samples {
		d[i] = s.wall
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// medianCPU is the median CPU time (user + system).
func (t *timing) medianCPU() time.Duration {
	if t == nil || len(t.samples) == 0 {
		return 0
	}
	d := make([]time.Duration, len(t.samples))
	for i, s := range t.samples {
		d[i] = s.cpu
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// peakRSS is the largest max RSS over the samples, in MiB.
func (t *timing) peakRSS() float64 {
	var m int64
	for _, s := range t.samples {
		m = max(m, s.maxRSS)
	}
	return float64(m) / 1024
}

// peakAnon is the largest sampled anonymous resident set, in MiB.
func (t *timing) peakAnon() float64 {
	var m int64
	for _, s := range t.samples {
		m = max(m, s.maxAnon)
	}
	return float64(m) / 1024
}

// measure runs prepare (untimed, may be empty) and then c, n times.
func measure(n int, prepare func() error, c cmdSpec) (*timing, error) {
	t := &timing{}
	for i := 0; i < n; i++ {
		if err := t.once(prepare, c); err != nil {
			return t, err
		}
	}
	return t, nil
}

// once runs prepare (untimed, may be nil) and then c, adding its sample to t.
func (t *timing) once(prepare func() error, c cmdSpec) error {
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	s, err := c.run()
	if err != nil {
		return err
	}
	logf("    %-64.64s %8.3fs wall %7.3fs cpu %6.0f MiB", strings.Join(c.argv, " "), s.wall.Seconds(), s.cpu.Seconds(), float64(s.maxRSS)/1024)
	t.add(s)
	return nil
}

// secs formats a duration in seconds.
func secs(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", d.Seconds())
}

// ratio formats a/b as "0.42x".
func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// logf prints progress on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// table is a markdown table under a heading.
type table struct {
	title string
	head  []string
	rows  [][]string
	notes []string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.title)
	if len(t.head) > 0 {
		b.WriteString("| " + strings.Join(t.head, " | ") + " |\n")
		b.WriteString("|" + strings.Repeat(" --- |", len(t.head)) + "\n")
		for _, r := range t.rows {
			b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	for _, n := range t.notes {
		b.WriteString(n + "\n")
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// target is one goal of the issues and whether this run met it.
type target struct {
	what, measured string
	met            *bool // nil: not measured
}

func verdict(met *bool) string {
	switch {
	case met == nil:
		return "not measured"
	case *met:
		return "**met**"
	default:
		return "**missed**"
	}
}

func boolp(b bool) *bool { return &b }
