package main

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// escapeName makes a file name (or any text holding one: a task summary, a
// command line) safe to print on a terminal in human output: text holding a
// control character (escape sequences, carriage return, newline), a format
// character (such as a bidirectional override) or bytes that are not UTF-8
// is printed double-quoted with Go's escapes, as git does with
// core.quotePath; any other text is printed as it is. Every human output
// prints names through it; JSON output never does.
func escapeName(s string) string {
	if !needsQuoting(s) {
		return s
	}
	return strconv.Quote(s)
}

func needsQuoting(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return true
		}
		if r != ' ' && !unicode.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}
