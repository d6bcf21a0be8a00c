// Package plural writes counts in English for human messages: "1 path",
// "2 paths", "0 entries". It knows nothing else.
package plural

import (
	"strconv"
	"strings"
)

// Count is n and noun, the noun in the plural unless n is 1.
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun in the plural unless n is 1 (regular English plurals:
// -s, -es after s, x, ch and sh, -ies after a consonant and y).
func Noun(n int, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// Verb is the present tense of a verb whose subject is n things: "is" or
// "are", "fails" or "fail" (verb is given in the plural form: "are",
// "fail", "were").
func Verb(n int, verb string) string {
	if n != 1 {
		return verb
	}
	switch verb {
	case "are":
		return "is"
	case "were":
		return "was"
	case "have":
		return "has"
	}
	return Noun(2, verb) // fail → fails, touch → touches
}
