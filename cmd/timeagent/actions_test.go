package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTools puts scripts named like proxied tools on PATH: each appends its
// argv (one NUL-terminated word each, then a newline) to $SCRATCH/<tool>.log
// then sleeps $FAKE_SLEEP seconds and exits with $FAKE_EXIT (0 by default).
func fakeTools(e *env, names ...string) {
	dir := filepath.Join(e.scratch, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range names {
		script := "#!/bin/sh\n{ for a in \"$0\" \"$@\"; do printf '%s\\0' \"$a\"; done; echo; } >> \"$SCRATCH/" + n + ".log\"\nsleep ${FAKE_SLEEP:-0}\nexit ${FAKE_EXIT:-0}\n"
		writeFile(e.t, filepath.Join(dir, n), []byte(script), 0o755)
	}
	e.extra = append(e.extra, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// calls returns the argv of every call of a fake tool (argv[0] as its base name).
func calls(e *env, tool string) [][]string {
	b, err := os.ReadFile(filepath.Join(e.scratch, tool+".log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		words := strings.Split(strings.TrimSuffix(line, "\x00"), "\x00")
		words[0] = filepath.Base(words[0])
		out = append(out, words)
	}
	return out
}

type actionsDoc struct {
	SchemaVersion int    `json:"schemaVersion"`
	Session       uint64 `json:"session"`
	Note          string `json:"note"`
	Redacted      bool   `json:"redacted"`
	Actions       []struct {
		Tool       string   `json:"tool"`
		Argv       []string `json:"argv"`
		Risk       string   `json:"risk"`
		Decision   string   `json:"decision"`
		Reversible bool     `json:"reversible"`
		ExitCode   int      `json:"exitCode"`
		Cwd        string   `json:"cwd"`
	} `json:"actions"`
	Counts map[string]map[string]int `json:"counts"`
}

// TestActionsInSession runs proxied tools from nested shells inside a real
// session: low and medium run and are logged, high and critical are refused
// without a terminal (exit 126, the tool does not run), argv passes exactly.
func TestActionsInSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fakeTools(e, "terraform", "npm", "kubectl")
	script := `sh -c 'terraform plan -out "my plan"; npm install "a b" ";" "$HOME" "" "ünï"; FAKE_EXIT=3 kubectl get pods; echo "get=$?" > "$SCRATCH/get"; kubectl delete pod x; echo "delete=$?" > "$SCRATCH/delete"'`
	e.sh("copy", script)

	if got := calls(e, "terraform"); len(got) != 1 || strings.Join(got[0], "|") != "terraform|plan|-out|my plan" {
		t.Errorf("terraform calls = %q", got)
	}
	home := os.Getenv("HOME")
	if got := calls(e, "npm"); len(got) != 1 || strings.Join(got[0], "|") != "npm|install|a b|;|"+home+"||ünï" {
		t.Errorf("npm calls = %q", got)
	}
	if got := calls(e, "kubectl"); len(got) != 1 || got[0][1] != "get" {
		t.Errorf("kubectl calls = %q (delete must not run)", got)
	}
	if b, _ := os.ReadFile(filepath.Join(e.scratch, "get")); strings.TrimSpace(string(b)) != "get=3" {
		t.Errorf("exit code of kubectl get not passed through: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.scratch, "delete")); strings.TrimSpace(string(b)) != "delete=126" {
		t.Errorf("refused kubectl delete: %q, want delete=126", b)
	}

	var doc actionsDoc
	e.jsonOf(&doc, "actions", "--json")
	want := []struct{ tool, risk, decision string }{
		{"terraform", "low", "allowed"}, {"npm", "medium", "allowed"}, {"kubectl", "low", "allowed"}, {"kubectl", "high", "denied"},
	}
	if len(doc.Actions) != len(want) {
		t.Fatalf("actions = %+v, want %d", doc.Actions, len(want))
	}
	for i, w := range want {
		g := doc.Actions[i]
		if g.Tool != w.tool || g.Risk != w.risk || g.Decision != w.decision || g.Reversible {
			t.Errorf("action %d = %+v, want %+v", i, g, w)
		}
	}
	if doc.Actions[2].ExitCode != 3 {
		t.Errorf("recorded exit code of kubectl get = %d, want 3", doc.Actions[2].ExitCode)
	}
	if !strings.Contains(doc.Note, "not containment") {
		t.Errorf("note does not say detection, not containment: %q", doc.Note)
	}
	human := e.ok("actions")
	contains(t, "actions output", human.Stdout, "detection, not containment", "kubectl delete pod x", "denied")
	var st struct {
		Actions map[string]map[string]int `json:"actions"`
	}
	e.jsonOf(&st, "status", "--json")
	if st.Actions["decision"]["denied"] != 1 || st.Actions["risk"]["high"] != 1 {
		t.Errorf("status action counts = %v", st.Actions)
	}
}

// TestActionsAllowHighRisk: run --allow-high-risk lets high and critical run.
func TestActionsAllowHighRisk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fakeTools(e, "terraform")
	e.ok("run", "--mode", "copy", "--allow-high-risk", "--", "sh", "-c", "terraform apply -auto-approve")
	if got := calls(e, "terraform"); len(got) != 1 {
		t.Fatalf("terraform apply did not run under --allow-high-risk: %q", got)
	}
	var doc actionsDoc
	e.jsonOf(&doc, "actions", "--json")
	if len(doc.Actions) != 1 || doc.Actions[0].Risk != "critical" || doc.Actions[0].Decision != "allowed" {
		t.Errorf("actions = %+v", doc.Actions)
	}
}

// TestActionsSurviveKill: the record of a call is durable before the tool
// ends: kill -9 timeagent while a proxied tool runs, and the next command
// still shows the call.
func TestActionsSurviveKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fakeTools(e, "helm")
	cmd := e.cmd("run", "--mode", "copy", "--", "sh", "-c", `FAKE_SLEEP=30 helm list -A`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the proxied call", 20*time.Second, func() bool {
		return len(calls(e, "helm")) == 1
	})
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	r := e.ok("actions", "--json")
	var doc actionsDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Actions) != 1 || doc.Actions[0].Tool != "helm" || strings.Join(doc.Actions[0].Argv, " ") != "helm list -A" {
		t.Fatalf("after kill -9 the action log is %+v", doc.Actions)
	}
}
