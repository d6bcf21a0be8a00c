package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/menu"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

func (a *app) tmCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "tm",
		Short: "Open the time machine menu: the task tree, a preview of each task's diff, and keys to switch, undo, redo, filter and tag",
		Long: `tm opens a full-screen menu of the history (bare "timeagent" on a terminal does too).
Keys: ↑↓ or j/k move, enter switches the files to the selected task (asking first when files
changed since their task ended), u undo, r redo, / filter by summary, tag or path, t tag the
selected task, tab moves between the tree and the changed paths, pgup/pgdn page the diff,
q or esc leaves. It works after a session and during one (the agent's view moves at once).`,
		Example: `  timeagent tm
  timeagent -C ~/src/project tm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runTM() },
	}
}

// terminalIO reports whether stdin and stdout are both terminals.
func (a *app) terminalIO() (in, out *os.File, ok bool) {
	in, iok := a.io.in.(*os.File)
	out, ook := a.io.out.(*os.File)
	if !iok || !ook || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return nil, nil, false
	}
	return in, out, true
}

func (a *app) runTM() error {
	in, out, ok := a.terminalIO()
	if !ok {
		return errors.New("tm needs a terminal (stdin and stdout): use timeagent log, diff and switch in scripts")
	}
	if a.active != nil {
		return errors.New("tm cannot run over the control socket: press the session's hotkey, or run timeagent tm in a terminal")
	}
	src := &execSource{global: a.globalArgs()}
	// Fail early, with the commands' own message, when there is no history
	// to show (no root, a damaged journal) rather than inside the menu.
	if _, err := src.History(); err != nil {
		return err
	}
	return showMenu(src, in, out)
}

// showMenu runs the menu on a terminal until the user leaves it.
func showMenu(src menu.Source, in io.Reader, out io.Writer) error {
	p := tea.NewProgram(menu.New(src, menu.Options{}), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("time machine menu: %w", err)
	}
	return nil
}

// globalArgs are the flags that locate the root, for the commands the menu
// runs: the caller's directory and --root.
func (a *app) globalArgs() []string {
	g := []string{"-C", a.cwd}
	if a.root != "" {
		g = append(g, "--root", a.root)
	}
	return g
}

// execSource is the menu's Source: it runs timeagent's own commands in this
// process with --json, exactly as typed ones run, so the menu reads and moves
// the same way after a session (the journal, locked per command) and during
// one (forwarded over the control socket: the agent's view moves at once).
type execSource struct {
	global []string
	mu     sync.Mutex
}

// run runs one command line and returns what it printed and its exit code.
func (s *execSource) run(args ...string) (stdout, stderr string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out, errb bytes.Buffer
	code = 1
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(&errb, "timeagent: internal error in %s: %v\n", args[0], p)
			}
		}()
		code = execute(append(append([]string{}, s.global...), args...), stdio{in: strings.NewReader(""), out: &out, err: &errb}, nil)
	}()
	return out.String(), errb.String(), code
}

// runJSON runs a --json command and decodes its document into v; a failure
// becomes the error its JSON document on stderr names.
func (s *execSource) runJSON(v any, args ...string) error {
	out, errOut, code := s.run(append(args, "--json")...)
	if code != 0 {
		return jsonFailure(args[0], errOut, code)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("read the output of timeagent %s: %w", args[0], err)
	}
	return nil
}

// jsonFailure reads the error document a --json command printed on stderr.
func jsonFailure(command, stderr string, code int) error {
	var doc jsonErrorDoc
	if i := strings.Index(stderr, "{"); i >= 0 && json.Unmarshal([]byte(stderr[i:]), &doc) == nil && doc.Error != "" {
		if doc.Confirm {
			return &menu.ConfirmError{Message: doc.Error, Drifted: doc.Drifted, Outside: doc.OutsideTask}
		}
		return errors.New(doc.Error)
	}
	if s := strings.TrimSpace(stderr); s != "" {
		return errors.New(strings.TrimPrefix(s, "timeagent: "))
	}
	return fmt.Errorf("timeagent %s failed (exit %d)", command, code)
}

func (s *execSource) History() (menu.History, error) {
	out, errOut, code := s.run("log", "--json")
	if code != 0 {
		return menu.History{}, jsonFailure("log", errOut, code)
	}
	var doc logJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return menu.History{}, fmt.Errorf("read the output of timeagent log: %w", err)
	}
	h := menu.History{Active: doc.ActiveTask, Current: doc.CurrentTask, BaseBranches: doc.BaseBranches,
		Tasks: make([]menu.Task, 0, len(doc.Tasks)), Stamp: out}
	for _, t := range doc.Tasks {
		created, _ := time.Parse(time.RFC3339Nano, t.Created)
		h.Tasks = append(h.Tasks, menu.Task{ID: t.ID, Parent: t.Parent, Summary: t.Summary, Kind: t.Kind,
			Status: t.Status, Branches: t.HasBranches, Session: t.Session, Created: created, Files: t.Files, Tags: t.Tags})
	}
	return h, nil
}

func (s *execSource) Changes(task uint64) ([]menu.Change, error) {
	var doc diffJSON
	if err := s.runJSON(&doc, "diff", "--task", strconv.FormatUint(task, 10)); err != nil {
		return nil, err
	}
	out := make([]menu.Change, 0, len(doc.Changes))
	for _, c := range doc.Changes {
		out = append(out, menu.Change{Path: c.Path, Kind: c.Change})
	}
	return out, nil
}

func (s *execSource) Patch(task uint64) (map[string]string, error) {
	out, errOut, code := s.run("diff", "--patch", "--color", "never", "--task", strconv.FormatUint(task, 10))
	if code != 0 {
		return nil, jsonFailure("diff", errOut, code)
	}
	return menu.SplitPatch(out), nil
}

func (s *execSource) Move(m menu.Move) (string, error) {
	args := []string{m.Action}
	if m.Action == "switch" {
		args = append(args, strconv.FormatUint(m.Task, 10))
	}
	if m.Yes {
		args = append(args, "--yes")
	}
	var doc moveJSON
	if err := s.runJSON(&doc, args...); err != nil {
		return "", err
	}
	text := fmt.Sprintf("%s: task %d → task %d (%d %s written)", doc.Action, doc.From, doc.To, doc.Written, pluralWord(doc.Written, "path", "paths"))
	if doc.OutsideTask != 0 {
		text += fmt.Sprintf("; the changed files were kept as task %d", doc.OutsideTask)
	}
	return text, nil
}

func (s *execSource) Tag(name string, task uint64) error {
	out, errOut, code := s.run("tag", name, strconv.FormatUint(task, 10))
	_ = out
	if code != 0 {
		return jsonFailure("tag", errOut, code)
	}
	return nil
}

func (s *execSource) Touching(query string) ([]uint64, error) {
	var doc logJSON
	if err := s.runJSON(&doc, "log", "--touching", query); err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(doc.Tasks))
	for _, t := range doc.Tasks {
		ids = append(ids, t.ID)
	}
	return ids, nil
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// tasksTouching keeps the tasks whose layer changed a path containing q.
func tasksTouching(j *journal.Journal, list []taskJSON, q string) ([]taskJSON, error) {
	out := []taskJSON{}
	for _, t := range list {
		changes, err := j.Layer(tasks.ID(t.ID))
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			if strings.Contains(c.Path, q) {
				out = append(out, t)
				break
			}
		}
	}
	return out, nil
}

// confirmError is a move refused until the user confirms it (drift, an
// interrupted session's tasks). Under --json its error document says so:
// "confirm": true, with the drifted paths, so a program (the menu) can ask
// and repeat the command with --yes.
type confirmError struct {
	err     error
	drifted []string
	outside uint64
}

func (e *confirmError) Error() string { return e.err.Error() }
func (e *confirmError) Unwrap() error { return e.err }

// needsConfirm marks a drift refusal as a confirmError; other errors pass.
func needsConfirm(err error, res cow.TransitionResult) error {
	if !errors.Is(err, cow.ErrDrift) {
		return err
	}
	ce := &confirmError{err: err, drifted: []string{}, outside: uint64(res.Outside)}
	for _, d := range res.Drifted {
		ce.drifted = append(ce.drifted, d.Path)
	}
	return ce
}

// jsonErrorDoc is the error document of --json commands on stderr.
type jsonErrorDoc struct {
	SchemaVersion int    `json:"schemaVersion"`
	Error         string `json:"error"`
	// Confirm: the command is refused until confirmed with --yes.
	Confirm bool     `json:"confirm,omitempty"`
	Drifted []string `json:"drifted,omitempty"`
	// OutsideTask keeps the drifted content, when it was recorded.
	OutsideTask uint64 `json:"outsideTask,omitempty"`
}

// writeJSONErrorOf prints err's JSON error document.
func writeJSONErrorOf(w io.Writer, msg string, err error) {
	var ce *confirmError
	if !errors.As(err, &ce) {
		writeJSONError(w, msg)
		return
	}
	writeJSON(w, jsonErrorDoc{SchemaVersion: schemaVersion, Error: msg, Confirm: true, Drifted: ce.drifted, OutsideTask: ce.outside})
}
