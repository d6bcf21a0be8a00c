package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/actions"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

// proxyMain runs the process as a PATH proxy when it was started under a
// proxied tool's name inside a session.
func proxyMain() (int, bool) {
	tool, ok := actions.IsProxyInvocation(os.Args[0])
	if !ok {
		return 0, false
	}
	return actions.RunProxy(tool, os.Args[1:]), true
}

// proxyCommand is the hidden entry point of the Windows .cmd shims.
func (a *app) proxyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "__proxy TOOL [ARGS...]",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               nArgs(1, -1),
		PersistentPreRunE:  func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			if !actions.IsTool(args[0]) {
				return &usageError{fmt.Errorf("__proxy: %q is not a proxied tool", args[0])}
			}
			if code := actions.RunProxy(args[0], args[1:]); code != 0 {
				return &exitError{code}
			}
			return nil
		},
	}
	return cmd
}

func sessionDir(stateDir string, id uint64) string {
	return filepath.Join(stateDir, "sessions", strconv.FormatUint(id, 10))
}

func actionsDir(stateDir string, id uint64) string {
	return filepath.Join(sessionDir(stateDir, id), "actions")
}

// external wires the PATH proxies into a session.
type external struct {
	a             *app
	allowHighRisk bool
}

func newExternal(a *app, allowHighRisk bool) *external {
	return &external{a: a, allowHighRisk: allowHighRisk}
}

func (e *external) prepare(act *session.Active, env []string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the timeagent executable for the PATH proxies: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	dir := sessionDir(act.W.StateDir, act.Session.ID)
	proxy := filepath.Join(dir, "proxy")
	acts := filepath.Join(dir, "actions")
	if err := os.MkdirAll(acts, 0o700); err != nil {
		return nil, fmt.Errorf("create action log %s: %w", acts, err)
	}
	if err := actions.Install(proxy, self, actions.Tools()); err != nil {
		return nil, err
	}
	return actions.Env{ProxyDir: proxy, ActionsDir: acts, Root: act.W.Root, Session: act.Session.ID,
		AllowHighRisk: e.allowHighRisk}.Environ(env), nil
}

func (e *external) finish(act *session.Active) error {
	return ingestSession(act.W, act.Session.ID)
}

