package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/internal/plural"
)

// mcpPatchLimit bounds the patch text diff_task shows the model; the
// structured result always lists every change.
const mcpPatchLimit = 32 << 10

const mcpInstructions = `timeagent records every write made to this repository's files (including
untracked and ignored files and .git/) as a tree of tasks. list_tasks shows the tree,
diff_task one task's changes; undo_task, redo_task and switch_task move the files to
another task's state byte for byte (during a timeagent session your view of the files
changes at once). A move never overwrites files edited after their task ended (most
likely by the user): it is refused and names them; ask the user before calling again
with force: true, which keeps their content as a separate task first.`

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the task history to a coding agent as an MCP server on stdin/stdout",
		Example: `  timeagent mcp                # serve MCP on stdin and stdout
  timeagent integrate claude   # register it (and the hooks) with Claude Code`,
		Long: `mcp is a Model Context Protocol server on stdin/stdout for the agent working in this
root (the working directory, -C DIR or --root DIR): tools list_tasks, diff_task, status,
undo_task, redo_task, switch_task, checkpoint and tag. During a session the tools go to
it like the commands do; a move obeys the drift rule (refused over later edits unless
the tool is called with force).`,
		Args: nArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := newMCPServer(a.cwd, a.root)
			if err := s.Run(cmd.Context(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("mcp: serve on stdin/stdout: %w", err)
			}
			return nil
		},
	}
}

// mcpTools runs the tools' commands in this process, one at a time, as the
// CLI would run them in dir (forwarded to a running session like any
// command).
type mcpTools struct {
	mu     sync.Mutex
	global []string // -C DIR [--root ROOT]
}

