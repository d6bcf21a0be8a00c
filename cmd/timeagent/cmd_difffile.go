package main

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/session"
)

// Errors of diff-file path validation, each with its own message.
var (
	errAbsPath     = errors.New("is an absolute path: give the path relative to the repository root")
	errTraversal   = errors.New("leaves the repository root (..): give a path inside the root")
	errStatePath   = errors.New("is inside timeagent's state directory, which is not part of the repository")
	errSymlinkOut  = errors.New("goes through a symlink that points outside the repository root")
	errNotChanged  = errors.New("was not changed in this diff: `timeagent diff` lists the changed paths")
	errEmptyPath   = errors.New("is empty: give the path of a changed file relative to the repository root")
	errInvalidPath = errors.New("is not a valid path")
)

type sideJSON struct {
	nodeJSON
	Available bool    `json:"available"`
	Binary    bool    `json:"binary"`
	Text      *string `json:"text"`
	// TimeAgent's.
	Exists            bool    `json:"exists"`
	ContentAvailable  bool    `json:"contentAvailable"`
	UnavailableReason *string `json:"unavailableReason"`
	Content           *string `json:"content"`
}

type diffFileJSON struct {
	SchemaVersion int      `json:"schemaVersion"`
	Path          string   `json:"path"`
	Change        string   `json:"change"`
	From          uint64   `json:"from"`
	To            uint64   `json:"to"`
	Before        sideJSON `json:"before"`
	After         sideJSON `json:"after"`
	// TimeAgent's.
	ChangeType   string         `json:"changeType"`
	SessionState string         `json:"sessionState"`
	Warning      *taWarningJSON `json:"warning"`
	Binary       bool           `json:"binary"`
}

func (a *app) diffFileCommand() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff-file PATH --json",
		Short: "Print the before and after text of one changed file as JSON",
		Example: `  timeagent diff-file src/main.go --json
  timeagent diff-file README.md --task 2 --json`,
		Args: nArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withWorkspace("diff-file", func(ws *session.Workspace) error { return a.runDiffFile(ws, o, args[0]) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&a.json, "json", false, "print JSON (schemaVersion 1; the only output format)")
	a.taskVar(cmd, &o.task, "task", "look in one task's own changes (a task id or tag name)")
	a.taskVar(cmd, &o.from, "from", "compare from this task (0 = the base)")
	a.taskVar(cmd, &o.to, "to", "compare to this task")
	cmd.MarkFlagsMutuallyExclusive("task", "from")
	cmd.MarkFlagsRequiredTogether("from", "to")
	return cmd
}

// cleanRelPath validates a user-given path and returns it slash-separated
// and relative to the root.
func cleanRelPath(root, stateDir, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("path %q %w", p, errEmptyPath)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q %w", p, errInvalidPath)
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("path %q %w", p, errAbsPath)
	}
	slash := filepath.ToSlash(p)
	for _, part := range strings.Split(slash, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q %w", p, errTraversal)
		}
	}
	clean := path.Clean(slash)
	if clean == "." {
		return "", fmt.Errorf("path %q %w", p, errEmptyPath)
	}
	// The root's own state dir and the base holding every root's state.
	dirs := []string{stateDir}
	if base, err := session.BaseStateDir(); err == nil {
		dirs = append(dirs, base)
	}
	for _, sd := range dirs {
		if !session.InsideRoot(root, sd) {
			continue
		}
		rel, _ := filepath.Rel(root, sd)
		rel = filepath.ToSlash(rel)
		if rel != "." && (clean == rel || strings.HasPrefix(clean, rel+"/")) {
			return "", fmt.Errorf("path %q %w", p, errStatePath)
		}
	}
	// Every directory on the way must resolve inside the root. The file
	// itself may be a symlink: it is reported as a link, never followed.
	// The longest existing prefix is checked (a deleted directory may sit
	// below a symlink).
	for d := path.Dir(clean); d != "."; d = path.Dir(d) {
		real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			continue
		}
		if !session.InsideRoot(root, real) {
			return "", fmt.Errorf("path %q %w", p, errSymlinkOut)
		}
		break
	}
	return clean, nil
}

func (a *app) runDiffFile(ws *session.Workspace, o diffOptions, p string) error {
	rel, err := cleanRelPath(ws.Root, ws.StateDir, p)
	if err != nil {
		return err
	}
	sel, changes, err := a.selectChanges(ws, o)
	if err != nil {
		return err
	}
	var found *journal.Change
	for i := range changes {
		if changes[i].Path == rel {
			found = &changes[i]
			break
		}
	}
	if found == nil {
		return fmt.Errorf("path %q %w", p, errNotChanged)
	}
	out := diffFileJSON{SchemaVersion: schemaVersion, Path: rel, Change: changeKind(*found), From: sel.From, To: sel.To,
		ChangeType: taChangeType(*found)}
	out.SessionState, out.Warning = taWarning(sel.Interrupted)
	if out.Before, err = a.side(ws.Journal, found.Before); err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if out.After, err = a.side(ws.Journal, found.After); err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	out.Binary = out.Before.Binary || out.After.Binary
	return writeJSON(a.io.out, out)
}

func (a *app) side(j *journal.Journal, s journal.NodeState) (sideJSON, error) {
	out := sideJSON{nodeJSON: toNodeJSON(s)}
	text, ok, binary, err := textOf(j, s)
	if err != nil {
		return out, err
	}
	out.Binary = binary
	if s.Kind == journal.Absent {
		out.Available = true
	} else if ok {
		t := string(text)
		out.Text = &t
		out.Available = true
	}
	out.fillTA02(s, s.Kind == journal.File && s.Size > textLimit)
	return out, nil
}
