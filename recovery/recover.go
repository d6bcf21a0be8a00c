package recovery

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Target is what recovery works on: one root's journal and real tree, with
// the root's lock held by the caller (so no live session owns it).
type Target struct {
	Journal  *journal.Journal
	Tree     *os.Root
	Root     string
	StateDir string
	// Exclude keeps the state dir out of scans when it lies inside the root.
	Exclude  func(string) bool
	Progress func() cow.Progress
	Now      func() time.Time
	// Unmounted says a stale mount was detached (by UnmountStale) before the
	// tree was opened.
	Unmounted bool
}

// Report says what recovery found and did, in words a user can follow.
type Report struct {
	// FinishedApply is the intent of an apply that was finished, if any.
	FinishedApply *journal.Intent `json:"finishedApply,omitempty"`
	// Interrupted lists the sessions found dead and recorded.
	Interrupted []journal.Session `json:"interrupted,omitempty"`
	// Unmounted is true when a stale overlay mount was detached from the root.
	Unmounted bool `json:"unmounted,omitempty"`
	// Notes describe every step taken.
	Notes []string `json:"notes,omitempty"`
}

// Empty reports whether nothing needed recovery.
func (r Report) Empty() bool { return len(r.Notes) == 0 }

func (t Target) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t Target) progress() cow.Progress {
	if t.Progress == nil {
		return nil
	}
	return t.Progress()
}

// Recover finishes everything a crash left: first a stale mount, then dead
// sessions, then an unfinished apply. It is cheap when nothing is wrong.
func Recover(t Target) (Report, error) {
	var r Report
	j := t.Journal
	if t.Unmounted {
		r.Unmounted = true
		r.Notes = append(r.Notes, "detached a stale overlay mount from "+t.Root)
	}
	// An interrupted gc is finished first: it touches only the journal,
	// and it was planned on the history as it was before anything below
	// adds to it.
	if p, err := j.GCPlan(); err != nil {
		return r, fmt.Errorf("read gc plan: %w", err)
	} else if p != nil {
		if err := cow.FinishGC(j); err != nil {
			return r, fmt.Errorf("finish the interrupted gc: %w", err)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("finished an interrupted gc (%d task(s) dropped)", len(p.Drop)))
	}
	sessions, err := activeSessions(j)
	if err != nil {
		return r, err
	}
	for _, s := range sessions {
		done, note, err := finishDeadSession(t, s)
		if err != nil {
			return r, fmt.Errorf("recover session %d: %w", s.ID, err)
		}
		r.Interrupted = append(r.Interrupted, done)
		r.Notes = append(r.Notes, note)
	}
	in, err := j.Intent()
	if err != nil {
		return r, fmt.Errorf("read intent: %w", err)
	}
	if in != nil {
		if _, err := cow.FinishIntent(j, t.Tree, t.progress()); err != nil {
			return r, fmt.Errorf("finish the interrupted %s (task %d to %d): %w", in.Reason, in.From, in.To, err)
		}
		r.FinishedApply = in
		r.Notes = append(r.Notes, fmt.Sprintf("finished an interrupted %s (task %d to task %d)", reasonOr(in.Reason), in.From, in.To))
	}
	return r, nil
}

// Pending reports whether Recover has anything to finish in j: an
// interrupted gc, a session still marked active (dead, as the caller holds
// the lock) or an unfinished apply. A command that only reads opens the
// journal read-only when nothing is pending (a stale mount, which Recover
// also reports, is seen before the journal is opened).
func Pending(j *journal.Journal) (bool, error) {
	if p, err := j.GCPlan(); err != nil {
		return false, fmt.Errorf("read gc plan: %w", err)
	} else if p != nil {
		return true, nil
	}
	if sessions, err := activeSessions(j); err != nil {
		return false, err
	} else if len(sessions) > 0 {
		return true, nil
	}
	in, err := j.Intent()
	if err != nil {
		return false, fmt.Errorf("read intent: %w", err)
	}
	return in != nil, nil
}

func reasonOr(s string) string {
	if s == "" {
		return "apply"
	}
	return s
}

// activeSessions are sessions still marked active. The caller holds the
// root's lock, so their processes are gone.
func activeSessions(j *journal.Journal) ([]journal.Session, error) {
	all, err := j.Sessions()
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	var out []journal.Session
	for _, s := range all {
		if s.State == journal.SessionActive {
			out = append(out, s)
		}
	}
	return out, nil
}

