package hooks

import (
	"strings"
	"testing"
)

func TestPromptSummary(t *testing.T) {
	long := strings.Repeat("é", 100)
	tests := []struct{ name, in, want string }{
		{"plain", "Part one: tidy up and record a note.", "Part one: tidy up and record a note."},
		{"folded", "  fix\tthe\n\n  login   form \r\n", "fix the login form"},
		{"80 runes", long, strings.Repeat("é", 80)},
		{"80 runes after folding", strings.Repeat("ab ", 40) + "tail", strings.TrimSpace(strings.Repeat("ab ", 27))[:80]},
		{"gemini context", "<hook_context>HOOKCTX:gemini:SessionStart</hook_context>\n\nPart one: tidy up.", "Part one: tidy up."},
		{"two contexts", "<hook_context>a</hook_context>\n<hook_context>b\nc</hook_context>\n\nDo it", "Do it"},
		{"context not first", "Do <hook_context>x</hook_context> it", "Do <hook_context>x</hook_context> it"},
		{"unclosed context", "<hook_context>x", "<hook_context>x"},
		{"empty", " \n\t", ""},
		{"emoji", strings.Repeat("👍", 81), strings.Repeat("👍", 80)},
	}
	for _, tc := range tests {
		if got := PromptSummary(tc.in); got != tc.want {
			t.Errorf("%s: PromptSummary(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		agent Agent
		event string
		want  Kind
	}{
		{Claude, "UserPromptSubmit", KindPrompt}, {Claude, "Stop", KindStop}, {Claude, "PreToolUse", KindPreTool},
		{Codex, "UserPromptSubmit", KindPrompt}, {Codex, "Stop", KindStop}, {Codex, "PreToolUse", KindPreTool},
		{Gemini, "BeforeAgent", KindPrompt}, {Gemini, "AfterAgent", KindStop}, {Gemini, "BeforeTool", KindPreTool},
		{Gemini, "UserPromptSubmit", KindOther}, {Claude, "BeforeAgent", KindOther}, {Claude, "SessionStart", KindOther},
		{Codex, "prompt", KindPrompt},
	}
	for _, tc := range tests {
		if got := KindOf(tc.agent, tc.event); got != tc.want {
			t.Errorf("KindOf(%s, %s) = %q, want %q", tc.agent, tc.event, got, tc.want)
		}
	}
}

func TestShellCommand(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"tool_name":"Bash","tool_input":{"command":"terraform apply","description":"x"}}`, "terraform apply"},
		{`{"tool_name":"run_shell_command","tool_input":{"command":"npm publish","dir_path":"."}}`, "npm publish"},
		{`{"tool_name":"shell","tool_input":{"command":["bash","-lc","git push"]}}`, "git push"},
		{`{"tool_name":"exec_command","tool_input":{"cmd":"ls"}}`, "ls"},
		{`{"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch"}}`, ""},
		{`{"tool_name":"Write","tool_input":{"file_path":"/a"}}`, ""},
	}
	for _, tc := range tests {
		ev, err := ParseEvent([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.ShellCommand(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClassifyLine(t *testing.T) {
	tests := []struct {
		line string
		risk string // highest; "" none
		tool string
	}{
		{"terraform apply -auto-approve", "critical", "terraform"},
		{"cd infra && terraform apply", "critical", "terraform"},
		{"/usr/local/bin/terraform apply", "critical", "terraform"},
		{"TF_LOG=debug sudo -E terraform apply", "critical", "terraform"},
		{`bash -lc 'cd x; npm publish'`, "high", "npm"},
		{"echo $(npm publish)", "high", "npm"},
		{"ls -la; echo 'terraform apply'", "", ""},
		{"make test 2>&1 | tail -5", "", ""},
		{"npm ls", "low", "npm"},
		{"terraform plan > out.txt", "low", "terraform"},
	}
	for _, tc := range tests {
		c, ok := Highest(ClassifyLine(tc.line, "/tmp", "/tmp"))
		if tc.risk == "" {
			if ok {
				t.Errorf("%q: classified %+v, want nothing", tc.line, c)
			}
			continue
		}
		if !ok || c.Risk != tc.risk || c.Argv[0] != tc.tool {
			t.Errorf("%q: got %+v (%v), want %s %s", tc.line, c, ok, tc.tool, tc.risk)
		}
	}
}
