package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Modes of a session.
const (
	ModeAuto = "auto"
	ModeCopy = "copy"
	ModeFuse = "fuse"
)

// MinFree is the space a session needs free in the state dir's file system
// before it starts.
const MinFree = 64 << 20

// ErrInSession is returned for history moves a copy-mode session cannot make
// while its child writes into the real tree.
var ErrInSession = errors.New("not possible while a copy-mode session runs")

// ErrViewDrift is cow.ErrDrift found by a move inside a fuse session: the
// session's view shows content that changed since its task ended.
var ErrViewDrift = fmt.Errorf("%w, in the session's view", cow.ErrDrift)

// RunOptions describe one `timeagent run`.
type RunOptions struct {
	Argv    []string
	Summary string // -m; empty: the command line
	Mode    string // ModeAuto, ModeCopy or ModeFuse
	// Isolate keeps the session's work out of the real tree (fuse mode in a
	// private mount namespace): it stays at the base until apply or undo.
	Isolate bool
	Dir     string // the child's working directory
	Env     []string
	Stdin   io.Reader
	// Terminal: Stdin is a pseudo-terminal made for the child (run's
	// hotkey), to become its controlling terminal (Unix).
	Terminal bool
	Stdout   io.Writer
	Stderr   io.Writer
	// Progress returns a reporter for one long step (nil: none).
	Progress func() cow.Progress
	// Handler answers commands forwarded over the control socket.
	Handler func(a *Active, req Request) Response
	// Notice prints a one-line notice to the user (nil: none).
	Notice func(string)
	// Prepare runs after the session is recorded and before the child starts;
	// it returns the child's environment, given the one prepared so far (PATH
	// proxies are added here).
	Prepare func(a *Active, env []string) ([]string, error)
	// Finish runs after the child exited and the session was sealed.
	Finish func(a *Active) error
	Now    func() time.Time
}

// Result is what a finished session did.
type Result struct {
	Session  journal.Session
	ExitCode int
	// Changes is the net change of the whole session, sorted by path.
	Changes []journal.Change
	// Skipped lists paths a scan could not record (sockets, devices).
	Skipped []string
	// Log is the session log (LogPath); LogErrors counts the errors the
	// overlay wrote to it during this session, LogFirst is the first.
	Log       string
	LogErrors int
	LogFirst  string
}

// Active is a session in progress: what the control-socket handler works on.
type Active struct {
	W       *Workspace
	Session journal.Session
	Mode    string
	Control string
	opts    RunOptions
	log     *sessionLog

	mu   sync.Mutex
	task tasks.ID
	// pending is true after a move inside a fuse session: task is reserved
	// for the next change but has no record until something is written
	// (recordPending), so undo/redo inside a session leave no empty tasks.
	pending       bool
	pendingParent tasks.ID
	// prompt is the summary of the latest user prompt (Prompt): the tasks
	// opened after it are named after it, not after the command line.
	prompt string
	// prescan is a copy-mode scan Prompt made just before sealing the open
	// task: the seal uses it instead of scanning again.
	prescan cow.Manifest
	last    cow.Manifest // the copy-mode scan the open task started from
	first   cow.Manifest // the copy-mode scan the session started from
	sealed  cow.Manifest // the copy-mode scan of a sealed task, saved once it is committed
	rec     recorder
}

// recorder captures the layer of the open task; one per mode.
type recorder interface {
	// stop ends capturing what the child's process tree writes, at the end
	// of the session, before the last task is sealed.
	stop(a *Active) error
	// seal records the open task t's layer and returns its changes; later
	// changes go to next (0 at the end of the session).
	seal(a *Active, t, next tasks.ID) ([]journal.Change, error)
	// committed is called once the task seal returned is committed: copy
	// mode saves the scan as the stat cache only then, so a crash in
	// between leaves a cache the open task's changes can be found from
	// again (recovery scans against it).
	committed(a *Active) error
	// close ends the session's capture after the last task is sealed (fuse
	// mode: applies the session's work to the real tree).
	close(a *Active) error
	// changes returns the session's net change so far, the open task included.
	changes(a *Active) ([]journal.Change, error)
	// flush makes everything written so far part of the open task's layer.
	flush() error
	// move shows task to in the running session (over drifted content
	// only with yes) and says what it did.
	move(a *Active, to tasks.ID, yes bool) (cow.TransitionResult, error)
}

