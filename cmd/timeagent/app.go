package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/recovery"
	"github.com/timeagent-dev/timeagent/session"
)

// version is the release (MAJOR.MINOR.PATCH); make builds add the commit
// as build metadata with -ldflags "-X main.version=…" (the Makefile reads
// the release from this line). `--version` prints it bare: TimeAgent 0.2's
// clients read it as the first thing on stdout.
var version = "0.3.0"

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// app is the state of one invocation: global flags, stdio, and when the
// command is served inside a running session, that session.
type app struct {
	io      stdio
	argv    []string
	dir     string // -C
	root    string // --root
	json    bool
	active  *session.Active // set when a running session serves the command
	cwd     string          // the caller's working directory
	rootDir string          // resolved root
	state   string          // resolved state dir
}

// exitError carries an exit code without a message (already printed).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a bad command line: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

// execute runs one timeagent invocation and returns its exit code. active is
// non-nil when a session serves a command forwarded over its control socket.
func execute(argv []string, sio stdio, active *session.Active) int {
	a := &app{io: sio, argv: argv, active: active}
	root := a.rootCommand()
	if active != nil {
		if err := forwardable(root, argv); err != nil {
			fmt.Fprintf(sio.err, "timeagent: %v\n", err)
			return 2
		}
	}
	root.SetArgs(argv)
	root.SetIn(sio.in)
	root.SetOut(sio.out)
	root.SetErr(sio.err)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	return a.report(err, cmd)
}

// forwarded are the commands a running session answers over its control
// channel: the ones that work on the root and forward to its session.
var forwarded = map[string]bool{
	"status": true, "log": true, "diff": true, "diff-file": true, "checkpoint": true,
	"undo": true, "redo": true, "switch": true, "actions": true, "tag": true,
	hookSessionCommand: true,
}

// forwardable checks, in the session process, that argv names a command the
// session answers for a client: anything else (run, the hidden __proxy,
// which would run a tool with the client's arguments in the session
// process) is refused before it is parsed further. It resolves argv as
// Execute does.
func forwardable(root *cobra.Command, argv []string) error {
	name := "an empty command line"
	c, _, err := root.Find(argv)
	if err == nil && c != root {
		for c.Parent() != root {
			c = c.Parent()
		}
		if forwarded[c.Name()] {
			return nil
		}
		name = fmt.Sprintf("%q", c.Name())
	} else {
		for _, s := range argv {
			if !strings.HasPrefix(s, "-") {
				name = fmt.Sprintf("%q", s)
				break
			}
		}
	}
	return fmt.Errorf("%s is not accepted over the control socket: a session answers only %s", name, forwardedList())
}

func forwardedList() string {
	names := make([]string, 0, len(forwarded))
	for n := range forwarded {
		if strings.HasPrefix(n, "__") {
			continue // internal (the hooks')
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// report prints err once and maps it to an exit code: 2 for a bad command
// line (cmd's usage line and a --help pointer follow the message), else 1.
func (a *app) report(err error, cmd *cobra.Command) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsage(err) {
		msg := usageText(err)
		if a.json {
			writeJSONError(a.io.err, msg)
		} else {
			fmt.Fprintf(a.io.err, "timeagent: %s\n%s", escapeName(msg), usageHelp(cmd))
		}
		return 2
	}
	msg := message(err)
	if a.json {
		writeJSONErrorOf(a.io.err, msg, err)
	} else {
		fmt.Fprintf(a.io.err, "timeagent: %s\n", escapeName(msg))
	}
	return 1
}

func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "timeagent",
		Short: "Undo, redo and branch everything a coding agent does to your working tree",
		Long: `timeagent runs a coding agent (any command) so that everything it does to the
repository's files — including uncommitted, untracked and ignored files and .git/ itself —
can be inspected, undone, redone and branched afterwards.`,
		Example: `  timeagent run claude      # run an agent as a session
  timeagent diff            # what it changed
  timeagent undo            # take it back; timeagent redo brings it back
  timeagent log             # the task tree
  source <(timeagent completion bash)   # complete task ids, tag names and flags`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.setup()
		},
		// Bare timeagent opens the time machine menu on a terminal, and
		// prints the help elsewhere.
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, ok := a.terminalIO(); ok && a.active == nil {
				return a.runTM()
			}
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.dir, "directory", "C", "", "act as if started in `DIR`")
	pf.StringVar(&a.root, "root", "", "protect `DIR` (a plain directory) instead of the git repository")
	root.AddCommand(
		a.runCommand(), a.statusCommand(), a.logCommand(), a.diffCommand(), a.diffFileCommand(),
		a.undoCommand(), a.redoCommand(), a.switchCommand(), a.applyCommand(), a.checkpointCommand(),
		a.recoverCommand(), a.verifyCommand(), a.versionCommand(), a.actionsCommand(), a.proxyCommand(),
		a.tagCommand(), a.revertCommand(), a.mcpCommand(), a.duCommand(), a.gcCommand(), a.configCommand(), a.exportCommand(), a.tmCommand(),
	)
	root.AddCommand(a.hookCommand(), a.hookSessionCommand(), a.hookCaptureCmd(), a.integrateCommand())
	for _, c := range root.Commands() {
		// No file names where a command takes none (run and diff-file
		// take paths; the others complete their own words).
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && c.Name() != "run" && c.Name() != "diff-file" {
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
	}
	return root
}

