package actions

import (
	"fmt"
	"strings"
	"unicode"
)

// Redacted replaces the value of a secret-looking flag in displayed argv.
const Redacted = "<redacted>"

// secretFlags are the flags whose values are hidden in human and JSON output
// (decision 4). The stored log keeps the exact argv.
var secretFlags = []string{"--token", "--password", "--api-key", "--secret", "--client-secret", "--access-token"}

// Redact returns a copy of argv with the values of secret-looking flags
// (--token, --password, --api-key, --secret, --client-secret, --access-token,
// as `--flag value` or `--flag=value`) replaced by Redacted, and whether it
// replaced any.
func Redact(argv []string) (out []string, redacted bool) {
	out = make([]string, len(argv))
	copy(out, argv)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if j := strings.IndexByte(a, '='); j > 0 && contains(secretFlags, a[:j]) {
			out[i] = a[:j+1] + Redacted
			redacted = true
			continue
		}
		if contains(secretFlags, a) && i+1 < len(out) {
			out[i+1] = Redacted
			redacted = true
			i++
		}
	}
	return out, redacted
}

// ShellQuote joins argv into one line a POSIX shell would split back into
// the same words: words made only of safe characters are left bare, others
// are single-quoted, and words holding control characters are written in
// $'...' form with escapes, so a displayed command cannot move the cursor or
// hide part of itself.
func ShellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellWord(a))
	}
	return b.String()
}

func shellWord(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || r >= 0x80 && !unicode.IsPrint(r) {
			return ansiCQuote(s)
		}
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiCQuote writes s as a bash $'...' word with every byte that is not
// printable ASCII escaped.
func ansiCQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// DisplayCommand returns argv as one shell-quoted line for people, with the
// values of secret-looking flags shown as a bare <redacted>, and whether any
// were redacted.
func DisplayCommand(argv []string) (string, bool) {
	red, any := Redact(argv)
	words := make([]string, len(red))
	for i, a := range red {
		switch {
		case a == argv[i]:
			words[i] = shellWord(a)
		case a == Redacted:
			words[i] = Redacted
		default: // --flag=<redacted>
			words[i] = shellWord(strings.TrimSuffix(a, Redacted)) + Redacted
		}
	}
	return strings.Join(words, " "), any
}
