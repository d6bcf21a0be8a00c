package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/timeagent-dev/timeagent/tasks"
)

// Agent names a supported coding agent.
type Agent string

// The supported agents.
const (
	Claude Agent = "claude"
	Codex  Agent = "codex"
	Gemini Agent = "gemini"
)

// Agents lists the supported agents.
var Agents = []Agent{Claude, Codex, Gemini}

// ParseAgent checks an agent name.
func ParseAgent(s string) (Agent, error) {
	for _, a := range Agents {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown agent %q: want claude, codex or gemini", s)
}

// Kind is what an agent's hook event means to timeagent.
type Kind string

// Event kinds.
const (
	KindPrompt  Kind = "prompt"   // a user prompt arrives: a new task
	KindStop    Kind = "stop"     // the agent's turn ended
	KindPreTool Kind = "pre-tool" // a tool is about to run
	KindOther   Kind = ""         // anything else: nothing to do
)

// Events are the hook events timeagent installs, per agent, in the order
// they are written to the agent's settings.
var Events = map[Agent][]string{
	Claude: {"UserPromptSubmit", "Stop", "PreToolUse"},
	Codex:  {"UserPromptSubmit", "Stop", "PreToolUse"},
	Gemini: {"BeforeAgent", "AfterAgent", "BeforeTool"},
}

// KindOf maps an agent's event name (or prompt, stop, pre-tool) to its kind.
func KindOf(agent Agent, event string) Kind {
	switch event {
	case string(KindPrompt):
		return KindPrompt
	case string(KindStop):
		return KindStop
	case string(KindPreTool):
		return KindPreTool
	}
	if agent == Gemini {
		switch event {
		case "BeforeAgent":
			return KindPrompt
		case "AfterAgent":
			return KindStop
		case "BeforeTool":
			return KindPreTool
		}
		return KindOther
	}
	switch event {
	case "UserPromptSubmit":
		return KindPrompt
	case "Stop":
		return KindStop
	case "PreToolUse":
		return KindPreTool
	}
	return KindOther
}

// Event is the JSON an agent writes to a hook's stdin (the fields timeagent
// reads; the agents add more).
type Event struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	Prompt        string          `json:"prompt"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// ParseEvent decodes a hook's stdin.
func ParseEvent(data []byte) (Event, error) {
	var ev Event
	if len(strings.TrimSpace(string(data))) == 0 {
		return ev, fmt.Errorf("read hook event: empty stdin")
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, fmt.Errorf("read hook event: %w", err)
	}
	return ev, nil
}

// shellTools are the tool names under which the agents run a shell command.
var shellTools = map[string]bool{
	"Bash": true, "run_shell_command": true, "shell": true, "exec_command": true, "local_shell": true,
}

// ShellCommand returns the command line of a shell tool call, or "" for any
// other tool (Codex's apply_patch carries the patch in tool_input.command).
func (ev Event) ShellCommand() string {
	if !shellTools[ev.ToolName] || len(ev.ToolInput) == 0 {
		return ""
	}
	var in struct {
		Command json.RawMessage `json:"command"`
		Cmd     json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal(ev.ToolInput, &in) != nil {
		return ""
	}
	raw := in.Command
	if len(raw) == 0 {
		raw = in.Cmd
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		// ["bash", "-lc", "LINE"]: the line is what runs.
		if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
			return argv[2]
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// hookContextOpen and hookContextClose delimit the context Gemini prepends
// to a prompt (`<hook_context>…</hook_context>\n\nPROMPT`).
const (
	hookContextOpen  = "<hook_context>"
	hookContextClose = "</hook_context>"
)

// PromptSummary is the summary of a task opened by a user prompt: Gemini's
// leading <hook_context> blocks stripped, runs of white space folded into
// one space, trimmed, cut to tasks.SummaryMax runes.
func PromptSummary(prompt string) string {
	s := strings.TrimLeftFunc(prompt, unicode.IsSpace)
	for strings.HasPrefix(s, hookContextOpen) {
		end := strings.Index(s, hookContextClose)
		if end < 0 {
			break
		}
		s = strings.TrimLeftFunc(s[end+len(hookContextClose):], unicode.IsSpace)
	}
	return tasks.Summarize(strings.Join(strings.Fields(s), " "))
}