// Changes returns the session's net change so far, including the open task.
func (a *Active) Changes() ([]journal.Change, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec.changes(a)
}

// Settle records a reserved task that has changes, so history moves
// computed next start from where the view really is.
func (a *Active) Settle() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.pending {
		return nil
	}
	_, err := a.recordPending(false)
	return err
}

// Move makes task to the active state of the running session (undo, redo or
// switch inside a session); copy mode refuses with ErrInSession. Content
// that changed since its task ended is first kept as an outside task, and
// overwritten only with yes (otherwise a wrapped cow.ErrDrift, nothing
// moved), as for every move.
func (a *Active) Move(to tasks.ID, yes bool) (cow.TransitionResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec.move(a, to, yes)
}

// Task returns the task the session is recording into.
func (a *Active) Task() tasks.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.task
}

// SummaryOf is the task summary for a command line or -m text.
func SummaryOf(summary string, argv []string) string {
	if summary != "" {
		return tasks.Summarize(summary)
	}
	return tasks.Summarize(strings.Join(argv, " "))
}

func (o *RunOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *RunOptions) progress() cow.Progress {
	if o.Progress == nil {
		return nil
	}
	return o.Progress()
}

// Exclude returns the scan filter that keeps the state dir out of the tree
// when it lies inside the root.
func (w *Workspace) Exclude() func(string) bool {
	if !InsideRoot(w.Root, w.StateDir) {
		return nil
	}
	rel, _ := filepath.Rel(w.Root, w.StateDir)
	rel = filepath.ToSlash(rel)
	return func(p string) bool { return p == rel || strings.HasPrefix(p, rel+"/") }
}

// Run runs one session on w: record the starting point, start the child,
// wait, and record what it changed. The session is finalised even when the
// child fails. A child that cannot be started records nothing.
func Run(w *Workspace, opts RunOptions) (Result, error) {
	if len(opts.Argv) == 0 {
		return Result{}, errors.New("run: no command given")
	}
	if _, err := LookPath(opts.Argv[0]); err != nil {
		return Result{}, err
	}
	if err := checkSpace(w.StateDir); err != nil {
		return Result{}, err
	}
	a := &Active{W: w, Mode: ModeCopy, opts: opts, Control: ControlAddr(w.StateDir), log: openLog(w.StateDir)}
	defer a.log.close()
	mode, err := chooseMode(opts.Mode, w, opts.Notice)
	if err != nil {
		return Result{}, err
	}
	if opts.Isolate && mode != ModeFuse {
		return Result{}, fmt.Errorf("--isolate needs fuse mode, and this session would run in %s mode", mode)
	}
	a.Mode = mode
	if err := a.begin(); err != nil {
		a.log.note("session could not start: %v", err)
		return Result{}, err
	}
	a.log.prefix = fmt.Sprintf("session %d: ", a.Session.ID)
	a.log.note("started in %s mode: %q", a.Mode, opts.Argv)
	code, runErr := a.runChild()
	res, err := a.end(code)
	if runErr != nil {
		err = runErr
	}
	if err != nil {
		a.log.note("ended in error (exit %d): %v", code, err)
	} else {
		a.log.note("ended (exit %d)", code)
	}
	res.Log = a.log.path
	res.LogErrors, res.LogFirst = a.log.problems()
	return res, err
}

