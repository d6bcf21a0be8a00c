//go:build linux

package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
)

// This file holds the three wire formats: how a request becomes a
// conversation, how a Step becomes the client's tool call, and how it is
// streamed back (agent-clients.md, "Pointing each client at a fake model").

// parse dispatches to the client's request parser.
func (c *client) parse(path string, doc map[string]any) ([]message, bool) {
	switch c.name {
	case "claude":
		return parseClaude(doc)
	case "codex":
		return parseCodex(doc)
	default:
		return parseGemini(path, doc)
	}
}

// toolNames lists the names of the tools a request offers (any format).
func toolNames(doc map[string]any) []string {
	var out []string
	tools, _ := doc["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			out = append(out, n)
		}
		if decls, ok := m["functionDeclarations"].([]any); ok {
			for _, d := range decls {
				if dm, ok := d.(map[string]any); ok {
					n, _ := dm["name"].(string)
					out = append(out, n)
				}
			}
		}
	}
	return out
}

func hasTool(doc map[string]any, name string) bool {
	for _, n := range toolNames(doc) {
		if n == name {
			return true
		}
	}
	return false
}

func parseClaude(doc map[string]any) ([]message, bool) {
	if !hasTool(doc, "Bash") {
		return nil, true
	}
	var conv []message
	msgs, _ := doc["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch mm["role"] {
		case "assistant":
			conv = append(conv, message{role: "model"})
		case "user":
			var text string
			switch c := mm["content"].(type) {
			case string:
				text = c
			case []any:
				for _, b := range c {
					bm, _ := b.(map[string]any)
					if bm["type"] == "text" {
						s, _ := bm["text"].(string)
						text += s + "\n"
					}
				}
			}
			if text != "" {
				conv = append(conv, message{role: "user", text: text})
			} else {
				conv = append(conv, message{role: "other"})
			}
		default:
			conv = append(conv, message{role: "other", text: texts(mm["content"])})
		}
	}
	return conv, false
}

func parseCodex(doc map[string]any) ([]message, bool) {
	if !hasTool(doc, "exec_command") {
		return nil, true
	}
	var conv []message
	items, _ := doc["input"].([]any)
	for _, it := range items {
		im, _ := it.(map[string]any)
		switch im["type"] {
		case "message":
			switch im["role"] {
			case "user":
				conv = append(conv, message{role: "user", text: texts(im["content"])})
			case "assistant":
				conv = append(conv, message{role: "model"})
			default:
				conv = append(conv, message{role: "other"})
			}
		case "function_call", "custom_tool_call", "tool_search_call", "reasoning", "local_shell_call", "web_search_call":
			conv = append(conv, message{role: "model"})
		default:
			conv = append(conv, message{role: "other"})
		}
	}
	return conv, false
}

func parseGemini(path string, doc map[string]any) ([]message, bool) {
	if !strings.Contains(path, ":streamGenerateContent") || !hasTool(doc, "run_shell_command") {
		return nil, true
	}
	var conv []message
	contents, _ := doc["contents"].([]any)
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		if cm["role"] == "model" {
			conv = append(conv, message{role: "model"})
			continue
		}
		var text string
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if s, ok := pm["text"].(string); ok {
				text += s + "\n"
			}
		}
		if text != "" {
			conv = append(conv, message{role: "user", text: text})
		} else {
			conv = append(conv, message{role: "other"})
		}
	}
	return conv, false
}

// turns expands a prompt's steps into the client's model turns: Codex needs
// a tool_search turn before its first call of an MCP tool (its MCP tools
// are deferred).
func (c *client) turns(repo string, steps []Step) []Step {
	if c.name != "codex" {
		return steps
	}
	var out []Step
	searched := false
	for _, s := range steps {
		if s.MCP != "" && !searched {
			out = append(out, Step{MCP: s.MCP, Args: map[string]any{"__search": true}})
			searched = true
		}
		out = append(out, s)
	}
	return out
}

// side answers a request outside the script.
func (c *client) side(w http.ResponseWriter, path string) {
	switch c.name {
	case "gemini":
		if strings.Contains(path, ":generateContent") {
			// The router and other JSON side questions: a complexity score
			// (and a next speaker) in one JSON text.
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(geminiChunk(map[string]any{"text": `{"complexity_reasoning":"simple task","complexity_score":10,"reasoning":"done","next_speaker":"user"}`}))
			return
		}
		c.answer(w, Step{Text: "ok"}, 0)
	default:
		c.answer(w, Step{Text: "ok"}, 0)
	}
}

