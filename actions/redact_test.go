package actions

import (
	"os/exec"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want []string
		redacted bool
	}{
		{[]string{"vercel", "deploy"}, []string{"vercel", "deploy"}, false},
		{[]string{"vercel", "--token", "abc", "deploy"}, []string{"vercel", "--token", Redacted, "deploy"}, true},
		{[]string{"x", "--token=abc"}, []string{"x", "--token=" + Redacted}, true},
		{[]string{"x", "--password", "p", "--api-key=k", "--secret", "s", "--client-secret", "c", "--access-token=a"},
			[]string{"x", "--password", Redacted, "--api-key=" + Redacted, "--secret", Redacted, "--client-secret", Redacted, "--access-token=" + Redacted}, true},
		{[]string{"x", "--token"}, []string{"x", "--token"}, false},
		{[]string{"kubectl", "exec", "p", "--", "curl", "--token", "t"}, []string{"kubectl", "exec", "p", "--", "curl", "--token", Redacted}, true},
		{[]string{"x", "--tokens", "v", "--token-file", "f"}, []string{"x", "--tokens", "v", "--token-file", "f"}, false},
	}
	for _, tc := range tests {
		got, red := Redact(tc.in)
		if !equalStrings(got, tc.want) || red != tc.redacted {
			t.Errorf("Redact(%q) = %q, %v; want %q, %v", tc.in, got, red, tc.want, tc.redacted)
		}
	}
	in := []string{"x", "--token", "abc"}
	Redact(in)
	if in[2] != "abc" {
		t.Error("Redact changed its input")
	}
	if s, red := DisplayCommand([]string{"gh", "--token=a b", "--secret", "x y", "it's"}); s != "gh --token="+Redacted+" --secret "+Redacted+` 'it'\''s'` || !red {
		t.Errorf("DisplayCommand = %q %v", s, red)
	}
}

// TestShellQuoteRoundTrip checks with a real shell that ShellQuote's line
// splits back into the same words.
func TestShellQuoteRoundTrip(t *testing.T) {
	words := []string{"plain", "a b", "", "it's", `"q"`, "$HOME", "`id`", "semi;colon", "new\nline", "tab\t", "\x1b[2J", "é", "*", "back\\slash", "\xff"}
	line := ShellQuote(words)
	if strings.ContainsAny(line, "\n\x1b") {
		t.Errorf("control characters left in %q", line)
	}
	out, err := exec.Command("bash", "-c", `printf '%s\0' `+line).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(out), "\x00")
	if !equalStrings(got[:len(got)-1], words) {
		t.Errorf("round trip of %q: %q", line, got)
	}
}