// begin records the starting point and the session's first task.
func (a *Active) begin() error {
	w := a.W
	j := w.Journal
	now := a.opts.now()
	var id uint64
	if err := j.Update(func(tx *journal.Tx) error {
		var err error
		id, err = tx.NextSessionID()
		return err
	}); err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	if a.Mode == ModeFuse {
		// Mount first: a mount that fails leaves no session behind, and
		// auto mode falls back to copy mode.
		st, err := j.State()
		if err != nil {
			return fmt.Errorf("start session: %w", err)
		}
		tree, err := j.Tree()
		if err != nil {
			return fmt.Errorf("start session: %w", err)
		}
		// The task recorded below gets this id: nothing else records a
		// task in between (the root's lock is held).
		rec, err := startFuse(a, id, cow.NextTaskID(tree, st))
		switch {
		case err == nil:
			a.rec = rec
		case (a.opts.Mode == "" || a.opts.Mode == ModeAuto) && !a.opts.Isolate:
			a.notice("copy mode: " + strings.ReplaceAll(err.Error(), "\n", " "))
			a.Mode = ModeCopy
		case a.opts.Isolate:
			return err
		default:
			return fmt.Errorf("%w (or use --mode copy)", err)
		}
	}
	if a.Mode == ModeCopy {
		if err := a.copyBaseline(now); err != nil {
			return err
		}
		a.rec = copyRecorder{}
	}
	st, err := j.State()
	if err != nil {
		return a.abandon(fmt.Errorf("start session: %w", err))
	}
	tree, err := j.Tree()
	if err != nil {
		return a.abandon(fmt.Errorf("start session: %w", err))
	}
	t := tasks.Task{ID: cow.NextTaskID(tree, st), Parent: st.Active, Summary: SummaryOf(a.opts.Summary, a.opts.Argv),
		Session: id, Kind: tasks.KindAgent, Created: now}
	sess := journal.Session{ID: id, Argv: a.opts.Argv, Mode: a.Mode, Pid: os.Getpid(), Root: w.Root,
		StartedAt: now, ExitCode: -1, State: journal.SessionActive, Base: st.Active, Tasks: []tasks.ID{t.ID},
		Isolated: a.opts.Isolate}
	if err := a.openTaskLocked(t, sess); err != nil {
		return a.abandon(err)
	}
	return w.lock.Update(Holder{Pid: os.Getpid(), Command: "run", Session: id, Control: a.Control})
}

// abandon takes away the overlay of a session that could not be recorded.
func (a *Active) abandon(err error) error {
	if r, ok := a.rec.(interface{ abandonMount() error }); ok {
		return errors.Join(err, r.abandonMount())
	}
	return err
}

// copyBaseline scans the tree before the child starts. Differences from the
// last known tree were made outside any session: they become an outside task
// first, so nothing is lost.
func (a *Active) copyBaseline(now time.Time) error {
	j := a.W.Journal
	cache, err := j.StatCache()
	if err != nil {
		return fmt.Errorf("read stat cache: %w", err)
	}
	m, skipped, err := cow.Scan(a.W.Tree, j, cow.ScanOptions{Cache: cache, Exclude: a.W.Exclude(), Progress: a.opts.progress()})
	if err != nil {
		return fmt.Errorf("scan %s: %w", a.W.Root, err)
	}
	a.notifySkipped(skipped)
	complete, err := j.StatsComplete()
	if err != nil {
		return err
	}
	if len(cache) > 0 {
		seen := m
		if !complete {
			// The cache was filled by applies alone (fuse sessions, undo):
			// it knows the paths they wrote, not the tree. A path it lacks
			// is not new, so only the paths it knows are compared.
			seen = make(cow.Manifest, len(cache))
			for p := range cache {
				if e, ok := m[p]; ok {
					seen[p] = e
				}
			}
		}
		if changes := cow.Diff(cache, seen); len(changes) > 0 {
			st, err := j.State()
			if err != nil {
				return err
			}
			id, err := cow.RecordOutside(j, st.Active, changes, now)
			if err != nil {
				return fmt.Errorf("record changes made outside a session: %w", err)
			}
			a.notice(fmt.Sprintf("%s changed since the last session; kept as task %d", plural.Count(len(changes), "path"), id))
		}
	}
	if err := saveStats(j, cache, m); err != nil {
		return err
	}
	if !complete {
		if err := j.MarkStatsComplete(); err != nil {
			return err
		}
	}
	a.last, a.first = m, m
	return nil
}