// ingestSession moves a session's action records into the journal and
// removes its session directory.
func ingestSession(ws *session.Workspace, id uint64) error {
	dir := actionsDir(ws.StateDir, id)
	list, err := actions.ReadLog(dir)
	if err != nil && !errors.Is(err, actions.ErrDamagedRecord) {
		return err
	}
	if len(list) > 0 {
		if err := ws.Journal.Update(func(tx *journal.Tx) error {
			for _, a := range list {
				a.Session = id
				if err := tx.PutAction(a); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("record actions of session %d: %w", id, err)
		}
	}
	if err != nil {
		return nil // keep damaged records on disk for inspection
	}
	if err := removeTree(dir); err != nil {
		return err
	}
	// The rest is the proxies, which may be hard links to this very
	// executable: Windows lets nobody remove those while it runs. What is
	// left goes at a later command.
	_ = removeTree(sessionDir(ws.StateDir, id))
	return nil
}

// removeTree removes dir and everything below it. os.RemoveAll fails under
// wine (its directory handles do not support unlinkat), so where it fails
// the tree is removed entry by entry with os.Remove, deepest first, each
// made writable first (Windows refuses to remove a read-only file).
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	for i := len(paths) - 1; i >= 0; i-- {
		_ = os.Chmod(paths[i], 0o700) // Windows refuses to remove a read-only file
		if err := os.Remove(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", paths[i], err)
		}
	}
	return nil
}

// ingestPending ingests the action logs of sessions that are no longer
// running (a dead session's proxies kept writing records).
func ingestPending(ws *session.Workspace) error {
	entries, err := os.ReadDir(filepath.Join(ws.StateDir, "sessions"))
	if err != nil {
		return nil
	}
	for _, e := range entries {
		id, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		s, err := ws.Journal.Session(id)
		if err == nil && s.State == journal.SessionActive {
			continue
		}
		if err := ingestSession(ws, id); err != nil {
			return err
		}
	}
	return nil
}

// sessionActions is a session's action log: the journal's records plus the
// records its proxies wrote that are not ingested yet.
func sessionActions(a *app, ws *session.Workspace, id uint64) ([]journal.Action, error) {
	list, err := ws.Journal.Actions(id)
	if err != nil {
		return nil, err
	}
	pending, err := actions.ReadLog(actionsDir(ws.StateDir, id))
	if err != nil && !errors.Is(err, actions.ErrDamagedRecord) {
		return nil, err
	}
	if len(list) == 0 {
		return pending, nil
	}
	return list, nil
}

func countAll(c map[string]map[string]int) int {
	n := 0
	for _, v := range c["risk"] {
		n += v
	}
	return n
}

// formatCounts renders action counts for status: by risk, then by decision.
func formatCounts(c map[string]map[string]int) string {
	var parts []string
	for _, group := range []struct {
		key   string
		order []string
	}{
		{"risk", []string{"critical", "high", "medium", "low", "none"}},
		{"decision", []string{actions.DecisionAllowed, actions.DecisionApproved, actions.DecisionDenied}},
	} {
		for _, k := range group.order {
			if n := c[group.key][k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
	}
	return strings.Join(parts, ", ")
}

type actionsJSON struct {
	SchemaVersion int                       `json:"schemaVersion"`
	Session       uint64                    `json:"session"`
	Note          string                    `json:"note"`
	Redacted      bool                      `json:"redacted"`
	Actions       []taActionJSON            `json:"actions"` // ours, with TimeAgent's fields
	Counts        map[string]map[string]int `json:"counts"`
	Summary       taActionSummaryJSON       `json:"summary"` // TimeAgent's
}

func (a *app) actionsCommand() *cobra.Command {
	var sessionID string
	cmd := &cobra.Command{
		Use:   "actions [--session ID]",
		Short: "Show the external commands (deploys, publishes, pushes…) the latest session's agent ran",
		Example: `  timeagent actions              # the external commands of the latest session
  timeagent actions --session 2  # another session's
  timeagent actions --json`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("actions", func(ws *session.Workspace) error {
				var s journal.Session
				var err error
				if sessionID != "" {
					id, perr := strconv.ParseUint(sessionID, 10, 64)
					if perr != nil {
						return &usageError{fmt.Errorf("invalid session id %q", sessionID)}
					}
					s, err = ws.Journal.Session(id)
					if errors.Is(err, journal.ErrNotFound) {
						return fmt.Errorf("unknown session %d: timeagent status shows the latest", id)
					}
				} else {
					s, err = ws.Journal.LatestSession()
					if errors.Is(err, journal.ErrNotFound) {
						return errors.New("no session recorded yet: run an agent with `timeagent run COMMAND` first")
					}
				}
				if err != nil {
					return err
				}
				list, err := sessionActions(a, ws, s.ID)
				if err != nil {
					return err
				}
				if a.json {
					shown, redacted := actions.RedactActions(list)
					ta := []taActionJSON{}
					for _, act := range shown {
						ta = append(ta, taAction(act))
					}
					return writeJSON(a.io.out, actionsJSON{SchemaVersion: schemaVersion, Session: s.ID,
						Note: actions.Disclaimer, Redacted: redacted, Actions: ta, Counts: actions.Counts(list),
						Summary: taSummarizeActions(list)})
				}
				return actions.Format(a.io.out, escapeActions(list))
			})
		},
	}
	cmd.Flags().Var(&numberFlag{&sessionID, "a session id (a number from timeagent status)"}, "session", "show another session's log")
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1)")
	return cmd
}

// escapeActions returns a copy of list whose argv, executable and
// directory are safe to print (escapeName). A --flag=value argument is
// escaped on each side of the "=", so that redaction still sees the flag.
func escapeActions(list []journal.Action) []journal.Action {
	out := make([]journal.Action, len(list))
	for i, act := range list {
		act.Executable, act.Cwd = escapeName(act.Executable), escapeName(act.Cwd)
		act.Argv = make([]string, len(list[i].Argv))
		for k, s := range list[i].Argv {
			if j := strings.IndexByte(s, '='); j > 0 {
				act.Argv[k] = escapeName(s[:j]) + "=" + escapeName(s[j+1:])
			} else {
				act.Argv[k] = escapeName(s)
			}
		}
		out[i] = act
	}
	return out
}
