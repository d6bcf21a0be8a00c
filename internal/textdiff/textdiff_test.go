package textdiff

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		a, b       string
		add, remov int
	}{
		{"", "", 0, 0},
		{"a\n", "a\n", 0, 0},
		{"a\nb\nc\n", "a\nc\n", 0, 1},
		{"a\nc\n", "a\nb\nc\n", 1, 0},
		{"a\nb\n", "x\ny\n", 2, 2},
		{"", "one\ntwo", 2, 0},
	}
	for _, tt := range tests {
		add, rem := Count([]byte(tt.a), []byte(tt.b))
		if add != tt.add || rem != tt.remov {
			t.Errorf("Count(%q,%q) = +%d -%d, want +%d -%d", tt.a, tt.b, add, rem, tt.add, tt.remov)
		}
	}
}

// TestUnifiedAppliesWithPatch checks the output against the real patch(1):
// applying our diff to a must give b.
func TestUnifiedAppliesWithPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Fatalf("patch(1) is needed for this test: %v", err)
	}
	var long []string
	for i := 0; i < 200; i++ {
		long = append(long, "line "+strings.Repeat("x", i%7))
	}
	la := strings.Join(long, "\n") + "\n"
	lb := strings.Replace(la, "line xx\n", "changed\n", 3) + "tail"
	cases := [][2]string{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "new\nfile\n"},
		{"old\n", ""},
		{la, lb},
		{"no newline", "no newline at all"},
	}
	for i, c := range cases {
		dir := t.TempDir()
		f := filepath.Join(dir, "f")
		if err := os.WriteFile(f, []byte(c[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Unified(&buf, "a/f", "b/f", []byte(c[0]), []byte(c[1])); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("patch", "-s", "-p1", "-d", dir)
		cmd.Stdin = &buf
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch failed: %v\n%s\ndiff:\n%s", i, err, out, buf.String())
		}
		got, _ := os.ReadFile(f)
		if string(got) != c[1] {
			t.Errorf("case %d: patched = %q, want %q", i, got, c[1])
		}
	}
}
