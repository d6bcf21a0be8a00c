package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/timeagent-dev/timeagent/session"
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
	// The hook answers at once and leaves the capture (a scan, and a task
	// when something changed) to a background process holding the root's
	// lock: each step is timed until the hook exits (what the agent waits
	// for) and until the lock is free again (what the capture costs).
	state, err := stateDirOf(home, tree)
	if err != nil {
		return err
	}
	step := func(t *timing, done *[]time.Duration, prepare func() error, c cmdSpec) error {
		if prepare != nil {
			if err := prepare(); err != nil {
				return err
			}
		}
		start := time.Now()
		if err := t.once(nil, c); err != nil {
			return err
		}
		if err := waitUnlocked(state, 10*time.Minute); err != nil {
			return err
		}
		*done = append(*done, time.Since(start))
		return nil
	}
	var first, stops, prompts timing
	var firstDone, stopsDone, promptsDone []time.Duration
	if err := step(&first, &firstDone, nil, hook("UserPromptSubmit", prompt)); err != nil {
		return err
	}
	for r := 0; r < max(b.cfg.reps, 5); r++ {
		write := func() error { return os.WriteFile(changed, []byte(time.Now().String()), 0o644) }
		if err := step(&stops, &stopsDone, write, hook("Stop", stop)); err != nil {
			return err
		}
		if err := step(&prompts, &promptsDone, nil, hook("UserPromptSubmit", prompt)); err != nil {
			return err
		}
	}
	tasks, err := b.ta(home, tree, "log").output()
	if err != nil {
		return err
	}
	t := &table{
		title: fmt.Sprintf("Agent hooks without a session (copy captures), %s", label(n)),
		head:  []string{"step", "hook answers, median s", "capture done, median s", "hook CPU s", "hook peak RSS MiB"},
	}
	row := func(what string, tm *timing, done []time.Duration) {
		t.row(what, secs(tm.median()), secs(medianOf(done)), secs(tm.medianCPU()), fmt.Sprintf("%.0f", tm.peakRSS()))
	}
	row("first prompt (no journal yet: the baseline scan stores the tree)", &first, firstDone)
	row("stop hook after the agent changed 1 file (scan, task recorded)", &stops, stopsDone)
	row("next prompt hook, nothing changed since (scan only)", &prompts, promptsDone)
	t.notes = append(t.notes, fmt.Sprintf("`timeagent hook claude EVENT` fed a recorded payload on stdin, process start included; medians of %d rounds. The hook answers the agent, then the capture runs in a background process holding the root's lock (\"capture done\": the lock is free again; the agent's next tool call waits for it in the pre-tool hook). A prompt costs one prompt hook and one stop hook.", len(prompts.samples)))
	b.tables = append(b.tables, t)
	b.targets = append(b.targets, target{
		what:     fmt.Sprintf("prompt + stop hook per prompt, %s, without a session: each hook answers ≤ 50 ms", label(n)),
		measured: fmt.Sprintf("stop %s s, prompt %s s (captures done after %s s and %s s)", secs(stops.median()), secs(prompts.median()), secs(medianOf(stopsDone)), secs(medianOf(promptsDone))),
		met:      boolp(stops.median() <= 50*time.Millisecond && prompts.median() <= 50*time.Millisecond),
	})
	if len(tasks) == 0 {
		return fmt.Errorf("hook captures recorded no task")
	}
	return nil
}

// stateDirOf is the state directory of root under the state home home.
func stateDirOf(home, root string) (string, error) {
	old, had := os.LookupEnv(session.HomeEnv)
	os.Setenv(session.HomeEnv, home)
	defer func() {
		if had {
			os.Setenv(session.HomeEnv, old)
		} else {
			os.Unsetenv(session.HomeEnv)
		}
	}()
	return session.StateDir(root)
}

// waitUnlocked waits until nothing holds the lock of the state dir.
func waitUnlocked(state string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		l, _, err := session.TryLock(state, session.Holder{Pid: os.Getpid(), Command: "bench"})
		if err == nil {
			return l.Release()
		}
		if !errors.Is(err, session.ErrLocked) {
			return fmt.Errorf("wait for the capture: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wait for the capture: the root is still locked after %v", limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// medianOf is the median of ds (0 when empty).
func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