func (a *Active) notice(s string) {
	if a.opts.Notice != nil {
		a.opts.Notice(s)
	}
}

func (a *Active) notifySkipped(skipped []string) {
	if len(skipped) == 0 {
		return
	}
	shown := skipped
	if len(shown) > 5 {
		shown = shown[:5]
	}
	a.notice(fmt.Sprintf("not recorded (sockets or device files): %s%s", strings.Join(shown, ", "),
		map[bool]string{true: fmt.Sprintf(" and %d more", len(skipped)-len(shown)), false: ""}[len(skipped) > len(shown)]))
}

func (a *Active) childEnv() []string {
	env := append([]string(nil), a.opts.Env...)
	env = setEnv(env, EnvRoot, a.W.Root)
	env = setEnv(env, EnvSession, fmt.Sprint(a.Session.ID))
	env = setEnv(env, EnvControl, a.Control)
	return env
}

func setEnv(env []string, k, v string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// runChild serves the control channel and runs the child to its end.
func (a *Active) runChild() (int, error) {
	srv, err := Serve(a.Control, func(req Request) Response {
		if a.opts.Handler == nil {
			return Response{Stderr: "timeagent: the session does not accept commands\n", Code: 1}
		}
		return a.opts.Handler(a, req)
	})
	if err != nil {
		// The session runs without it: commands reach the root when it ends.
		a.notice(fmt.Sprintf("timeagent commands cannot reach this session until it ends: %v", err))
		a.Control = ""
		if err := a.W.lock.Update(Holder{Pid: os.Getpid(), Command: "run", Session: a.Session.ID}); err != nil {
			return 1, err
		}
	} else {
		defer srv.Close()
	}
	env := a.childEnv()
	if a.opts.Prepare != nil {
		if env, err = a.opts.Prepare(a, env); err != nil {
			return 1, err
		}
	}
	dir := a.opts.Dir
	if dir == "" {
		dir = a.W.Root
	}
	child, err := StartChild(a.opts.Argv, dir, env, a.opts.Stdin, a.opts.Stdout, a.opts.Stderr, a.opts.Terminal)
	if err != nil {
		return 127, err
	}
	code := child.Wait()
	return code, nil
}

// end seals the last task and the session.
func (a *Active) end(code int) (Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	j := a.W.Journal
	res := Result{ExitCode: code}
	cur := a.task
	open := true
	if err := a.rec.stop(a); err != nil {
		return res, err
	}
	if a.pending {
		recorded, err := a.recordPending(false)
		if err != nil {
			return res, err
		}
		open = recorded
		if !recorded {
			if err := cow.Release(j, cur); err != nil {
				return res, err
			}
		}
	}
	changes, err := a.rec.seal(a, cur, 0)
	if err != nil {
		return res, err
	}
	now := a.opts.now()
	if open {
		st, err := j.State()
		if err != nil {
			return res, err
		}
		t, err := j.Task(cur)
		if err != nil {
			return res, err
		}
		t.Ended, t.Files = now, len(changes)
		if err := cow.CommitTask(j, t, changes, st); err != nil {
			return res, fmt.Errorf("seal task %d: %w", cur, err)
		}
	}
	if err := a.rec.committed(a); err != nil {
		return res, err
	}
	if err := a.rec.close(a); err != nil {
		return res, err
	}
	sess := a.Session
	sess.EndedAt, sess.ExitCode, sess.State = now, code, journal.SessionCompleted
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutSession(sess) }); err != nil {
		return res, fmt.Errorf("end session %d: %w", sess.ID, err)
	}
	a.Session = sess
	res.Session = sess
	net, err := SessionChanges(j, sess)
	if err != nil {
		return res, err
	}
	res.Changes = net
	if a.opts.Finish != nil {
		if err := a.opts.Finish(a); err != nil {
			return res, err
		}
	}
	return res, nil
}
