package actions

import (
	"os"
	"path"
	"sort"
	"strings"
)

// Risk levels, lowest first. RiskNone marks a call of a proxied tool that is
// not an external action (a local git command, sqlite3 on a file inside the
// root): it is passed through without a record.
const (
	RiskNone     = "none"
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// Categories of proxied tools.
const (
	CategoryPackage        = "package"
	CategoryDatabase       = "database"
	CategoryInfrastructure = "infrastructure"
	CategoryGit            = "git"
)

// rule gives the risk of one subcommand. Cmd is a space-separated list of
// words matched against the leading positional arguments with path.Match
// (so "* delete-*" matches `aws ec2 delete-vpc`); the longest match wins.
type rule struct {
	cmd  string
	risk string
}

// toolRules is the rule set shared by one or more tool names.
type toolRules struct {
	tools    []string
	category string
	// valueFlags are the flags that take their value as the next argument,
	// skipped when looking for the subcommand (`kubectl -n prod delete`).
	valueFlags []string
	rules      []rule
	// bare is the risk of a call with no subcommand; dflt of a subcommand no
	// rule matches.
	bare, dflt string
	// anyWord: the first positional argument equal to a rule's single word
	// decides (gcloud and az put their verb after a variable number of
	// command groups).
	anyWord bool
	// adjust changes the risk after the rules, from flags or arguments.
	adjust func(risk string, c call) string
	// note documents adjust for the README table.
	note string
}

// call is one invocation being classified.
type call struct {
	tool string
	args []string
	// words are the positional arguments before "--", global value flags
	// and their values skipped.
	words []string
	cwd   string
	root  string
}

var riskOrder = map[string]int{RiskNone: 0, RiskLow: 1, RiskMedium: 2, RiskHigh: 3, RiskCritical: 4}

// RiskAtLeast reports whether risk is at least min in the order none < low <
// medium < high < critical.
func RiskAtLeast(risk, min string) bool { return riskOrder[risk] >= riskOrder[min] }

func maxRisk(a, b string) string {
	if riskOrder[b] > riskOrder[a] {
		return b
	}
	return a
}

var byTool = func() map[string]*toolRules {
	m := map[string]*toolRules{}
	for _, r := range allRules {
		for _, t := range r.tools {
			m[t] = r
		}
	}
	return m
}()

// Tools returns the names of every proxied tool, sorted.
func Tools() []string {
	var out []string
	for t := range byTool {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// IsTool reports whether name is a proxied tool.
func IsTool(name string) bool { _, ok := byTool[name]; return ok }

// Classify returns the category and risk of running tool with args (argv
// without argv[0]) in the current directory, with the session root taken from
// TIMEAGENT_ROOT. A tool not in the table returns ("", RiskNone).
func Classify(tool string, args []string) (category, risk string) {
	cwd, _ := os.Getwd()
	return ClassifyAt(tool, args, cwd, os.Getenv(EnvRoot))
}

// ClassifyAt is Classify with the working directory and the session root
// given (they matter for sqlite3's database file).
func ClassifyAt(tool string, args []string, cwd, root string) (category, risk string) {
	tr, ok := byTool[tool]
	if !ok {
		return "", RiskNone
	}
	c := call{tool: tool, args: args, cwd: cwd, root: root}
	c.words = positionals(args, tr.valueFlags, tool)
	risk = tr.match(c.words)
	if onlyHelp(args) && risk != RiskNone {
		risk = RiskLow
	}
	if tr.adjust != nil {
		risk = tr.adjust(risk, c)
	}
	return tr.category, risk
}

// match returns the risk the rules give to the positional words.
func (tr *toolRules) match(words []string) string {
	if len(words) == 0 {
		return tr.bare
	}
	best, bestLen := tr.dflt, 0
	for _, r := range tr.rules {
		pat := strings.Fields(r.cmd)
		if tr.anyWord {
			if len(pat) == 1 && bestLen == 0 {
				for _, w := range words {
					if w == pat[0] {
						best, bestLen = r.risk, 1
						break
					}
				}
			}
			continue
		}
		if len(pat) > len(words) || len(pat) <= bestLen {
			continue
		}
		ok := true
		for i, p := range pat {
			if m, err := path.Match(p, words[i]); err != nil || !m {
				ok = false
				break
			}
		}
		if ok {
			best, bestLen = r.risk, len(pat)
		}
	}
	if tr.anyWord && bestLen == 0 {
		return tr.dflt
	}
	return best
}

// positionals returns the arguments before "--" that are not flags, skipping
// the values of valueFlags given as separate arguments. For cargo a leading
// +toolchain is skipped; for terraform -chdir=DIR is a flag like any other.
func positionals(args, valueFlags []string, tool string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out
		case tool == "cargo" && i == 0 && strings.HasPrefix(a, "+"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if !strings.Contains(a, "=") && contains(valueFlags, a) {
				i++
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// onlyHelp reports whether args ask only for help or a version.
func onlyHelp(args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, a := range args {
		switch a {
		case "--help", "-h", "--version", "-V", "-v", "help", "version":
		default:
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// beforeDashes returns args up to the first "--".
func beforeDashes(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[:i]
		}
	}
	return args
}

// hasFlag reports whether one of flags appears before "--", alone or as
// --flag=value.
func hasFlag(args []string, flags ...string) bool {
	for _, a := range beforeDashes(args) {
		name := a
		if i := strings.IndexByte(a, '='); i > 0 && strings.HasPrefix(a, "--") {
			name = a[:i]
		}
		if contains(flags, name) {
			return true
		}
	}
	return false
}

// shortFlag reports whether a cluster of short flags (-fu) holds letter.
func shortFlag(args []string, letter byte) bool {
	for _, a := range beforeDashes(args) {
		if len(a) >= 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], letter) >= 0 {
			return true
		}
	}
	return false
}
