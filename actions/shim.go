package actions

import (
	"fmt"
	"strings"
)

// WindowsShim returns the content of the Windows <tool>.cmd proxy: a batch
// file that runs `"self" __proxy <tool> %*` with delayed expansion off, so
// the exit code of timeagent is the exit code of the batch file. self must be
// an absolute Windows path without characters Windows forbids in paths;
// '%' in it is doubled, the only character batch files expand inside quotes.
//
// The arguments reach timeagent as cmd.exe passes them on (%*): quoted
// arguments arrive exactly, but cmd.exe itself interprets unquoted &, |, <,
// >, ^ and %VAR% before any batch file runs, as it does for every .cmd
// (npm.cmd included). The <tool>.exe proxy, found first through PATHEXT, has
// no such limit.
func WindowsShim(self, tool string) (string, error) {
	if err := checkToolName(tool); err != nil {
		return "", fmt.Errorf("windows shim: %w", err)
	}
	if !isWindowsAbs(self) {
		return "", fmt.Errorf("windows shim: executable %q is not an absolute Windows path", self)
	}
	for _, r := range self {
		if r < 0x20 || strings.ContainsRune(`"<>|*?`, r) {
			return "", fmt.Errorf("windows shim: executable %q holds %q, not allowed in a Windows path", self, r)
		}
	}
	line := `"` + strings.ReplaceAll(self, "%", "%%") + `" __proxy ` + tool + ` %*`
	return "@echo off\r\nsetlocal DisableDelayedExpansion\r\n" + line + "\r\n", nil
}

// isWindowsAbs reports whether p is C:\... or C:/... or a UNC path \\host\share.
func isWindowsAbs(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		c := p[0] | 0x20
		return c >= 'a' && c <= 'z'
	}
	return len(p) > 2 && p[0] == '\\' && p[1] == '\\'
}

// windowsEscapeArg quotes s for a Windows command line the way Go's
// syscall.EscapeArg does (Microsoft C runtime rules).
func windowsEscapeArg(s string) string {
	if s == "" {
		return `""`
	}
	needsBackslash, hasSpace := false, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\':
			needsBackslash = true
		case ' ', '\t':
			hasSpace = true
		}
	}
	if !needsBackslash && !hasSpace {
		return s
	}
	if !needsBackslash {
		return `"` + s + `"`
	}
	var b strings.Builder
	if hasSpace {
		b.WriteByte('"')
	}
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		default:
			slashes = 0
		case '\\':
			slashes++
		case '"':
			for ; slashes > 0; slashes-- {
				b.WriteByte('\\')
			}
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	if hasSpace {
		for ; slashes > 0; slashes-- {
			b.WriteByte('\\')
		}
		b.WriteByte('"')
	}
	return b.String()
}

// windowsCommandLine joins argv the way os/exec does on Windows.
func windowsCommandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = windowsEscapeArg(a)
	}
	return strings.Join(q, " ")
}

// windowsSplitCommandLine splits a command line into argv by the rules of
// the Microsoft C runtime (the ones Go's runtime uses for os.Args): the
// program name ends at the closing quote or the first blank, without escapes;
// then 2n backslashes before a quote give n backslashes and a quote that
// opens or closes quoting, 2n+1 give n backslashes and a literal quote, a
// doubled quote inside quotes is a literal quote, other backslashes are
// literal.
func windowsSplitCommandLine(cmd string) []string {
	var args []string
	i := 0
	// Program name.
	var prog strings.Builder
	if i < len(cmd) && cmd[i] == '"' {
		i++
		for i < len(cmd) && cmd[i] != '"' {
			prog.WriteByte(cmd[i])
			i++
		}
		i++
	} else {
		for i < len(cmd) && cmd[i] != ' ' && cmd[i] != '\t' {
			prog.WriteByte(cmd[i])
			i++
		}
	}
	args = append(args, prog.String())
	for {
		for i < len(cmd) && (cmd[i] == ' ' || cmd[i] == '\t') {
			i++
		}
		if i >= len(cmd) {
			return args
		}
		var b strings.Builder
		quoted := false
		for i < len(cmd) {
			c := cmd[i]
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			if c == '\\' {
				n := 0
				for i < len(cmd) && cmd[i] == '\\' {
					n++
					i++
				}
				if i < len(cmd) && cmd[i] == '"' {
					b.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						b.WriteByte('"')
						i++
					}
					continue
				}
				b.WriteString(strings.Repeat(`\`, n))
				continue
			}
			if c == '"' {
				if quoted && i+1 < len(cmd) && cmd[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				quoted = !quoted
				i++
				continue
			}
			b.WriteByte(c)
			i++
		}
		args = append(args, b.String())
	}
}
