package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// hookCapture measures an agent's hooks without a session on the tree of n
// files: the copy capture each prompt costs (a scan with the stat cache,
// and a task when something changed), with a fresh journal.
func (b *bench) hookCapture(n int) error {
	tree := b.trees[n]
	logf("prompt-hook captures, %s", label(n))
	home := filepath.Join(b.cfg.work, fmt.Sprintf("home-hooks-%d", n))
	os.RemoveAll(home)
	defer os.RemoveAll(home)
	changed := filepath.Join(tree, "bench-hook.txt")
	defer os.Remove(changed)
	payload := func(name, event, extra string) (string, error) {
		p := filepath.Join(b.cfg.work, name)
		body := fmt.Sprintf(`{"session_id":"bench","cwd":%q,"hook_event_name":%q%s}`, tree, event, extra)
		return p, os.WriteFile(p, []byte(body), 0o644)
	}
	prompt, err := payload("hook-prompt.json", "UserPromptSubmit", `,"prompt":"bench prompt"`)
	if err != nil {
		return err
	}
	stop, err := payload("hook-stop.json", "Stop", "")
	if err != nil {
		return err
	}
	hook := func(event, in string) cmdSpec {
		c := sh(fmt.Sprintf("%q -C %q hook claude %s < %q", b.cfg.bin, tree, event, in))
		c.env = []string{"TIMEAGENT_HOME=" + home}
		return c
	}
	first, err := measure(1, nil, hook("UserPromptSubmit", prompt))
	if err != nil {
		return err
	}
	var stops, prompts timing
	for r := 0; r < max(b.cfg.reps, 5); r++ {
		write := func() error { return os.WriteFile(changed, []byte(time.Now().String()), 0o644) }
		if err := stops.once(write, hook("Stop", stop)); err != nil {
			return err
		}
		if err := prompts.once(nil, hook("UserPromptSubmit", prompt)); err != nil {
			return err
		}
	}
	tasks, err := b.ta(home, tree, "log").output()
	if err != nil {
		return err
	}
	t := &table{
		title: fmt.Sprintf("Agent hooks without a session (copy captures), %s", label(n)),
		head:  []string{"step", "median s", "CPU s", "peak RSS MiB"},
	}
	t.row("first prompt (no journal yet: the baseline scan stores the tree)", secs(first.median()), secs(first.medianCPU()), fmt.Sprintf("%.0f", first.peakRSS()))
	t.row("stop hook after the agent changed 1 file (scan, task recorded)", secs(stops.median()), secs(stops.medianCPU()), fmt.Sprintf("%.0f", stops.peakRSS()))
	t.row("next prompt hook, nothing changed since (scan only)", secs(prompts.median()), secs(prompts.medianCPU()), fmt.Sprintf("%.0f", prompts.peakRSS()))
	t.notes = append(t.notes, fmt.Sprintf("`timeagent hook claude EVENT` fed a recorded payload on stdin, process start included; medians of %d rounds. A prompt costs one prompt hook and one stop hook.", len(prompts.samples)))
	b.tables = append(b.tables, t)
	b.targets = append(b.targets, target{
		what:     fmt.Sprintf("prompt + stop hook per prompt, %s, without a session ≤ 50 ms each", label(n)),
		measured: fmt.Sprintf("stop %s s, prompt %s s", secs(stops.median()), secs(prompts.median())),
		met:      boolp(stops.median() <= 50*time.Millisecond && prompts.median() <= 50*time.Millisecond),
	})
	if len(tasks) == 0 {
		return fmt.Errorf("hook captures recorded no task")
	}
	return nil
}
