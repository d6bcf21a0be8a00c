package hooks

import (
	"path"
	"strings"

	"github.com/timeagent-dev/timeagent/actions"
)

// Classified is one simple command of a command line that the PATH
// proxies' rule table knows.
type Classified struct {
	Argv     []string // the tool's name (base name) and its arguments
	Category string
	Risk     string
}

// ClassifyLine splits a shell command line into its simple commands
// (separated by ;, &, &&, ||, |, newlines, parentheses and braces, also inside
// `sh -c '…'` and $(…)) and classifies each one the rule table knows, as the
// PATH proxies would (a tool called by absolute path counts under its base
// name). cwd and root are the directory the line runs in and the root
// (they matter for sqlite3's database file).
func ClassifyLine(line, cwd, root string) []Classified {
	var out []Classified
	for _, argv := range simpleCommands(line, 0) {
		if len(argv) == 0 || !actions.IsTool(argv[0]) {
			continue
		}
		cat, risk := actions.ClassifyAt(argv[0], argv[1:], cwd, root)
		if risk == actions.RiskNone {
			continue
		}
		out = append(out, Classified{Argv: argv, Category: cat, Risk: risk})
	}
	return out
}

// Highest returns the classified command of the highest risk (the first of
// equals), and false when there is none.
func Highest(list []Classified) (Classified, bool) {
	var best Classified
	found := false
	for _, c := range list {
		if !found || !actions.RiskAtLeast(best.Risk, c.Risk) {
			best, found = c, true
		}
	}
	return best, found
}

// wrappers run their arguments as a command.
var wrappers = map[string]bool{
	"sudo": true, "env": true, "time": true, "nohup": true, "exec": true, "command": true,
	"nice": true, "timeout": true, "stdbuf": true, "xargs": true, "doas": true, "then": true,
	"do": true, "else": true, "if": true, "while": true, "until": true, "!": true,
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true}

// simpleCommands returns the argv of every simple command in line, wrappers
// and leading variable assignments removed, argv[0] reduced to its base name.
func simpleCommands(line string, depth int) [][]string {
	if depth > 4 {
		return nil
	}
	var out [][]string
	for _, words := range splitCommands(line, depth) {
		argv := unwrap(words)
		if len(argv) == 0 {
			continue
		}
		if shells[argv[0]] {
			for i := 1; i < len(argv)-1; i++ {
				if strings.HasPrefix(argv[i], "-") && !strings.HasPrefix(argv[i], "--") && strings.Contains(argv[i], "c") {
					out = append(out, simpleCommands(argv[i+1], depth+1)...)
					break
				}
			}
			continue
		}
		out = append(out, argv)
	}
	return out
}

// unwrap drops variable assignments and wrapper commands (with their
// options) in front of the command, and reduces argv[0] to its base name.
func unwrap(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		if i := strings.IndexByte(w, '='); i > 0 && isName(w[:i]) {
			words = words[1:]
			continue
		}
		base := path.Base(w)
		if !wrappers[base] {
			break
		}
		words = words[1:]
		// The wrapper's options (and a timeout's duration).
		for len(words) > 0 && (strings.HasPrefix(words[0], "-") || base == "timeout" && isDuration(words[0])) {
			words = words[1:]
		}
	}
	if len(words) == 0 {
		return nil
	}
	out := append([]string(nil), words...)
	out[0] = path.Base(out[0])
	return out
}

func isName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

func isDuration(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// splitCommands tokenizes line like a POSIX shell (quotes, backslashes,
// comments) into the words of each simple command. The text of $(…) and
// backquotes is split as commands of its own.
func splitCommands(line string, depth int) [][]string {
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			i++
			if rs[i] != '\n' {
				cur.WriteRune(rs[i])
				inWord = true
			}
		case r == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				cur.WriteRune(rs[i])
			}
		case r == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]) {
					i++
				}
				cur.WriteRune(rs[i])
			}
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			// $(…): its commands count too; the word gets a placeholder.
			end := matching(rs, i+1)
			cmds = append(cmds, splitCommands(string(rs[i+2:end]), depth+1)...)
			cur.WriteString("$(…)")
			inWord = true
			i = end
		case r == '`':
			end := i + 1
			for end < len(rs) && rs[end] != '`' {
				end++
			}
			cmds = append(cmds, splitCommands(string(rs[i+1:min(end, len(rs))]), depth+1)...)
			cur.WriteString("`…`")
			inWord = true
			i = end
		case r == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			endCmd()
		case r == ';' || r == '&' || r == '|' || r == '\n' || r == '(' || r == ')' || r == '{' && !inWord || r == '}' && !inWord:
			endCmd()
		case r == '<' || r == '>':
			// A redirection: its target is no argument.
			endWord()
			for i+1 < len(rs) && (rs[i+1] == '>' || rs[i+1] == '&' || rs[i+1] == '<') {
				i++
			}
			for i+1 < len(rs) && (rs[i+1] == ' ' || rs[i+1] == '\t') {
				i++
			}
			for i+1 < len(rs) && !strings.ContainsRune(" \t\n;&|()<>", rs[i+1]) {
				i++
			}
			if len(words) > 0 && isFD(words[len(words)-1]) {
				words = words[:len(words)-1]
			}
		case r == ' ' || r == '\t' || r == '\r':
			endWord()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	endCmd()
	return cmds
}

func isFD(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// matching returns the index of the parenthesis closing the one at open,
// or len(rs) when it is not closed.
func matching(rs []rune, open int) int {
	depth := 0
	for i := open; i < len(rs); i++ {
		switch rs[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		case '\'':
			for i++; i < len(rs) && rs[i] != '\''; i++ {
			}
		}
	}
	return len(rs)
}
