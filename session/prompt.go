package session

import (
	"fmt"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// PromptResult is what Prompt did.
type PromptResult struct {
	// Task is the task the new prompt's work is recorded into.
	Task tasks.ID
	// Sealed is the task closed for it (0: none was, the open task had no
	// changes yet and was renamed after the prompt instead).
	Sealed tasks.ID
}

// summaryOf is the summary of a task the session opens now: the latest
// prompt's, else -m or the command line.
func (a *Active) summaryOf() string {
	if a.prompt != "" {
		return a.prompt
	}
	return SummaryOf(a.opts.Summary, a.opts.Argv)
}

// Prompt starts the task of a new user prompt (an agent's prompt hook): the
// open task is sealed and the next opened with summary, or, when the open
// task has no changes yet, that task is renamed after the prompt instead, so
// a session leaves no empty task behind a prompt. A task reserved after a
// move inside the session gets the prompt's summary when it is recorded.
func (a *Active) Prompt(summary string) (PromptResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.promptLocked(summary)
}

// PromptAsync is Prompt without the wait, for a copy session's prompt hook:
// a copy seal scans the whole tree, longer than an agent's hook should
// take. The session is taken now, before PromptAsync returns, so whatever
// comes next (the agent's first tool through the pre-tool hook's Wait, the
// stop hook, a checkpoint, the session's end) runs after the prompt's task
// is open; done is called with the result while the session is still held.
func (a *Active) PromptAsync(summary string, done func(PromptResult, error)) {
	a.mu.Lock()
	go func() {
		defer a.mu.Unlock()
		res, err := a.promptLocked(summary)
		done(res, err)
	}()
}

// Wait returns when no prompt, checkpoint or move is in progress in the
// session: the pre-tool hook waits so that no tool of a prompt runs before
// that prompt's task is open.
func (a *Active) Wait() {
	a.mu.Lock()
	//lint:ignore SA2001 an empty critical section is the wait
	a.mu.Unlock()
}

func (a *Active) promptLocked(summary string) (PromptResult, error) {
	defer func() { a.prescan = nil }() // never kept past this seal
	summary = tasks.Summarize(summary)
	a.prompt = summary
	if a.pending {
		return PromptResult{Task: a.task}, nil
	}
	empty, err := a.openTaskEmpty()
	if err != nil {
		return PromptResult{}, err
	}
	if !empty {
		sealed, next, err := a.checkpointLocked(summary)
		if err != nil {
			return PromptResult{}, err
		}
		return PromptResult{Task: next, Sealed: sealed}, nil
	}
	j := a.W.Journal
	t, err := j.Task(a.task)
	if err != nil {
		return PromptResult{}, fmt.Errorf("rename task %d after the prompt: %w", a.task, err)
	}
	t.Summary = summary
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutTask(t) }); err != nil {
		return PromptResult{}, fmt.Errorf("rename task %d after the prompt: %w", a.task, err)
	}
	return PromptResult{Task: a.task}, nil
}

// openTaskEmpty reports whether the open task has recorded no change yet.
func (a *Active) openTaskEmpty() (bool, error) {
	if a.Mode == ModeCopy {
		m, _, err := cow.Scan(a.W.Tree, a.W.Journal, cow.ScanOptions{Cache: a.last, Exclude: a.W.Exclude()})
		if err != nil {
			return false, fmt.Errorf("scan %s: %w", a.W.Root, err)
		}
		if len(cow.Diff(a.last, m)) == 0 {
			return true, nil
		}
		a.prescan = m // the seal that follows uses it
		return false, nil
	}
	if err := a.rec.flush(); err != nil {
		return false, err
	}
	layer, err := a.W.Journal.Layer(a.task)
	if err != nil {
		return false, err
	}
	return len(layer) == 0, nil
}
