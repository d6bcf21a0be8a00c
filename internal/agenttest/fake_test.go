//go:build linux

package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Step is one model turn of a script, in client-neutral terms; each client
// turns it into its own tool call (see client.turns).
type Step struct {
	// Write creates a file with the client's own write tool (path relative
	// to the repository).
	Write string
	// Content is what Write writes.
	Content string
	// Shell runs a command line with the client's own shell tool.
	Shell string
	// MCP calls a tool of the "timeagent" MCP server with Args.
	MCP  string
	Args map[string]any
	// Text ends the prompt's turn with this final answer.
	Text string
}

// Prompt is one user prompt of a script: Key is a string only that prompt's
// text holds (the server finds the prompt a request answers by it), Steps
// the model's turns for it, the last one a Text.
type Prompt struct {
	Key   string
	Text  string
	Steps []Step
}

// Request is one request the fake model received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Side says it was answered outside the script (Gemini's router, a
	// request without the client's tools).
	Side bool
	// Prompt and Turn are the script position it was answered from
	// (-1 when none matched).
	Prompt, Turn int
}

// fakeModel is a scripted model server on 127.0.0.1 for one client's wire
// format. It chooses each answer statelessly from the request: the latest
// user message holding a prompt's Key, then the number of model turns after
// it, so resumed sessions and retries replay correctly.
type fakeModel struct {
	t      testing.TB
	client *client
	repo   string
	script []Prompt
	srv    *http.Server
	ln     net.Listener

	mu   sync.Mutex
	reqs []Request
}

// newFakeModel starts the server for c, answering with script; the
// repository path makes the write tools' absolute paths.
func newFakeModel(t testing.TB, c *client, repo string, script []Prompt) *fakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fake model: listen on 127.0.0.1: %v", err)
	}
	f := &fakeModel{t: t, client: c, repo: repo, script: script, ln: ln}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go func() { _ = f.srv.Serve(ln) }()
	t.Cleanup(func() { _ = f.srv.Close() })
	return f
}

// URL is the server's base URL (no trailing slash).
func (f *fakeModel) URL() string { return "http://" + f.ln.Addr().String() }

// Requests returns a copy of every request received so far.
func (f *fakeModel) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// ScriptRequests returns the requests answered from the script.
func (f *fakeModel) ScriptRequests() []Request {
	var out []Request
	for _, r := range f.Requests() {
		if !r.Side && r.Prompt >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Dump describes every request, for failure messages.
func (f *fakeModel) Dump() string {
	var b strings.Builder
	for i, r := range f.Requests() {
		fmt.Fprintf(&b, "request %d: %s %s side=%v prompt=%d turn=%d body=%d bytes\n", i, r.Method, r.Path, r.Side, r.Prompt, r.Turn, len(r.Body))
	}
	return b.String()
}

// lastBody is the end (up to n bytes) of the last request's body.
func (f *fakeModel) lastBody(n int) string {
	reqs := f.Requests()
	if len(reqs) == 0 {
		return ""
	}
	b := reqs[len(reqs)-1].Body
	return string(b[max(0, len(b)-n):])
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Prompt: -1, Turn: -1}
	defer func() {
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		n := len(f.reqs)
		f.mu.Unlock()
		// TIMEAGENT_AGENTTEST_DUMP=DIR keeps every request body, to debug
		// a script.
		if d := os.Getenv("TIMEAGENT_AGENTTEST_DUMP"); d != "" {
			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("%s-%d-%03d.json", f.client.name, os.Getpid(), n)), body, 0o644)
		}
	}()
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		http.Error(w, "fake model: body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	conv, side := f.client.parse(r.URL.Path, doc)
	if side {
		req.Side = true
		f.client.side(w, r.URL.Path)
		return
	}
	p, turn := f.position(conv)
	req.Prompt, req.Turn = p, turn
	var step Step
	switch {
	case p < 0:
		step = Step{Text: "fake model: no prompt of the script in this request"}
	default:
		turns := f.client.turns(f.repo, f.script[p].Steps)
		if turn < len(turns) {
			step = turns[turn]
		} else {
			step = Step{Text: fmt.Sprintf("fake model: script of prompt %q exhausted at turn %d", f.script[p].Key, turn)}
		}
	}
	f.client.answer(w, step, len(f.Requests()))
}

// message is one entry of a conversation in neutral form: role "user" (a
// user's text, not a tool result), "model" (one model turn) or "other".
type message struct {
	role string
	text string
}

// position finds the script prompt a conversation answers (the latest user
// message holding a Key; the latest Key when it holds several, since notes
// about earlier tasks quote earlier prompts) and the model turns after it.
func (f *fakeModel) position(conv []message) (prompt, turn int) {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].role != "user" {
			continue
		}
		found := -1
		for k, p := range f.script {
			if strings.Contains(conv[i].text, p.Key) {
				found = k
			}
		}
		if found < 0 {
			continue
		}
		n, prev := 0, ""
		for _, m := range conv[i+1:] {
			if m.role == "model" && prev != "model" {
				n++
			}
			prev = m.role
		}
		return found, n
	}
	return -1, 0
}

// sse writes server-sent events: pairs of event name (may be empty) and
// JSON data.
func sse(w http.ResponseWriter, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var b bytes.Buffer
	for i := 0; i+1 < len(events); i += 2 {
		name, _ := events[i].(string)
		data, _ := json.Marshal(events[i+1])
		if name != "" {
			fmt.Fprintf(&b, "event: %s\n", name)
		}
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	_, _ = w.Write(b.Bytes())
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// texts joins every string found under "text" keys in v.
func texts(v any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				if k == "text" || k == "content" || k == "parts" {
					walk(e)
				}
			}
		}
	}
	walk(v)
	return b.String()
}