// setup resolves -C and the caller's directory.
func (a *app) setup() error {
	if a.active != nil {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		// The shell's directory may be inside the overlay of a session
		// that died: its path is still in $PWD.
		pwd := os.Getenv("PWD")
		if !filepath.IsAbs(pwd) || !a.detachDead(pwd) {
			return fmt.Errorf("current directory: %w", err)
		}
		fmt.Fprintf(a.io.err, "timeagent: your shell's directory was inside that mount: run `cd %s` to see the files again\n", pwd)
		wd = pwd
	}
	if a.dir != "" {
		d := a.dir
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		// In the overlay of a stopped session a stat would wait until it
		// resumes: locate reports it instead.
		if session.CheckStopped(d) == nil {
			st, err := os.Stat(d)
			if err != nil && a.detachDead(d) {
				st, err = os.Stat(d)
			}
			if err != nil {
				return &usageError{fmt.Errorf("-C %s: %w", a.dir, err)}
			}
			if !st.IsDir() {
				return &usageError{fmt.Errorf("-C %s: not a directory", a.dir)}
			}
		}
		wd = d
	}
	a.cwd = wd
	return nil
}

// detachDead detaches the dead overlay of a killed session covering dir and
// says so; it reports whether it did.
func (a *app) detachDead(dir string) bool {
	mp, err := recovery.DetachDeadAbove(filepath.Clean(dir))
	if err != nil {
		fmt.Fprintf(a.io.err, "timeagent: %v\n", err)
		return false
	}
	if mp == "" {
		return false
	}
	fmt.Fprintf(a.io.err, "timeagent: detached the stale overlay of a session that died from %s\n", mp)
	return true
}

// locate finds the root and its state dir.
func (a *app) locate() error {
	if a.rootDir != "" {
		return nil
	}
	root, err := session.FindRoot(a.cwd, a.root)
	if err != nil {
		return err
	}
	st, err := session.StateDir(root)
	if err != nil {
		return err
	}
	a.rootDir, a.state = root, st
	return nil
}

// withWorkspace runs fn on the root's workspace: locally (lock, journal,
// recovery first) or, when a session owns the root, by forwarding the whole
// command line to it over the control socket.
func (a *app) withWorkspace(command string, fn func(ws *session.Workspace) error) error {
	if a.active != nil {
		return fn(a.active.W)
	}
	relaxGC()
	if err := a.locate(); err != nil {
		return err
	}
	if err := a.orphaned(command); err != nil {
		return err
	}
	open := session.Open
	if readsOnly(command) {
		open = session.OpenForReading
	}
	ws, err := open(a.rootDir, a.state, command)
	var re *session.RunningError
	if errors.As(err, &re) {
		if !forwarded[command] {
			return fmt.Errorf("a session is running on %s (timeagent pid %d): run `timeagent %s` when it has ended", a.rootDir, re.Holder.Pid, command)
		}
		return a.forward(re.Holder)
	}
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := writableIfPending(ws); err != nil {
		return err
	}
	// verify only reads: it must work even when finishing an interrupted
	// apply fails on the damage it is there to find.
	if command != "verify" {
		if err := a.recover(ws, false); err != nil {
			var ua *unfinishedApply
			if !errors.As(err, &ua) || !canPassUnfinished(command) {
				return err
			}
			// Reading the history needs nothing from the tree, and a
			// move takes the place of the apply (cow.Transition).
			fmt.Fprintf(a.io.err, "timeagent: %s\n", message(err))
		}
	}
	return fn(ws)
}

// readsOnly reports whether command only reads the history, so its
// journal may be opened read-only (session.OpenForReading).
func readsOnly(command string) bool {
	return command == "status" || command == "log"
}

// writableIfPending reopens a read-only journal for writing when recovery
// has something to finish (a dead session, an unfinished apply or gc, the
// records of a session to ingest): a reading command finishes it first, as
// every command does.
func writableIfPending(ws *session.Workspace) error {
	if !ws.Journal.ReadOnly() {
		return nil
	}
	pending, err := recovery.Pending(ws.Journal)
	if err == nil && !pending && !sessionRecordsLeft(ws.StateDir) {
		return nil
	}
	return ws.Writable()
}

// sessionRecordsLeft reports whether a session's own records (its actions
// log, its proxies) are still in the state dir for ingestPending.
func sessionRecordsLeft(stateDir string) bool {
	entries, err := os.ReadDir(filepath.Join(stateDir, "sessions"))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
			return true
		}
	}
	return false
}

