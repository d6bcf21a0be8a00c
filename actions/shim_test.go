package actions

import (
	"strings"
	"testing"
)

func TestWindowsShim(t *testing.T) {
	shim, err := WindowsShim(`C:\Program Files\time agent\100%&^!\timeagent.exe`, "npm")
	if err != nil {
		t.Fatal(err)
	}
	want := "@echo off\r\nsetlocal DisableDelayedExpansion\r\n" +
		`"C:\Program Files\time agent\100%%&^!\timeagent.exe" __proxy npm %*` + "\r\n"
	if shim != want {
		t.Errorf("shim\n%q\nwant\n%q", shim, want)
	}
	for _, tc := range []struct{ self, tool string }{
		{`timeagent.exe`, "npm"},
		{`/usr/bin/timeagent`, "npm"},
		{`C:\a"b\timeagent.exe`, "npm"},
		{"C:\\a\r\nb\\timeagent.exe", "npm"},
		{`C:\x\timeagent.exe`, "np m"},
		{`C:\x\timeagent.exe`, "a&b"},
	} {
		if _, err := WindowsShim(tc.self, tc.tool); err == nil {
			t.Errorf("WindowsShim(%q, %q) accepted", tc.self, tc.tool)
		}
	}
	if _, err := WindowsShim(`\\server\share\timeagent.exe`, "git"); err != nil {
		t.Errorf("UNC path: %v", err)
	}
}

// TestWindowsShimArguments checks the argument path of the .cmd shim: a
// caller builds a command line from argv (as os/exec does), cmd.exe
// substitutes the tail for %*, and timeagent's runtime splits the result
// into `self __proxy tool argv...`.
func TestWindowsShimArguments(t *testing.T) {
	self := `C:\Program Files\timeagent\timeagent.exe`
	cases := [][]string{
		{"install"},
		{"install", "a b", "c"},
		{"install", `say "hi"`, `back\slash`, `trailing\`, `trail space\ `, `\\server\x`},
		{"run", "", "x"},
		{"publish", `"`, `\"`, `\\"`, `a\\\"b`, "tab\there"},
		{"i", "héllo", "日本"},
	}
	for _, argv := range cases {
		caller := windowsCommandLine(append([]string{`C:\proxy\npm.cmd`}, argv...))
		tail := caller[strings.Index(caller, " ")+1:]
		shim, err := WindowsShim(self, "npm")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(shim, "\r\n")
		line := strings.ReplaceAll(strings.ReplaceAll(lines[2], "%*", tail), "%%", "%")
		got := windowsSplitCommandLine(line)
		want := append([]string{self, "__proxy", "npm"}, argv...)
		if !equalStrings(got, want) {
			t.Errorf("argv %q: line %q split into %q", argv, line, got)
		}
		// And the .exe proxy: the runtime splits the caller's line directly.
		if got := windowsSplitCommandLine(caller); !equalStrings(got[1:], argv) {
			t.Errorf("exe proxy: %q split into %q", caller, got)
		}
	}
}

func TestWindowsSplitCommandLine(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`"C:\a b\x.exe" one two`, []string{`C:\a b\x.exe`, "one", "two"}},
		{`x.exe "a b" c`, []string{"x.exe", "a b", "c"}},
		{`x.exe a\\\"b "c d" e\f`, []string{"x.exe", `a\"b`, "c d", `e\f`}},
		{`x.exe "a""b" ""`, []string{"x.exe", `a"b`, ""}},
		{`x.exe   a	b  `, []string{"x.exe", "a", "b"}},
		{`x.exe \\\\"a b"`, []string{"x.exe", `\\a b`}},
	}
	for _, tc := range tests {
		if got := windowsSplitCommandLine(tc.line); !equalStrings(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
}
