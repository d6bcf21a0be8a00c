package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClient is a go-sdk client connected to `timeagent mcp` started in the
// root with the env's environment.
type mcpClient struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func (e *env) mcp(args ...string) *mcpClient {
	e.t.Helper()
	return e.mcpIn(e.root, args...)
}

// mcpIn starts `timeagent mcp ARGS` in dir.
func (e *env) mcpIn(dir string, args ...string) *mcpClient {
	e.t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = e.baseEnv()
	c := mcp.NewClient(&mcp.Implementation{Name: "timeagent-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatalf("connect to timeagent mcp: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return &mcpClient{t: e.t, cs: cs}
}

// call calls a tool; out (if not nil) receives its structured result.
func (c *mcpClient) call(name string, args map[string]any, out any) *mcp.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	if out != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s: structured result %s: %v", name, b, err)
		}
	}
	return res
}

// ok calls a tool and fails the test on a tool error.
func (c *mcpClient) ok(name string, args map[string]any, out any) string {
	c.t.Helper()
	res := c.call(name, args, out)
	if res.IsError {
		c.t.Fatalf("%s %v: tool error: %s", name, args, resultText(res))
	}
	return resultText(res)
}

// fails calls a tool and fails the test unless it is a tool error; it
// returns the error's text.
func (c *mcpClient) fails(name string, args map[string]any) string {
	c.t.Helper()
	res := c.call(name, args, nil)
	if !res.IsError {
		c.t.Fatalf("%s %v: want a tool error, got: %s", name, args, resultText(res))
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// twoTasks records two sessions (one task each) and returns the manifests
// before the first, after the first and after the second.
func twoTasks(e *env, mode string) (m0, m1, m2 string) {
	e.write("a.txt", "base\n", 0o644)
	m0 = e.manifest()
	e.sh(mode, `echo one > a.txt; echo keep > k.txt`)
	m1 = e.manifest()
	e.sh(mode, `echo two > a.txt; echo b > b.txt; rm k.txt`)
	m2 = e.manifest()
	return m0, m1, m2
}

// TestMCPTools drives `timeagent mcp` over stdio with the go-sdk client
// outside a session: the tools and their annotations, list_tasks after two
// tasks, undo/redo/switch restoring byte for byte, diff_task, status, and
// bad arguments answered as tool errors by a server that keeps serving.
func TestMCPTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m0, m1, m2 := twoTasks(e, "copy")
	c := e.mcp()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"list_tasks", "status", "diff_task"} {
		tool := byName[name]
		if tool == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
			t.Fatalf("%s: want a read-only tool with an output schema: %+v", name, tool)
		}
	}
	for _, name := range []string{"undo_task", "redo_task", "switch_task"} {
		tool := byName[name]
		if tool == nil || tool.Annotations == nil || tool.Annotations.ReadOnlyHint ||
			tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint || tool.OutputSchema == nil {
			t.Fatalf("%s: want a destructive tool with an output schema: %+v", name, tool)
		}
	}
	for _, name := range []string{"checkpoint", "tag"} {
		tool := byName[name]
		if tool == nil || tool.Annotations == nil || tool.Annotations.ReadOnlyHint ||
			tool.Annotations.DestructiveHint == nil || *tool.Annotations.DestructiveHint {
			t.Fatalf("%s: want a non-destructive writing tool: %+v", name, tool)
		}
	}

	var l logDoc
	start := time.Now()
	for i := 0; i < 10; i++ {
		c.ok("list_tasks", nil, &l)
	}
	t.Logf("list_tasks outside a session: %v per call", time.Since(start)/10)
	text := c.ok("list_tasks", nil, &l)
	if len(l.Tasks) != 2 || l.ActiveTask != 2 || l.Tasks[0].Files != 2 || l.Tasks[1].Files != 3 {
		t.Fatalf("list_tasks: %+v", l)
	}
	t.Logf("list_tasks:\n%s", text)
	contains(t, "list_tasks text", text, "task 1", "task 2", "sh -c", "active")

	var mv struct {
		Action string `json:"action"`
		From   uint64 `json:"from"`
		To     uint64 `json:"to"`
	}
	text = c.ok("undo_task", nil, &mv)
	if mv.Action != "undo" || mv.From != 2 || mv.To != 1 {
		t.Fatalf("undo_task: %+v", mv)
	}
	contains(t, "undo_task text", text, "task 2", "task 1")
	sameManifest(t, "after undo_task", m1, e.manifest())
	c.ok("redo_task", nil, &mv)
	if mv.To != 2 {
		t.Fatalf("redo_task: %+v", mv)
	}
	sameManifest(t, "after redo_task", m2, e.manifest())
	c.ok("switch_task", map[string]any{"task": 0}, &mv)
	sameManifest(t, "after switch_task 0", m0, e.manifest())
	c.ok("redo_task", map[string]any{"count": 2}, &mv)
	sameManifest(t, "after redo_task 2", m2, e.manifest())
	c.ok("tag", map[string]any{"name": "first", "task": 1}, nil)
	c.ok("switch_task", map[string]any{"tag": "first"}, &mv)
	if mv.To != 1 {
		t.Fatalf("switch_task to a tag: %+v", mv)
	}
	sameManifest(t, "after switch_task first", m1, e.manifest())
	c.ok("switch_task", map[string]any{"task": 2}, nil)

	var d diffDoc
	text = c.ok("diff_task", map[string]any{"task": 2}, &d)
	if d.From != 1 || d.To != 2 || len(d.Changes) != 3 {
		t.Fatalf("diff_task: %+v", d)
	}
	t.Logf("diff_task:\n%s", text)
	contains(t, "diff_task text", text, "a.txt", "b.txt", "k.txt", "-one", "+two", "+b")
	text = c.ok("diff_task", nil, &d) // the active task
	if d.To != 2 || !strings.HasPrefix(text, "task 2 (from task 1)") {
		t.Fatalf("diff_task of the active task: %+v", d)
	}

	var st statusDoc
	text = c.ok("status", nil, &st)
	if st.State != "completed" || st.ActiveTask != 2 {
		t.Fatalf("status: %+v", st)
	}
	contains(t, "status text", text, "task 2", "completed")

	// Bad arguments: tool errors naming the problem; the server serves on.
	for _, bad := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"undo_task", map[string]any{"count": "x"}, "count"},
		{"undo_task", map[string]any{"count": 0}, "count"},
		{"undo_task", map[string]any{"count": 5}, "undo"},
		{"switch_task", map[string]any{"task": 99}, "99"},
		{"switch_task", map[string]any{}, "task"},
		{"switch_task", map[string]any{"tag": "nope"}, "nope"},
		{"diff_task", map[string]any{"task": 42}, "42"},
		{"checkpoint", nil, "no session is running"},
	} {
		msg := c.fails(bad.tool, bad.args)
		contains(t, bad.tool+" error", msg, bad.want)
	}
	// An unknown tool is a protocol error (the SDK's), not a crash.
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Fatalf("unknown tool: %v", err)
	}
	sameManifest(t, "after the errors", m2, e.manifest())
	c.ok("list_tasks", nil, &l)
	if l.ActiveTask != 2 {
		t.Fatalf("after the errors: %+v", l)
	}
}