// orphaned refuses a command that a session's child (the agent, or a
// process it left behind) runs on the session's root after that session is
// gone: it was meant for the session, and acting on the real tree (or
// recovering the dead session) behind the user's back is not what was asked.
// A session that is running is left to withWorkspace to forward to.
func (a *app) orphaned(command string) error {
	id := os.Getenv(session.EnvSession)
	if id == "" || os.Getenv(session.EnvRoot) != a.rootDir {
		return nil
	}
	l, _, err := session.TryLock(a.state, session.Holder{Pid: os.Getpid(), Command: command})
	if err != nil {
		return nil // held: a running session (forwarded) or a command (waited for)
	}
	l.Release()
	return fmt.Errorf("session %s, which started this command, is no longer running on %s: run timeagent from a shell it did not start (or unset %s)",
		id, a.rootDir, session.EnvSession)
}

// unfinishedApply is an apply recovery could not finish (a file the system
// refuses to replace, a full disk): its intent stays for the next command.
type unfinishedApply struct{ err error }

func (e *unfinishedApply) Error() string { return e.err.Error() }
func (e *unfinishedApply) Unwrap() error { return e.err }

// canPassUnfinished reports whether command works while an apply cannot
// finish: the read-only commands, and the moves, which go elsewhere instead.
func canPassUnfinished(command string) bool {
	switch command {
	case "status", "log", "diff", "diff-file", "actions", "undo", "redo", "switch", "apply", "tag":
		return true
	}
	return false
}

// recover finishes what a crash left behind, telling the user what it did.
func (a *app) recover(ws *session.Workspace, quiet bool) error {
	rep, err := recovery.Recover(a.recoveryTarget(ws))
	if err != nil {
		if in, ierr := ws.Journal.Intent(); ierr == nil && in != nil {
			return &unfinishedApply{err}
		}
		return err
	}
	if !quiet && !a.json {
		for _, n := range rep.Notes {
			fmt.Fprintf(a.io.err, "timeagent: recovered: %s\n", escapeName(n))
		}
	}
	return ingestPending(ws)
}

func (a *app) recoveryTarget(ws *session.Workspace) recovery.Target {
	return recovery.Target{Journal: ws.Journal, Tree: ws.Tree, Root: ws.Root, StateDir: ws.StateDir,
		Exclude: ws.Exclude(), Progress: a.progressFactory(), Unmounted: ws.Unmounted}
}

// forward sends this command line to the running session.
func (a *app) forward(h session.Holder) error {
	if err := session.HolderStopped(a.rootDir, &h); err != nil {
		return err
	}
	if h.Control == "" && h.Session != 0 {
		return fmt.Errorf("a session is running on %s (timeagent pid %d) without a control channel (it could not start one): run the command again when the session has ended", a.rootDir, h.Pid)
	}
	if h.Control == "" {
		return fmt.Errorf("a session is running on %s (timeagent pid %d) but has no control socket yet: try again", a.rootDir, h.Pid)
	}
	resp, err := a.call(h)
	var se *session.StoppedError
	if errors.As(err, &se) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reach the session running on %s (timeagent pid %d): %w", a.rootDir, h.Pid, err)
	}
	io.WriteString(a.io.out, resp.Stdout)
	io.WriteString(a.io.err, resp.Stderr)
	if resp.Code != 0 {
		return &exitError{resp.Code}
	}
	return nil
}

// call sends this command line to the session h and waits for its answer,
// or until the session is found stopped (Ctrl-Z): then it would answer
// nothing until resumed.
func (a *app) call(h session.Holder) (session.Response, error) {
	type answer struct {
		resp session.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := session.Call(h.Control, session.Request{Argv: a.argv, Cwd: a.cwd}, 0)
		done <- answer{resp, err}
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ans := <-done:
			return ans.resp, ans.err
		case <-tick.C:
			if err := session.HolderStopped(a.rootDir, &h); err != nil {
				return session.Response{}, err
			}
		}
	}
}

// interactive reports whether prompts can be answered: stdin and stderr are
// terminals and the command is not served for another process.
func (a *app) interactive() bool {
	if a.active != nil {
		return false
	}
	in, ok := a.io.in.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return false
	}
	e, ok := a.io.err.(*os.File)
	return ok && term.IsTerminal(int(e.Fd()))
}

// progressFactory returns progress reporters for long work: a bar on a
// terminal, nothing under --json or when stderr is not a terminal.
func (a *app) progressFactory() func() cow.Progress {
	if a.json || a.active != nil {
		return nil
	}
	e, ok := a.io.err.(*os.File)
	if !ok || !term.IsTerminal(int(e.Fd())) {
		return nil
	}
	return func() cow.Progress { return newTermProgress(e) }
}

// unknownCommand refuses words after a bare timeagent as cobra does for a
// root without a Run of its own: naming the command and suggesting near
// ones (cobra.NoArgs would drop the suggestions).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which only its own lookup sets
	}
	if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
		msg += "\n\nDid you mean this?\n"
		for _, s := range sug {
			msg += "\t" + s + "\n"
		}
	}
	return errors.New(msg)
}
