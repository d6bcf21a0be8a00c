package actions

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

func TestFormatAndCounts(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	list := []journal.Action{
		{Seq: 1, Time: now, Tool: "npm", Argv: []string{"npm", "install", "a b"}, Category: CategoryPackage, Risk: RiskMedium, Decision: DecisionAllowed, DurationMs: 1500},
		{Seq: 2, Time: now, Tool: "terraform", Argv: []string{"terraform", "apply", "--token=xyz"}, Category: CategoryInfrastructure, Risk: RiskCritical, Decision: DecisionDenied, ExitCode: ExitRefused},
		{Seq: 3, Time: now, Tool: "kubectl", Argv: []string{"kubectl", "delete", "pod", "x"}, Category: CategoryInfrastructure, Risk: RiskHigh, Decision: DecisionApproved, ExitCode: ExitUnknown},
	}
	var b bytes.Buffer
	if err := Format(&b, list); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{Disclaimer + "\n", "npm install 'a b'", "1.5s", "terraform apply --token=" + Redacted,
		"denied", "approved", "shown as " + Redacted, "EXIT ?", "absolute path", "renamed", "API calls"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "xyz") {
		t.Errorf("secret shown:\n%s", out)
	}
	if !strings.HasPrefix(out, "External actions") {
		t.Errorf("does not start with the disclaimer:\n%s", out)
	}
	b.Reset()
	Format(&b, nil)
	if !strings.Contains(b.String(), "No external actions") {
		t.Errorf("empty: %q", b.String())
	}
	red, any := RedactActions(list)
	if !any || red[1].Argv[2] != "--token="+Redacted || list[1].Argv[2] != "--token=xyz" || red[0].Argv[2] != "a b" {
		t.Errorf("RedactActions %v %v", red, any)
	}
	c := Counts(list)
	if c["risk"][RiskHigh] != 1 || c["risk"][RiskCritical] != 1 || c["decision"][DecisionDenied] != 1 || c["decision"][DecisionAllowed] != 1 {
		t.Errorf("counts %v", c)
	}
}

func TestEnvEnviron(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOME=/root", EnvAllowHighRisk + "=1", EnvDepth + "=3", EnvSession + "=7"}
	env := Env{ProxyDir: "/tmp/p", ActionsDir: "/tmp/a", Root: "/r", Session: 9}.Environ(base)
	want := map[string]string{"PATH": "/tmp/p:/usr/bin:/bin", "HOME": "/root", EnvProxyDir: "/tmp/p", EnvActionsDir: "/tmp/a", EnvRoot: "/r", EnvSession: "9"}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("duplicate %s", k)
		}
		got[k] = v
	}
	if len(got) != len(want) {
		t.Errorf("env %q", env)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	env = Env{ProxyDir: "/p", AllowHighRisk: true}.Environ(nil)
	if !strings.Contains(strings.Join(env, "\n"), EnvAllowHighRisk+"=1") || !strings.Contains(strings.Join(env, "\n"), "PATH=/p\n") {
		t.Errorf("env %q", env)
	}
}