// TestMCPDrift: a move over the user's later edits is refused with an
// explanation that names the file and the way out, and leaves the tree
// unchanged byte for byte; with force it moves, keeping the edit as an
// outside task.
func TestMCPDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, m1, _ := twoTasks(e, "copy")
	e.write("a.txt", "the user's edit\n", 0o644)
	edited := e.manifest()
	c := e.mcp()
	msg := c.fails("undo_task", nil)
	t.Logf("refusal:\n%s", msg)
	contains(t, "refusal", msg, "a.txt", "changed since", "force")
	if strings.Contains(msg, "--yes") {
		t.Fatalf("the refusal points the model at a CLI flag:\n%s", msg)
	}
	sameManifest(t, "after the refused undo_task", edited, e.manifest())
	var mv struct {
		To          uint64 `json:"to"`
		OutsideTask uint64 `json:"outsideTask"`
	}
	text := c.ok("undo_task", map[string]any{"force": true}, &mv)
	if mv.To != 1 || mv.OutsideTask == 0 {
		t.Fatalf("undo_task force: %+v", mv)
	}
	contains(t, "forced undo text", text, "a.txt", "switch_task")
	sameManifest(t, "after undo_task force", m1, e.manifest())
	c.ok("switch_task", map[string]any{"task": mv.OutsideTask}, nil)
	sameManifest(t, "back at the user's edit", edited, e.manifest())
}

