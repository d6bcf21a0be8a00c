package actions

import (
	"bufio"
	"strings"
)

// readAnswer reads one answer line (ended by a newline, a carriage return as
// a raw-mode terminal sends, or end of input) of at most 64 bytes.
func readAnswer(r *bufio.Reader) string {
	var b strings.Builder
	for b.Len() < 64 {
		c, err := r.ReadByte()
		if err != nil || c == '\n' || c == '\r' {
			break
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isYes reports whether an answer means yes: y or yes, any case, spaces
// around ignored.
func isYes(answer string) bool {
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
