package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

// sample is one timed run of a command.
type sample struct {
	wall   time.Duration
	maxRSS int64 // KiB, of the command's process (largest of its descendants)
}

// cmdSpec is a command to run: argv, working directory and extra env.
type cmdSpec struct {
	argv []string
	dir  string
	env  []string
}

// sh makes a cmdSpec running script with sh -c.
func sh(script string) cmdSpec { return cmdSpec{argv: []string{"sh", "-c", script}} }

// run runs c to completion, timing it. Output is kept for the error only.
func (c cmdSpec) run() (sample, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		s.maxRSS = int64(ru.Maxrss)
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

// peakRSS is the largest max RSS over the samples, in MiB.
func (t *timing) peakRSS() float64 {
	var m int64
	for _, s := range t.samples {
		m = max(m, s.maxRSS)
	}
	return float64(m) / 1024
}

// measure runs prepare (untimed, may be empty) and then c, n times.
func measure(n int, prepare func() error, c cmdSpec) (*timing, error) {
	t := &timing{}
	for i := 0; i < n; i++ {
		if prepare != nil {
			if err := prepare(); err != nil {
				return t, err
			}
		}
		s, err := c.run()
		if err != nil {
			return t, err
		}
		logf("    %-60.60s %8.3fs  %6.0f MiB", strings.Join(c.argv, " "), s.wall.Seconds(), float64(s.maxRSS)/1024)
		t.add(s)
	}
	return t, nil
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