// TestMCPInSession: during a fuse session the tools go through the control
// channel: an undo_task changes what the session's view shows at once, a
// checkpoint closes the task, and a refused move leaves the view as it was.
func TestMCPInSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "base\n", 0o644)
	b := startBgSession(t, e, "fuse", `echo one > a.txt; "$TA" checkpoint -m second; echo two > a.txt; echo b > b.txt; touch "$SCRATCH/written"`)
	waitFor(t, "the agent's writes", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "written")) })
	c := e.mcp()
	var st statusDoc
	start := time.Now()
	for i := 0; i < 10; i++ {
		c.ok("status", nil, &st)
	}
	t.Logf("status during a fuse session: %v per call", time.Since(start)/10)
	if st.State != "active" {
		t.Fatalf("status during the session: %+v", st)
	}
	var l logDoc
	c.ok("list_tasks", nil, &l)
	if len(l.Tasks) == 0 {
		t.Fatalf("list_tasks during the session: %+v", l)
	}
	var mv struct {
		From uint64 `json:"from"`
		To   uint64 `json:"to"`
	}
	c.ok("undo_task", nil, &mv)
	if mv.From != 2 || mv.To != 1 {
		t.Fatalf("undo_task in the session: %+v", mv)
	}
	if got := e.read("a.txt"); got != "one\n" || exists(e.path("b.txt")) {
		t.Fatalf("right after undo_task the view shows a.txt %q, b.txt exists %v", got, exists(e.path("b.txt")))
	}
	c.ok("redo_task", nil, &mv)
	if got := e.read("a.txt"); got != "two\n" || e.read("b.txt") != "b\n" {
		t.Fatalf("right after redo_task the view shows a.txt %q", got)
	}
	var cp struct {
		Sealed uint64 `json:"sealed"`
		Task   uint64 `json:"task"`
	}
	c.ok("checkpoint", map[string]any{"summary": "third"}, &cp)
	if cp.Task == 0 || cp.Task == cp.Sealed {
		t.Fatalf("checkpoint: %+v", cp)
	}
	b.end(t)
	if got := e.read("a.txt"); got != "two\n" {
		t.Fatalf("after the session a.txt is %q", got)
	}
}

// TestMCPRootFlag: a server started elsewhere serves the root named by
// --root; without a root (a plain directory) every tool says how to name one.
func TestMCPRootFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, m1, _ := twoTasks(e, "copy")
	c := e.mcpIn(e.scratch, "--root", e.root)
	var l logDoc
	c.ok("list_tasks", nil, &l)
	if len(l.Tasks) != 2 {
		t.Fatalf("list_tasks with --root: %+v", l)
	}
	c.ok("undo_task", nil, nil)
	sameManifest(t, "undo_task with --root", m1, e.manifest())
	msg := e.mcpIn(e.scratch).fails("list_tasks", nil)
	contains(t, "no root", msg, "--root")
}

// TestMCPInSessionDrift: during a fuse session an undo_task across a file
// the user edited after its task ended is refused in the tools' words and
// leaves the view as it was; with force the view moves and the edit stays
// reachable.
func TestMCPInSessionDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("f.txt", "base\n", 0o644)
	e.sh("fuse", `echo agent > f.txt`)
	e.write("f.txt", "user\n", 0o644)
	startBgSession(t, e, "fuse", `echo two > g.txt; touch "$SCRATCH/written"`)
	waitFor(t, "the agent's writes", 30*time.Second, func() bool { return exists(filepath.Join(e.scratch, "written")) })
	c := e.mcp()
	msg := c.fails("undo_task", map[string]any{"count": 2})
	t.Logf("refusal in a session:\n%s", msg)
	contains(t, "refusal in a session", msg, "f.txt", "force: true")
	if strings.Contains(msg, "--yes") {
		t.Fatalf("the refusal points the model at a CLI flag:\n%s", msg)
	}
	if got := e.read("f.txt"); got != "user\n" || e.read("g.txt") != "two\n" {
		t.Fatalf("after the refused undo_task the view shows f.txt %q", got)
	}
	var mv struct {
		To uint64 `json:"to"`
	}
	c.ok("undo_task", map[string]any{"count": 2, "force": true}, &mv)
	if got := e.read("f.txt"); got != "base\n" || exists(e.path("g.txt")) {
		t.Fatalf("after undo_task force the view shows f.txt %q", got)
	}
}
