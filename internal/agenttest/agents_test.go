//go:build linux

package agenttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
	"strings"
	"testing"
	"time"
)

// writeEditScript makes the model create a file with the client's write
// tool, then edit a committed file and create another with its shell tool.
func writeEditScript() []Prompt {
	return []Prompt{{Key: "PROMPT-ONE", Text: "PROMPT-ONE: add a note and a generated file", Steps: []Step{
		{Write: "notes/new.txt", Content: "created by the write tool\nsecond line\n"},
		{Shell: "printf 'edited by the shell tool\\n' >> README.md && mkdir -p gen && echo generated > gen/out.txt"},
		{Text: "Done: PROMPT-ONE."},
	}}}
}

// writeEditChanges is what writeEditScript changes, as diff --json lines.
var writeEditChanges = []string{"created notes", "created notes/new.txt", "modified README.md", "created gen", "created gen/out.txt"}

// TestWriteEdit runs each client on one prompt whose model answer writes
// and edits files with the client's own tools: inside timeagent run (fuse
// and copy mode) the run is one task with exactly those files and undo
// restores the tree byte for byte; started directly, timeagent records
// nothing (today's behaviour: no hooks).
func TestWriteEdit(t *testing.T) {
	for _, name := range clientNames {
		for _, mode := range modes(t) {
			t.Run(name+"/"+mode, func(t *testing.T) {
				needMode(t, mode)
				start := time.Now()
				c := newClient(t, name, writeEditScript())
				before := c.manifest()
				c.prompt(writeEditScript()[0].Text, wrapRun(mode)...)
				if got := c.file("notes/new.txt"); got != "created by the write tool\nsecond line\n" {
					t.Fatalf("notes/new.txt after the run: %q\nmodel requests:\n%s", got, c.model.Dump())
				}
				if got := c.file("README.md"); !strings.HasSuffix(got, "edited by the shell tool\n") {
					t.Fatalf("README.md after the run: %q", got)
				}
				if got := c.file("gen/out.txt"); got != "generated\n" {
					t.Fatalf("gen/out.txt after the run: %q", got)
				}
				doc := c.log()
				if mode == "direct" {
					if len(doc.Tasks) != 0 {
						t.Fatalf("started directly, timeagent recorded %d task(s): %+v", len(doc.Tasks), doc.Tasks)
					}
					t.Logf("started directly: the files changed, timeagent recorded nothing (took %v)", time.Since(start).Round(time.Millisecond))
					return
				}
				if len(doc.Tasks) != 1 || doc.ActiveTask != doc.Tasks[0].ID {
					t.Fatalf("log --json: want one active task, got %+v (active %d)", doc.Tasks, doc.ActiveTask)
				}
				sameSet(t, "diff --json", c.diffPaths(), writeEditChanges)
				c.ta("undo", "--yes")
				if got := c.manifest(); got != before {
					t.Fatalf("undo did not restore the tree byte for byte:\n%s", diffManifest(before, got))
				}
				t.Logf("took %v", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// terraformScript makes the model run terraform apply with the client's
// shell tool and print which terraform the shell finds and its exit status
// (no $(…): Gemini CLI refuses command substitution as an injection).
func terraformScript() []Prompt {
	return []Prompt{{Key: "PROMPT-TF", Text: "PROMPT-TF: deploy the infrastructure", Steps: []Step{
		{Shell: "printf terraform-path=; command -v terraform || echo none; terraform apply -auto-approve; echo terraform-exit=$?"},
		{Text: "Done: PROMPT-TF."},
	}}}
}

// fakeTerraform puts a terraform on c's PATH that leaves a marker when it
// runs, and returns the marker's path.
func fakeTerraform(t *testing.T, c *client) string {
	t.Helper()
	dir := filepath.Join(c.dir, "fakebin")
	marker := filepath.Join(c.dir, "terraform-ran")
	testrepo.WriteFile(t, filepath.Join(dir, "terraform"), []byte("#!/bin/sh\necho \"$@\" > "+marker+"\necho fake terraform applied\n"), 0o755)
	c.extraPath = dir
	return marker
}

// toolOutput finds what the model was told after the shell step: the text
// around marker in the last scripted request.
func toolOutput(c *client, marker string) string {
	reqs := c.model.ScriptRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		b := string(reqs[i].Body)
		if j := strings.LastIndex(b, marker); j >= 0 {
			lo := max(0, j-300)
			return b[lo:min(len(b), j+40)]
		}
	}
	return ""
}

// field returns the value printed after prefix in the shell step's output
// the model was told (up to the end of its line).
func field(c *client, prefix string) string {
	s := toolOutput(c, prefix)
	i := strings.LastIndex(s, prefix)
	if i < 0 {
		return "(nothing)"
	}
	s = s[i+len(prefix):]
	if j := strings.IndexAny(s, "\\\n\""); j >= 0 {
		s = s[:j]
	}
	if s == "" {
		return "(nothing: not on PATH)"
	}
	return prefix + s
}

// actionDoc is the part of actions --json the tests read.
type actionDoc struct {
	Actions []struct {
		Tool     string   `json:"tool"`
		Argv     []string `json:"argv"`
		Risk     string   `json:"risk"`
		Decision string   `json:"decision"`
		ExitCode int      `json:"exitCode"`
	} `json:"actions"`
}

// TestTerraformApplyReachesProxy runs terraform apply through each
// client's shell tool inside timeagent run (copy mode, no terminal): the
// PATH proxy must see it, refuse it (critical risk, nobody to ask) and
// record it, and the real terraform must not run. Codex runs commands in a
// login shell that resets PATH on Debian (agent-clients.md): the codex
// subtest reports what happens there, codex-no-login-shell runs it with
// -c allow_login_shell=false.
func TestTerraformApplyReachesProxy(t *testing.T) {
	for _, name := range append(clientNames, "codex-no-login-shell") {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			client := name
			if name == "codex-no-login-shell" {
				client = "codex"
			}
			c := newClient(t, client, terraformScript())
			if name == "codex-no-login-shell" {
				c.extraArgs = []string{"-c", "allow_login_shell=false"}
			}
			marker := fakeTerraform(t, c)
			c.prompt(terraformScript()[0].Text, wrapRun("copy")...)
			var doc actionDoc
			out := c.ta("actions", "--json")
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("actions --json: %v\n%s", err, out)
			}
			told := toolOutput(c, "terraform-exit=")
			ran := testrepo.Exists(marker)
			t.Logf("took %v; actions: %+v; terraform ran: %v; the model was told: …%s", time.Since(start).Round(time.Millisecond), doc.Actions, ran, told)
			if len(doc.Actions) == 0 && name == "codex" {
				if ran {
					t.Fatalf("codex: terraform apply ran without the proxy seeing it")
				}
				t.Skipf("KNOWN GAP (issue 13): Codex runs commands in `bash -lc`, whose /etc/profile resets PATH: "+
					"the proxy never saw terraform apply, nothing was recorded, and the command line found %s "+
					"(a terraform installed there RAN, unasked, with %s)", field(c, "terraform-path="), field(c, "terraform-exit="))
			}
			if len(doc.Actions) != 1 || doc.Actions[0].Tool != "terraform" || doc.Actions[0].Decision != "denied" || doc.Actions[0].Risk != "critical" {
				t.Fatalf("want one denied critical terraform action, got %+v\nmodel was told: …%s\nmodel requests:\n%s\nthe last one ends: …%s",
					doc.Actions, told, c.model.Dump(), c.model.lastBody(2000))
			}
			if ran {
				t.Fatal("the proxy refused terraform apply but the real terraform ran")
			}
			if !strings.Contains(told, "terraform-exit=126") {
				t.Fatalf("the model was not told exit 126: …%s", told)
			}
		})
	}
}

// TestStartupTime measures each client's start-up (`--version`) directly
// and inside timeagent run in both modes, TIMEAGENT_STARTUP_RUNS times
// (default 1), and logs the fastest and slowest; it fails only when a
// client cannot start.
func TestStartupTime(t *testing.T) {
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("TIMEAGENT_STARTUP_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for _, name := range clientNames {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, name, nil)
			var line []string
			for _, mode := range []string{"direct", "fuse", "copy"} {
				if mode == "fuse" && fuseWhy() != "" {
					line = append(line, "fuse: "+fuseWhy())
					continue
				}
				var ds []time.Duration
				for i := 0; i < runs; i++ {
					r := c.start(append(wrapRun(mode), c.exe, "--version")...).wait()
					if r.Code != 0 {
						t.Fatalf("%s --version (%s): %s", name, mode, r)
					}
					ds = append(ds, r.Took)
				}
				slices.Sort(ds)
				line = append(line, fmt.Sprintf("%s %v–%v", mode, ds[0].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond)))
			}
			t.Logf("%s --version: %s", name, strings.Join(line, ", "))
		})
	}
}
