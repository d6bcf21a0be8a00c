package actions

import (
	"os"
	"strings"
	"testing"
)

// TestREADMERuleTable keeps the README's copy of the rule table equal to the
// table in code, so the documentation cannot drift from the behaviour.
func TestREADMERuleTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	s := string(b)
	const begin, end = "<!-- actions-table:begin -->\n", "<!-- actions-table:end -->"
	i, k := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || k < i {
		t.Fatalf("README has no %q … %q section", begin, end)
	}
	if got, want := s[i+len(begin):k], RuleDoc(); got != want {
		t.Errorf("README rule table differs from RuleDoc(); replace the section with:\n%s", want)
	}
}