// finishDeadSession records what a dead session's child had changed and
// marks the session interrupted.
func finishDeadSession(t Target, s journal.Session) (journal.Session, string, error) {
	j := t.Journal
	if s.Mode == "fuse" {
		var err error
		if s, err = recordReserved(t, s); err != nil {
			return s, "", err
		}
	}
	var last tasks.ID
	if len(s.Tasks) > 0 {
		last = s.Tasks[len(s.Tasks)-1]
	}
	var note string
	switch {
	case s.Isolated:
		note = fmt.Sprintf("isolated session %d (pid %d) had died; its work is kept as task %d and the real files were not changed (timeagent apply writes it)", s.ID, s.Pid, last)
	case s.Mode == "fuse":
		n, outside, err := finishDeadFuse(t, s, last)
		if err != nil {
			if in, ierr := j.Intent(); ierr == nil && in != nil {
				// The work is in an intent now: any later command finishes
				// it, or a move takes its place (an apply that cannot
				// finish: a file the system refuses to replace). The
				// session is not recovered again.
				s.State, s.EndedAt = journal.SessionInterrupted, t.now()
				if uerr := j.Update(func(tx *journal.Tx) error { return tx.PutSession(s) }); uerr != nil {
					return s, "", errors.Join(err, uerr)
				}
			}
			return s, "", err
		}
		note = fmt.Sprintf("session %d (pid %d) had died; its overlay work (%s) was applied to the tree and kept as task %d", s.ID, s.Pid, plural.Count(n, "path"), last)
		if outside != 0 {
			note += fmt.Sprintf("; files changed in the real tree under the overlay were kept first as task %d", outside)
		}
	default:
		n, err := finishDeadCopy(t, last)
		if err != nil {
			return s, "", err
		}
		note = fmt.Sprintf("session %d (pid %d) had died; a scan recorded %s as task %d", s.ID, s.Pid, plural.Count(n, "changed path"), last)
	}
	s.State, s.EndedAt = journal.SessionInterrupted, t.now()
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutSession(s) }); err != nil {
		return s, "", err
	}
	return s, note, nil
}

// finishDeadCopy scans the tree: the stat cache holds the scan the open task
// started from, so the difference is what the child changed.
func finishDeadCopy(t Target, last tasks.ID) (int, error) {
	j := t.Journal
	cache, err := j.StatCache()
	if err != nil {
		return 0, err
	}
	m, _, err := cow.Scan(t.Tree, j, cow.ScanOptions{Cache: cache, Exclude: t.Exclude, Progress: t.progress()})
	if err != nil {
		return 0, fmt.Errorf("scan %s: %w", t.Root, err)
	}
	changes := cow.Diff(cache, m)
	if last == 0 {
		return 0, nil
	}
	task, err := j.Task(last)
	if err != nil {
		return 0, err
	}
	if task.Ended.IsZero() {
		// The task is open: the cache is the scan it started from.
		st, err := j.State()
		if err != nil {
			return 0, err
		}
		task.Ended, task.Files = t.now(), len(changes)
		if err := cow.CommitTask(j, task, changes, st); err != nil {
			return 0, err
		}
	} else {
		// The session died after sealing its last task and before saving
		// the scan that sealed it: the task holds its changes already
		// (recording them again against the older cache would replace
		// them), and the cache only has to catch up.
		changes = nil
	}
	up := make(map[string]journal.StatEntry)
	for p, e := range m {
		if o, ok := cache[p]; !ok || o != e {
			up[p] = e
		}
	}
	var del []string
	for p := range cache {
		if _, ok := m[p]; !ok {
			del = append(del, p)
		}
	}
	if err := j.PutStats(up, del); err != nil {
		return 0, err
	}
	return len(changes), nil
}

// recordReserved keeps the work written into a dead fuse session's reserved
// task. After an undo, redo or switch inside the session (or between the
// overlay's checkpoint and the new task's record), later changes go to task
// Current+1, which gets its record only when the session records it
// (docs/design-changes.md, point 2); closed files written there are already
// in that task's layer. Without a record the layer would be unreachable and
// the agent's work lost, so it becomes a task now: a child of the active task
// (the task the session had moved to, the view those changes were made on),
// active, and the session's last task.
func recordReserved(t Target, s journal.Session) (journal.Session, error) {
	j := t.Journal
	id, err := cow.ReservedID(j)
	if err != nil || id == 0 {
		return s, err
	}
	layer, err := j.Layer(id)
	if err != nil {
		return s, fmt.Errorf("read the layer of reserved task %d: %w", id, err)
	}
	if len(layer) == 0 {
		return s, nil
	}
	st, err := j.State()
	if err != nil {
		return s, err
	}
	summary := tasks.Summarize(strings.Join(s.Argv, " "))
	if len(s.Tasks) > 0 {
		if last, err := j.Task(s.Tasks[len(s.Tasks)-1]); err == nil {
			summary = last.Summary
		}
	}
	now := t.now()
	s.Tasks = append(append([]tasks.ID(nil), s.Tasks...), id)
	task := tasks.Task{ID: id, Parent: st.Active, Summary: summary, Session: s.ID, Kind: tasks.KindAgent,
		Created: now, Ended: now, Files: len(layer)}
	if _, err := cow.CreateTask(j, cow.NewTask{Task: task, Activate: true, Session: &s}); err != nil {
		return s, fmt.Errorf("record reserved task %d: %w", id, err)
	}
	return s, nil
}

// sealTask gives a dead session's last task its end time and file count.
//
//lint:ignore U1000 used by the fuse recovery, which is built on Linux only
func sealTask(t Target, id tasks.ID) error {
	j := t.Journal
	task, err := j.Task(id)
	if err != nil {
		return err
	}
	layer, err := j.Layer(id)
	if err != nil {
		return err
	}
	task.Ended, task.Files = t.now(), len(layer)
	return j.Update(func(tx *journal.Tx) error { return tx.PutTask(task) })
}
