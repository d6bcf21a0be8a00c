package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeName makes a file name (or any text holding one) safe to print on a
// terminal in human output: a name holding a control character (escape
// sequences, carriage return, newline), a format character (such as a
// bidirectional override), bytes that are not UTF-8, a double quote or a
// backslash is printed quoted with Go's escapes, as git does with
// core.quotePath; every other name is printed as it is. JSON output never
// goes through it.
func escapeName(s string) string {
	if !needsQuoting(s) {
		return s
	}
	return strconv.Quote(s)
}

func needsQuoting(s string) bool {
	if strings.ContainsAny(s, `"\`) {
		return true
	}
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