// answer streams one step in the client's format; n numbers the ids.
func (c *client) answer(w http.ResponseWriter, s Step, n int) {
	switch c.name {
	case "claude":
		answerClaude(w, c.repo, s, n)
	case "codex":
		answerCodex(w, s, n)
	default:
		answerGemini(w, c.repo, s)
	}
}

func abs(repo, p string) string { return filepath.Join(repo, p) }

func answerClaude(w http.ResponseWriter, repo string, s Step, n int) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 1}
	ev := []any{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%d", n), "type": "message", "role": "assistant", "model": "claude-opus-4-8",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}}}
	stop := "tool_use"
	var name string
	var input map[string]any
	switch {
	case s.Write != "":
		name, input = "Write", map[string]any{"file_path": abs(repo, s.Write), "content": s.Content}
	case s.Shell != "":
		name, input = "Bash", map[string]any{"command": s.Shell, "description": "run a command"}
	case s.MCP != "":
		name, input = "mcp__timeagent__"+s.MCP, s.Args
		if input == nil {
			input = map[string]any{}
		}
	default:
		stop = "end_turn"
	}
	if stop == "end_turn" {
		ev = append(ev,
			"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
			"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": s.Text}},
			"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	} else {
		js, _ := json.Marshal(input)
		ev = append(ev,
			"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
				"type": "tool_use", "id": fmt.Sprintf("toolu_fake%d", n), "name": name, "input": map[string]any{}}},
			"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js)}},
			"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	ev = append(ev,
		"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}},
		"message_stop", map[string]any{"type": "message_stop"})
	sse(w, ev...)
}

// patchAdd is an apply_patch text that adds path with content.
func patchAdd(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

func answerCodex(w http.ResponseWriter, s Step, n int) {
	id := fmt.Sprintf("call_fake%d", n)
	var item map[string]any
	switch {
	case s.Write != "":
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "status": "completed", "call_id": id, "name": "apply_patch", "input": patchAdd(s.Write, s.Content)}
	case s.Shell != "":
		args, _ := json.Marshal(map[string]any{"cmd": s.Shell})
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "status": "completed", "call_id": id, "name": "exec_command", "arguments": string(args)}
	case s.MCP != "" && s.Args["__search"] == true:
		item = map[string]any{"type": "tool_search_call", "call_id": id, "execution": "client", "status": "completed",
			"arguments": map[string]any{"query": "timeagent " + s.MCP, "limit": 8}}
	case s.MCP != "":
		args, _ := json.Marshal(s.Args)
		if s.Args == nil {
			args = []byte("{}")
		}
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "status": "completed", "call_id": id, "namespace": "mcp__timeagent", "name": s.MCP, "arguments": string(args)}
	default:
		item = map[string]any{"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": s.Text, "annotations": []any{}}}}
	}
	resp := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_" + id, "object": "response", "status": status, "model": "gpt-5.5", "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}
		}
		return r
	}
	sse(w,
		"response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{})},
		"response.in_progress", map[string]any{"type": "response.in_progress", "sequence_number": 1, "response": resp("in_progress", []any{})},
		"response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": item},
		"response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item},
		"response.completed", map[string]any{"type": "response.completed", "sequence_number": 4, "response": resp("completed", []any{item})})
}

func geminiChunk(part map[string]any) map[string]any {
	return map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-fake",
	}
}

func answerGemini(w http.ResponseWriter, repo string, s Step) {
	var part map[string]any
	switch {
	case s.Write != "":
		part = map[string]any{"functionCall": map[string]any{"name": "write_file", "args": map[string]any{"file_path": abs(repo, s.Write), "content": s.Content}}}
	case s.Shell != "":
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": s.Shell, "description": "run a command"}}}
	case s.MCP != "":
		args := s.Args
		if args == nil {
			args = map[string]any{}
		}
		part = map[string]any{"functionCall": map[string]any{"name": "mcp_timeagent_" + s.MCP, "args": args}}
	default:
		part = map[string]any{"text": s.Text}
	}
	sse(w, "", geminiChunk(part))
}