func newMCPServer(dir, root string) *mcp.Server {
	m := &mcpTools{global: []string{"-C", dir}}
	if root != "" {
		if !filepath.IsAbs(root) {
			root = filepath.Join(dir, root)
		}
		m.global = append(m.global, "--root", root)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "timeagent", Title: "timeagent", Version: version},
		&mcp.ServerOptions{Instructions: mcpInstructions})
	f := false
	t := true
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f}
	mcp.AddTool(s, &mcp.Tool{Name: "list_tasks", Title: "List tasks",
		Description: "List the task tree: every task's id, parent, summary, status (past, current = where the files are, future = redoable, other = another branch), files and tags.",
		Annotations: readOnly}, m.listTasks)
	mcp.AddTool(s, &mcp.Tool{Name: "status", Title: "Status",
		Description: "Show the latest session's state (active, completed, interrupted) and which task the files are at.",
		Annotations: readOnly}, m.status)
	mcp.AddTool(s, &mcp.Tool{Name: "diff_task", Title: "Diff a task",
		Description: "Show one task's own changes (default: the task the files are at) as a list and a git patch.",
		Annotations: readOnly}, m.diffTask)
	mcp.AddTool(s, &mcp.Tool{Name: "undo_task", Title: "Undo tasks",
		Description: "Move the files back count tasks (default 1), restoring them byte for byte. Refused over files edited after their task ended unless force is true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &t, OpenWorldHint: &f}}, m.undoTask)
	mcp.AddTool(s, &mcp.Tool{Name: "redo_task", Title: "Redo tasks",
		Description: "Move the files forward count tasks (default 1) along the most recently visited branch. Refused over files edited after their task ended unless force is true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &t, OpenWorldHint: &f}}, m.redoTask)
	mcp.AddTool(s, &mcp.Tool{Name: "switch_task", Title: "Switch to a task",
		Description: "Move the files to any task of the tree (task id from list_tasks, 0 = before the first task, or a tag name). Refused over files edited after their task ended unless force is true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f}}, m.switchTask)
	mcp.AddTool(s, &mcp.Tool{Name: "checkpoint", Title: "Checkpoint",
		Description: "During a timeagent session: close the current task and start the next, with an optional summary.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f}}, m.checkpoint)
	mcp.AddTool(s, &mcp.Tool{Name: "tag", Title: "Tag a task",
		Description: "Name a task (default: the task the files are at) so that switch_task can go to it by name. An existing name moves only with force.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}}, m.tag)
	return s
}

// run runs one timeagent command line in this process and returns its
// stdout, or an error carrying what it said on stderr, in the tools'
// words. It never panics.
func (m *mcpTools) run(args ...string) (stdout string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out, errb bytes.Buffer
	code := 1
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(&errb, "timeagent: internal error in %s: %v\n", args[0], p)
				code = 1
			}
		}()
		code = execute(append(append([]string{}, m.global...), args...), stdio{in: strings.NewReader(""), out: &out, err: &errb}, nil)
	}()
	if code != 0 {
		return out.String(), errors.New(toolWords(errorText(errb.String())))
	}
	return out.String(), nil
}

// runJSON runs a command with --json and decodes its document into v.
func (m *mcpTools) runJSON(v any, args ...string) error {
	out, err := m.run(append(args, "--json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("read the output of timeagent %s: %w", args[0], err)
	}
	return nil
}

// errorText turns a --json command's stderr (plain notes, then the error
// document) into plain lines.
func errorText(stderr string) string {
	var lines []string
	if i := strings.LastIndex(stderr, "{\n"); i >= 0 {
		var doc struct {
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(stderr[i:]), &doc) == nil && doc.Error != "" {
			lines = append(strings.Split(strings.TrimSpace(stderr[:i]), "\n"), doc.Error)
		}
	}
	if lines == nil {
		lines = strings.Split(strings.TrimSpace(stderr), "\n")
	}
	var b strings.Builder
	for _, l := range lines {
		if l = strings.TrimPrefix(l, "timeagent: "); strings.TrimSpace(l) != "" {
			b.WriteString(l + "\n")
		}
	}
	if b.Len() == 0 {
		return "the command failed without saying why"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// toolWords replaces the CLI's hints with the tools' own.
var toolWords = strings.NewReplacer(
	"run it on a terminal to confirm, or pass --yes", "ask the user, then call again with force: true to move over them",
	"pass --yes to move over them", "ask the user, then call again with force: true to move over them",
	"pass --yes to confirm", "ask the user, then call again with force: true",
	"timeagent log", "list_tasks",
	"timeagent switch", "switch_task",
	"timeagent tag", "tag",
).Replace

// Tool arguments.

type mcpNoArgs struct{}

type mcpMoveArgs struct {
	Count *int `json:"count,omitempty" jsonschema:"how many tasks to move (default 1)"`
	Force bool `json:"force,omitempty" jsonschema:"move even over files edited after their task ended (their content is kept as a separate task first); only after the user agreed"`
}

type mcpSwitchArgs struct {
	Task  *uint64 `json:"task,omitempty" jsonschema:"the task id from list_tasks (0 = before the first task)"`
	Tag   string  `json:"tag,omitempty" jsonschema:"a tag name, instead of task"`
	Force bool    `json:"force,omitempty" jsonschema:"move even over files edited after their task ended (their content is kept as a separate task first); only after the user agreed"`
}

type mcpDiffArgs struct {
	Task *uint64 `json:"task,omitempty" jsonschema:"the task id (default: the task the files are at)"`
}

type mcpCheckpointArgs struct {
	Summary string `json:"summary,omitempty" jsonschema:"summary of the task that starts now"`
}

type mcpTagArgs struct {
	Name  string  `json:"name" jsonschema:"the tag name (no whitespace, not all digits)"`
	Task  *uint64 `json:"task,omitempty" jsonschema:"the task to name (default: the task the files are at)"`
	Force bool    `json:"force,omitempty" jsonschema:"move the name when it already names another task"`
}

// Tool results.

type mcpCheckpointResult struct {
	SchemaVersion int    `json:"schemaVersion"`
	Sealed        uint64 `json:"sealed" jsonschema:"the task closed"`
	Task          uint64 `json:"task" jsonschema:"the task started"`
}

type mcpTagResult struct {
	Name string `json:"name"`
	Task uint64 `json:"task"`
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (m *mcpTools) listTasks(_ context.Context, _ *mcp.CallToolRequest, _ mcpNoArgs) (*mcp.CallToolResult, logJSON, error) {
	var l logJSON
	if err := m.runJSON(&l, "log"); err != nil {
		return nil, l, err
	}
	var b strings.Builder
	if len(l.Tasks) == 0 {
		b.WriteString("no tasks yet")
	}
	for _, t := range l.Tasks {
		mark := " "
		if t.ID == l.ActiveTask {
			mark = "→"
		}
		status := t.Status
		if t.ID == l.ActiveTask {
			status = "active: the files are here"
		}
		if t.Kind == "outside" {
			status += ", edits made outside a session"
		}
		fmt.Fprintf(&b, "%s task %d (parent %d, %s, %d files) %s", mark, t.ID, t.Parent, status, t.Files, shortSummary(t.Summary))
		if len(t.Tags) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(t.Tags, ", "))
		}
		b.WriteString("\n")
	}
	if l.ActiveTask == 0 && len(l.Tasks) > 0 {
		b.WriteString("→ the files are at the base (task 0, before the first task)\n")
	}
	return textResult(strings.TrimSuffix(b.String(), "\n")), l, nil
}

// shortSummary quotes a summary cut to 80 runes.
func shortSummary(s string) string {
	if utf8.RuneCountInString(s) > 80 {
		s = string([]rune(s)[:79]) + "…"
	}
	return strconv.Quote(s)
}

func (m *mcpTools) status(_ context.Context, _ *mcp.CallToolRequest, _ mcpNoArgs) (*mcp.CallToolResult, statusJSON, error) {
	var st statusJSON
	if err := m.runJSON(&st, "status"); err != nil {
		return nil, st, err
	}
	var b strings.Builder
	if st.Session == nil || st.Session.ID == 0 {
		fmt.Fprintf(&b, "no session recorded yet")
	} else {
		fmt.Fprintf(&b, "session %d: %s (%s mode)", st.Session.ID, st.State, st.Mode)
	}
	fmt.Fprintf(&b, "; the files are at task %d", st.ActiveTask)
	if st.CurrentTask != st.ActiveTask {
		fmt.Fprintf(&b, " (latest task %d)", st.CurrentTask)
	}
	if st.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", st.Error)
	}
	return textResult(b.String()), st, nil
}

func (m *mcpTools) diffTask(_ context.Context, _ *mcp.CallToolRequest, in mcpDiffArgs) (*mcp.CallToolResult, diffJSON, error) {
	var d diffJSON
	var id uint64
	if in.Task != nil {
		id = *in.Task
	} else {
		var l logJSON
		if err := m.runJSON(&l, "log"); err != nil {
			return nil, d, err
		}
		if l.ActiveTask == 0 {
			return nil, d, errors.New("the files are at the base (before the first task): give the task to show (list_tasks)")
		}
		id = l.ActiveTask
	}
	task := strconv.FormatUint(id, 10)
	if err := m.runJSON(&d, "diff", "--task", task); err != nil {
		return nil, d, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "task %d (from task %d): %s changed\n", d.To, d.From, plural.Count(len(d.Changes), "path"))
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "%-11s %s\n", c.Change, c.Path)
	}
	if len(d.Changes) > 0 {
		patch, err := m.run("diff", "--task", task, "--patch", "--color", "never")
		if err != nil {
			return nil, d, err
		}
		if len(patch) > mcpPatchLimit {
			cut := strings.LastIndexByte(patch[:mcpPatchLimit], '\n') + 1
			patch = patch[:cut] + fmt.Sprintf("… patch cut at %d KiB of %d KiB\n", mcpPatchLimit>>10, len(patch)>>10)
		}
		b.WriteString("\n" + patch)
	}
	return textResult(strings.TrimSuffix(b.String(), "\n")), d, nil
}

func (m *mcpTools) undoTask(_ context.Context, _ *mcp.CallToolRequest, in mcpMoveArgs) (*mcp.CallToolResult, moveJSON, error) {
	return m.move("undo", in.Count, in.Force)
}

func (m *mcpTools) redoTask(_ context.Context, _ *mcp.CallToolRequest, in mcpMoveArgs) (*mcp.CallToolResult, moveJSON, error) {
	return m.move("redo", in.Count, in.Force)
}

func (m *mcpTools) switchTask(_ context.Context, _ *mcp.CallToolRequest, in mcpSwitchArgs) (*mcp.CallToolResult, moveJSON, error) {
	switch {
	case in.Task != nil && in.Tag != "":
		return nil, moveJSON{}, errors.New("give either task or tag, not both")
	case in.Task != nil:
		return m.moveTo("switch", strconv.FormatUint(*in.Task, 10), in.Force)
	case in.Tag != "":
		return m.moveTo("switch", in.Tag, in.Force)
	}
	return nil, moveJSON{}, errors.New("give the task to switch to: task (an id from list_tasks, 0 = before the first task) or tag")
}

func (m *mcpTools) move(action string, count *int, force bool) (*mcp.CallToolResult, moveJSON, error) {
	n := 1
	if count != nil {
		n = *count
	}
	if n < 1 {
		return nil, moveJSON{}, fmt.Errorf("count %d: give a positive number of tasks", n)
	}
	return m.moveTo(action, strconv.Itoa(n), force)
}

func (m *mcpTools) moveTo(action, arg string, force bool) (*mcp.CallToolResult, moveJSON, error) {
	var mv moveJSON
	args := []string{action, arg}
	if force {
		args = append(args, "--yes")
	}
	if err := m.runJSON(&mv, args...); err != nil {
		return nil, mv, fmt.Errorf("%s: %w", action, err)
	}
	text := fmt.Sprintf("%s: the files moved from task %d to task %d (%s written)", action, mv.From, mv.To, plural.Count(mv.Written, "path"))
	if mv.OutsideTask != 0 {
		text += fmt.Sprintf("; the later edits to %s were kept as task %d (switch_task to %d brings them back)",
			strings.Join(mv.Drifted, ", "), mv.OutsideTask, mv.OutsideTask)
	}
	return textResult(text), mv, nil
}

func (m *mcpTools) checkpoint(_ context.Context, _ *mcp.CallToolRequest, in mcpCheckpointArgs) (*mcp.CallToolResult, mcpCheckpointResult, error) {
	var cp mcpCheckpointResult
	args := []string{"checkpoint"}
	if in.Summary != "" {
		args = append(args, "-m", in.Summary)
	}
	if err := m.runJSON(&cp, args...); err != nil {
		return nil, cp, err
	}
	return textResult(fmt.Sprintf("checkpoint: task %d closed, task %d started", cp.Sealed, cp.Task)), cp, nil
}

func (m *mcpTools) tag(_ context.Context, _ *mcp.CallToolRequest, in mcpTagArgs) (*mcp.CallToolResult, mcpTagResult, error) {
	res := mcpTagResult{Name: in.Name}
	if in.Name == "" {
		return nil, res, errors.New("give the tag's name")
	}
	args := []string{"tag"}
	if in.Force {
		args = append(args, "--force")
	}
	args = append(args, "--", in.Name)
	if in.Task != nil {
		args = append(args, strconv.FormatUint(*in.Task, 10))
	}
	out, err := m.run(args...)
	if err != nil {
		return nil, res, err
	}
	var tags tagsJSON
	if err := m.runJSON(&tags, "tag"); err != nil {
		return nil, res, err
	}
	for _, t := range tags.Tags {
		if t.Name == in.Name {
			res.Task = t.Task
		}
	}
	return textResult(strings.TrimSpace(out)), res, nil
}
