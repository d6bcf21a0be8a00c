//go:build linux

package agenttest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// The tests of this file drive what issue 13 adds: `timeagent hook AGENT
// EVENT` run by each client's own hooks (a task per prompt, a note when the
// files moved, the pre-tool refusal), installed by `timeagent integrate
// AGENT --project`, and the MCP server `timeagent mcp`. They skip, saying
// which command is missing, until the binary has them.

// integrate installs timeagent's hooks and MCP server in c's repository
// (timeagent integrate AGENT --project), after checking that timeagent has
// the commands the test needs (it skips the test otherwise).
func (c *client) integrate(cmds ...[]string) {
	c.t.Helper()
	need(c.t, append([][]string{{"hook"}, {"integrate"}}, cmds...)...)
	out := c.ta("integrate", c.name, "--project")
	c.t.Logf("timeagent integrate %s --project:\n%s", c.name, out)
	// Codex runs project hooks only in a trusted project (configure trusts
	// the repository) and exec never asks: the flag runs them.
	c.hookTrust = c.name == "codex"
}

// sessionModes are the ways the hook tests run a client: inside timeagent
// run in both modes, and started directly (the prompt hook captures a copy
// checkpoint).
var sessionModes = []string{"fuse", "copy", "direct"}

// runPrompts runs the client on prompts: directly one invocation each, or
// inside one timeagent run (one resumed agent session per prompt in one
// script). between(i) runs after prompt i (from 0) ends and before the
// next starts, from the test, as another terminal would.
func (c *client) runPrompts(mode string, prompts []string, between func(i int)) {
	c.t.Helper()
	if mode == "direct" {
		for i, p := range prompts {
			c.prompt(p)
			if i+1 < len(prompts) && between != nil {
				between(i)
			}
		}
		return
	}
	start := time.Now()
	r := c.start(append(wrapRun(mode), "sh", c.script(prompts, true))...)
	for i := 0; i+1 < len(prompts); i++ {
		done := filepath.Join(c.dir, fmt.Sprintf("done%d", i))
		deadline := time.Now().Add(clientTimeout)
		for !testrepo.Exists(done) {
			select {
			case <-r.done:
				res := r.wait()
				c.t.Fatalf("%s ended before prompt %d: %s\nmodel requests:\n%s", c.name, i+2, res, c.model.Dump())
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s: prompt %d did not end in %v", c.name, i+1, clientTimeout)
			}
		}
		if between != nil {
			between(i)
		}
		testrepo.WriteFile(c.t, filepath.Join(c.dir, fmt.Sprintf("go%d", i)), nil, 0o644)
	}
	res := r.wait()
	if res.Code != 0 {
		c.t.Fatalf("%s under timeagent run --mode %s: %s\nmodel requests:\n%s", c.name, mode, res, c.model.Dump())
	}
	c.t.Logf("%s, %d prompts inside timeagent run --mode %s: %v", c.name, len(prompts), mode, time.Since(start).Round(time.Millisecond))
}

func twoPromptScript() []Prompt {
	return []Prompt{
		{Key: "PROMPT-ONE", Text: "PROMPT-ONE: write the first file", Steps: []Step{
			{Write: "one.txt", Content: "written for prompt one\n"},
			{Shell: "printf 'one\\n' >> README.md"},
			{Text: "Done: PROMPT-ONE."},
		}},
		{Key: "PROMPT-TWO", Text: "PROMPT-TWO: write the second file", Steps: []Step{
			{Write: "two/two.txt", Content: "written for prompt two\n"},
			{Shell: "printf 'two\\n' >> src/main.go"},
			{Text: "Done: PROMPT-TWO."},
		}},
	}
}

func texts2(ps []Prompt) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Text)
	}
	return out
}

