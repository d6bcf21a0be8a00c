package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

type runOptions struct {
	isolate       bool
	mode          string
	summary       string
	allowHighRisk bool
	hotkey        string
	noHotkey      bool
}

func (a *app) runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] [--] COMMAND [ARGS...]",
		Short: "Run a command (the agent) as a session whose changes can be undone",
		Example: `  timeagent run claude
  timeagent run --mode copy -m "fix the tests" -- codex exec "fix the tests"
  timeagent run --isolate -- aider   # the real files change at timeagent apply
  timeagent run sh -c 'make && make test'`,
		Long: `Run COMMAND as one session. Everything it changes in the root is recorded as a task:
review it with "timeagent diff", revert it with "timeagent undo". The arguments are passed to
the command unchanged (never through a shell); run "timeagent run sh -c '...'" for shell syntax.
The exit status is the command's (128+N when it died of signal N).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{errors.New("run: no command given")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.runRun(o, args) },
	}
	cmd.Flags().SetInterspersed(false)
	enumVar(cmd, &o.mode, "mode", session.ModeAuto, "MODE", "how changes are captured: auto, copy or fuse",
		session.ModeAuto, session.ModeCopy, session.ModeFuse)
	cmd.Flags().StringVarP(&o.summary, "message", "m", "", "task summary (default: the command line)")
	cmd.Flags().BoolVar(&o.isolate, "isolate", false, "Linux: only the agent sees its changes; the real tree changes at `timeagent apply`")
	cmd.Flags().BoolVar(&o.allowHighRisk, "allow-high-risk", false, "let high- and critical-risk external actions run without asking")
	cmd.Flags().StringVar(&o.hotkey, "hotkey", defaultHotkey, "the key chord that opens the time machine menu while the agent runs (on a terminal; Unix)")
	cmd.Flags().BoolVar(&o.noHotkey, "no-hotkey", false, "run the agent on this terminal directly, without the menu's hotkey")
	return cmd
}

func (a *app) runRun(o runOptions, argv []string) error {
	if a.active != nil {
		return errors.New("a session is already running on this root: a session cannot start another")
	}
	switch o.mode {
	case session.ModeAuto, session.ModeCopy, session.ModeFuse:
	default:
		return &usageError{fmt.Errorf("unknown --mode %q: use auto, copy or fuse", o.mode)}
	}
	hk, err := parseChord(o.hotkey)
	if err != nil {
		return &usageError{err}
	}
	if _, err := session.LookPath(argv[0]); err != nil {
		fmt.Fprintf(a.io.err, "timeagent: failed to start %q: command not found\n", argv[0])
		return &exitError{127}
	}
	if o.isolate && o.mode == session.ModeCopy {
		return &usageError{errors.New("--isolate needs fuse mode: drop --mode copy")}
	}
	if o.isolate && !session.Isolated() {
		code, err := session.ReexecIsolated(a.argv, a.io.in, a.io.out, a.io.err)
		if err != nil {
			return err
		}
		if code != 0 {
			return &exitError{code}
		}
		return nil
	}
	if err := a.locate(); err != nil {
		return err
	}
	if err := a.orphaned("run"); err != nil {
		return err
	}
	ws, err := session.Open(a.rootDir, a.state, "run")
	var re *session.RunningError
	if errors.As(err, &re) {
		if err := session.HolderStopped(a.rootDir, &re.Holder); err != nil {
			return err
		}
		return fmt.Errorf("a session is already running on %s (timeagent pid %d, session %d): wait for it to end; one session per root at a time",
			a.rootDir, re.Holder.Pid, re.Holder.Session)
	}
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := a.recover(ws, false); err != nil {
		return err
	}
	notice := func(s string) { fmt.Fprintf(a.io.err, "timeagent: %s\n", escapeName(s)) }
	dir := a.childDir(notice)
	ext := newExternal(a, o.allowHighRisk)
	stdin, stdout, stderr := a.io.in, a.io.out, a.io.err
	var hkey *hotkey
	if in, out, ok := a.terminalIO(); ok && !o.noHotkey && hotkeySupported {
		hkey, err = startHotkeyNotice(in, out, hk, &execSource{global: a.globalArgs()}, notice)
		if err != nil {
			notice(err.Error())
		} else {
			stdin, stdout, stderr = hkey.tty, hkey.tty, hkey.tty
			// The terminal is raw while the agent runs: a line ends in \r\n.
			notice = func(s string) { fmt.Fprintf(a.io.err, "timeagent: %s\r\n", escapeName(s)) }
		}
	}
	res, err := session.Run(ws, session.RunOptions{
		Argv:     argv,
		Summary:  o.summary,
		Mode:     o.mode,
		Isolate:  o.isolate,
		Dir:      dir,
		Env:      os.Environ(),
		Stdin:    stdin,
		Stdout:   stdout,
		Stderr:   stderr,
		Terminal: hkey != nil,
		Progress: a.progressFactory(),
		Handler:  a.sessionHandler,
		Notice:   notice,
		Prepare:  ext.prepare,
		Finish:   ext.finish,
	})
	if hkey != nil {
		hkey.stop()
	}
	if derr := ws.CheckStateDir(); derr != nil {
		return derr
	}
	if errors.Is(err, session.ErrStart) {
		fmt.Fprintf(a.io.err, "timeagent: failed to start %q: %v\n", argv[0], err)
		return &exitError{127}
	}
	if res.LogErrors > 0 {
		fmt.Fprintf(a.io.err, "timeagent: the overlay logged %s (the cause of any I/O error the agent saw); the first: %s; all are in %s\n",
			plural.Count(res.LogErrors, "problem"), res.LogFirst, res.Log)
	} else if err != nil && res.Log != "" {
		fmt.Fprintf(a.io.err, "timeagent: the session log is %s\n", res.Log)
	}
	if err != nil {
		if in, ierr := ws.Journal.Intent(); ierr == nil && in != nil {
			return &unfinishedApply{err} // the session's end could not be applied
		}
		return err
	}
	a.printSessionSummary(res)
	a.autoGC(ws)
	if res.ExitCode != 0 {
		return &exitError{res.ExitCode}
	}
	return nil
}

// startHotkey with a notice saying which chord opens the menu (printed
// before the terminal goes raw).
func startHotkeyNotice(in, out *os.File, c chord, src *execSource, notice func(string)) (*hotkey, error) {
	notice(fmt.Sprintf("%s opens the time machine menu (run --no-hotkey to pass it to the agent)", c.name))
	return startHotkey(in, out, c, src)
}

// childDir is the directory the child starts in: the caller's, unless it
// lies outside the root (--root DIR given from elsewhere); then the root,
// since only what happens in the root is recorded, and notice says so.
func (a *app) childDir(notice func(string)) string {
	cwd := a.cwd
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	if session.InsideRoot(a.rootDir, cwd) {
		return a.cwd
	}
	notice(fmt.Sprintf("the command runs in %s, the root (your directory %s is outside it)", a.rootDir, a.cwd))
	return a.rootDir
}

// sessionHandler answers a command forwarded to the running session.
func (a *app) sessionHandler(act *session.Active, req session.Request) session.Response {
	var out, errb bytes.Buffer
	code := execute(req.Argv, stdio{in: strings.NewReader(""), out: &out, err: &errb}, act)
	return session.Response{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// printSessionSummary tells, on stderr, what the session changed (decision 3:
// stdout stays the child's).
func (a *app) printSessionSummary(res session.Result) {
	w := a.io.err
	s := res.Session
	var created, modified, deleted, typechanged int
	for _, c := range res.Changes {
		switch changeKind(c) {
		case "created":
			created++
		case "modified":
			modified++
		case "deleted":
			deleted++
		default:
			typechanged++
		}
	}
	last := s.Tasks[len(s.Tasks)-1]
	fmt.Fprintf(w, "timeagent: session %d ended (exit %d), %s mode, task %d: %d created, %d modified, %d deleted",
		s.ID, res.ExitCode, s.Mode, last, created, modified, deleted)
	if typechanged > 0 {
		fmt.Fprintf(w, ", %d changed type", typechanged)
	}
	fmt.Fprintln(w)
	printChangeList(w, res.Changes, 20)
	switch {
	case s.Isolated:
		fmt.Fprintln(w, "timeagent: --isolate: your files were NOT changed; `timeagent apply` writes this work to them, `timeagent undo` discards it")
	case len(res.Changes) > 0:
		fmt.Fprintln(w, "timeagent: review with `timeagent diff`, revert with `timeagent undo`")
	}
}

func printChangeList(w io.Writer, changes []journal.Change, max int) {
	for i, c := range changes {
		if i == max {
			fmt.Fprintf(w, "  … and %d more\n", len(changes)-max)
			break
		}
		fmt.Fprintf(w, "  %s %s\n", changeSymbol(changeKind(c)), escapeName(c.Path))
	}
}

// autoGC collects the history when the configured size budget is passed
// (timeagent config gc.max-size). It never changes run's exit code: a
// failure is reported and the next run tries again.
func (a *app) autoGC(ws *session.Workspace) {
	cfg, err := cow.LoadGCConfig(ws.StateDir)
	if err != nil {
		fmt.Fprintf(a.io.err, "timeagent: automatic gc skipped: %s\n", message(err))
		return
	}
	if cfg.MaxSize <= 0 {
		return
	}
	stored, err := ws.Journal.StoredBytes()
	if err == nil && stored <= cfg.MaxSize {
		return
	}
	var doc gcDoc
	if err == nil {
		doc, err = runGC(ws.Journal, cow.GCPolicy{Keep: cfg.KeepOrDefault(), MaxSize: cfg.MaxSize, Now: time.Now()}, false)
	}
	if err != nil {
		fmt.Fprintf(a.io.err, "timeagent: automatic gc failed: %s\n", message(err))
		return
	}
	fmt.Fprintf(a.io.err, "timeagent: the journal passed its size budget (%s): gc dropped %d task(s), freed %d blob(s); on disk %s -> %s\n",
		cow.FormatSize(cfg.MaxSize), len(doc.Dropped), doc.Swept.Blobs, cow.FormatSize(doc.DiskBefore), cow.FormatSize(doc.DiskAfter))
}