// TestTwoPromptsTwoTasks: each prompt is a task named after it holding
// exactly its files, and undo goes back prompt by prompt byte for byte.
func TestTwoPromptsTwoTasks(t *testing.T) {
	for _, name := range clientNames {
		for _, mode := range sessionModes {
			t.Run(name+"/"+mode, func(t *testing.T) {
				needMode(t, mode)
				start := time.Now()
				script := twoPromptScript()
				c := newClient(t, name, script)
				c.integrate()
				before := c.manifest()
				var mid string
				c.runPrompts(mode, texts2(script), func(int) { mid = c.manifest() })
				doc := c.log()
				var got []string
				for _, tk := range doc.Tasks {
					got = append(got, fmt.Sprintf("%d %q", tk.ID, tk.Summary))
				}
				if len(doc.Tasks) != 2 || doc.Tasks[0].Summary != script[0].Text || doc.Tasks[1].Summary != script[1].Text {
					t.Fatalf("want two tasks named after the prompts, got:\n%s\nmodel requests:\n%s", strings.Join(got, "\n"), c.model.Dump())
				}
				sameSet(t, "task 1's diff", c.diffPaths("--task", fmt.Sprint(doc.Tasks[0].ID)), []string{"created one.txt", "modified README.md"})
				sameSet(t, "task 2's diff", c.diffPaths("--task", fmt.Sprint(doc.Tasks[1].ID)), []string{"created two", "created two/two.txt", "modified src/main.go"})
				c.ta("undo", "--yes")
				if got := c.manifest(); got != mid {
					t.Fatalf("undo of prompt two: the tree is not the one after prompt one:\n%s", diffManifest(mid, got))
				}
				c.ta("undo", "--yes")
				if got := c.manifest(); got != before {
					t.Fatalf("undo of prompt one: the tree is not the one before:\n%s", diffManifest(before, got))
				}
				t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// TestMCPUndoTask: the model calls undo_task of timeagent's MCP server in
// the middle of a prompt (fuse mode) and the agent's next command already
// sees the files of the task before.
func TestMCPUndoTask(t *testing.T) {
	for _, name := range clientNames {
		t.Run(name, func(t *testing.T) {
			needMode(t, "fuse")
			start := time.Now()
			script := []Prompt{
				{Key: "PROMPT-ONE", Text: "PROMPT-ONE: write the first file", Steps: []Step{
					{Write: "one.txt", Content: "written for prompt one\n"},
					{Text: "Done: PROMPT-ONE."},
				}},
				{Key: "PROMPT-TWO", Text: "PROMPT-TWO: write a file, then take it back", Steps: []Step{
					{Write: "two.txt", Content: "written for prompt two\n"},
					{MCP: "undo_task", Args: map[string]any{}},
					{Shell: "test -e two.txt; echo two-exists=$?; test -e one.txt; echo one-exists=$?"},
					{Text: "Done: PROMPT-TWO."},
				}},
			}
			c := newClient(t, name, script)
			c.integrate([]string{"mcp"})
			c.runPrompts("fuse", texts2(script), nil)
			told := toolOutput(c, "two-exists=")
			t.Logf("the model saw after undo_task: …%s", told)
			if f := field(c, "two-exists="); f != "two-exists=1" {
				t.Fatalf("after undo_task the agent still saw two.txt (%s)\nmodel requests:\n%s", f, c.model.Dump())
			}
			if f := field(c, "one-exists="); f != "one-exists=0" {
				t.Fatalf("after undo_task the agent lost one.txt (%s)", f)
			}
			if testrepo.Exists(filepath.Join(c.repo, "two.txt")) || !testrepo.Exists(filepath.Join(c.repo, "one.txt")) {
				t.Fatalf("after the run: two.txt exists %v (want false), one.txt exists %v (want true)",
					testrepo.Exists(filepath.Join(c.repo, "two.txt")), testrepo.Exists(filepath.Join(c.repo, "one.txt")))
			}
			t.Logf("took %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestContextNoteAfterUndo: after an undo from another terminal between
// two prompts, the first model request of the next prompt carries a note
// naming what moved (in each client's additionalContext form).
func TestContextNoteAfterUndo(t *testing.T) {
	for _, name := range clientNames {
		for _, mode := range []string{"fuse", "direct"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				needMode(t, mode)
				start := time.Now()
				script := []Prompt{
					{Key: "PROMPT-ONE", Text: "PROMPT-ONE: write the first file", Steps: []Step{
						{Write: "one.txt", Content: "written for prompt one\n"},
						{Text: "Done: PROMPT-ONE."},
					}},
					{Key: "PROMPT-TWO", Text: "PROMPT-TWO: write the second file", Steps: []Step{
						{Write: "two.txt", Content: "written for prompt two\n"},
						{Text: "Done: PROMPT-TWO."},
					}},
					{Key: "PROMPT-THREE", Text: "PROMPT-THREE: what is there now?", Steps: []Step{
						{Text: "Done: PROMPT-THREE."},
					}},
				}
				c := newClient(t, name, script)
				c.integrate()
				c.runPrompts(mode, texts2(script), func(i int) {
					if i == 1 {
						out := c.ta("undo", "--yes")
						t.Logf("timeagent undo --yes from another terminal: %s", strings.TrimSpace(out))
					}
				})
				if testrepo.Exists(filepath.Join(c.repo, "two.txt")) {
					t.Fatal("the undo between the prompts did not take two.txt away")
				}
				two, three := c.firstRequest(1), c.firstRequest(2)
				if two == nil || three == nil {
					t.Fatalf("the model did not receive prompts two and three:\n%s", c.model.Dump())
				}
				n2, n3 := c.note(two.Body), c.note(three.Body)
				t.Logf("the note in prompt three's first request: %q", lastText([]byte(n3), "two.txt", 400))
				if strings.Contains(n2, "two.txt") {
					t.Fatalf("prompt two's request already carried a note about two.txt: %q", n2)
				}
				if !strings.Contains(n3, "two.txt") {
					t.Fatalf("prompt three's first request carries no note naming two.txt (hook context found: %q)", n3)
				}
				t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// TestPreToolRefusesTerraform: a terraform apply shell tool call is
// refused through the client's pre-tool hook, with no terminal to ask,
// inside timeagent run and with the client started directly: the command
// line never runs (for Codex too, whose login shell hides the PATH
// proxies).
func TestPreToolRefusesTerraform(t *testing.T) {
	for _, name := range clientNames {
		for _, mode := range []string{"copy", "direct"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				start := time.Now()
				c := newClient(t, name, terraformScript())
				c.integrate()
				marker := fakeTerraform(t, c)
				c.prompt(terraformScript()[0].Text, wrapRun(mode)...)
				if testrepo.Exists(marker) {
					t.Fatal("terraform apply ran: the pre-tool hook did not refuse it")
				}
				for _, r := range c.model.ScriptRequests() {
					if ranRE.Match(r.Body) {
						t.Fatalf("the command line ran (its output reached the model): …%s", toolOutput(c, "terraform-exit="))
					}
				}
				reqs := c.model.ScriptRequests()
				if len(reqs) < 2 {
					t.Fatalf("the model got no answer to its tool call:\n%s", c.model.Dump())
				}
				t.Logf("the model was told: …%s", lastText(reqs[len(reqs)-1].Body, "terraform", 400))
				t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// ranRE matches the output of the terraform step's command line (its
// text holds "terraform-exit=$?").
var ranRE = regexp.MustCompile(`terraform-exit=[0-9]`)

// lastText is up to n bytes of body around the last occurrence of s.
func lastText(body []byte, s string, n int) string {
	b := string(body)
	i := strings.LastIndex(b, s)
	if i < 0 {
		return ""
	}
	return b[max(0, i-n/2):min(len(b), i+n/2)]
}

// firstRequest is the first scripted request of prompt p (from 0).
func (c *client) firstRequest(p int) *Request {
	for _, r := range c.model.ScriptRequests() {
		if r.Prompt == p && r.Turn == 0 {
			return &r
		}
	}
	return nil
}

// note returns the hook context a request carries, where each client puts
// it (agent-clients.md, "Hooks"): Claude's mid-conversation system
// messages, Codex's developer messages, Gemini's <hook_context> parts.
func (c *client) note(body []byte) string {
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	var b strings.Builder
	switch c.name {
	case "claude":
		msgs, _ := doc["messages"].([]any)
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			t := texts(mm["content"])
			if mm["role"] == "system" || strings.Contains(t, "hook additional context") {
				b.WriteString(t)
			}
		}
	case "codex":
		items, _ := doc["input"].([]any)
		for _, it := range items {
			im, _ := it.(map[string]any)
			if im["type"] == "message" && im["role"] == "developer" {
				b.WriteString(texts(im["content"]))
			}
		}
	case "gemini":
		contents, _ := doc["contents"].([]any)
		for _, ct := range contents {
			cm, _ := ct.(map[string]any)
			parts, _ := cm["parts"].([]any)
			for _, p := range parts {
				pm, _ := p.(map[string]any)
				if s, ok := pm["text"].(string); ok && strings.Contains(s, "<hook_context>") {
					b.WriteString(s)
				}
			}
		}
	}
	return b.String()
}
