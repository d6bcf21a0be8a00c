package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/internal/plural"
)

// This file holds what makes a command line a usage error (exit 2): the
// argument counts, the typed flag values (--color, --mode, task ids), and
// how such an error is shown: the cause, the usage line and a --help pointer.

// nArgs accepts between min and max positional arguments (max < 0: no
// limit), naming the command and the count in its error.
func nArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		n := len(args)
		if n >= min && (max < 0 || n <= max) {
			return nil
		}
		var want string
		switch {
		case max == 0:
			return &usageError{fmt.Errorf("%s takes no arguments, got %s", cmd.Name(), quoteArgs(args))}
		case min == max:
			want = "exactly " + plural.Count(min, "argument")
		case n < min:
			want = "at least " + plural.Count(min, "argument")
		default:
			want = "at most " + plural.Count(max, "argument")
		}
		return &usageError{fmt.Errorf("%s takes %s, got %d", cmd.Name(), want, n)}
	}
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, s := range args {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}

// enumFlag is a flag that takes one of a few words (--color, --mode): a
// bad value is a usage error at parse time, and the words are its
// completions.
type enumFlag struct {
	p     *string
	words []string
	kind  string // the value's name in --help: WHEN, MODE
}

// enumVar defines the flag name on cmd, stored in p (default def), taking
// one of words; bash, zsh and fish complete the words.
func enumVar(cmd *cobra.Command, p *string, name, def, kind, usage string, words ...string) {
	*p = def
	cmd.Flags().Var(&enumFlag{p: p, words: words, kind: kind}, name, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	})
}

func (f *enumFlag) String() string { return *f.p }
func (f *enumFlag) Type() string   { return f.kind }

func (f *enumFlag) Set(s string) error {
	for _, w := range f.words {
		if s == w {
			*f.p = s
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, orList(f.words))
}

func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// taskFlag is a flag naming a task: a task id (0 = the base) or a tag name.
// Anything else is a usage error at parse time; the journal resolves it
// later (resolveTask).
type taskFlag struct{ p *string }

// taskVar defines the task flag name on cmd, stored in p; bash, zsh and
// fish complete task ids and tag names (complete.go).
func (a *app) taskVar(cmd *cobra.Command, p *string, name, usage string) {
	cmd.Flags().Var(&taskFlag{p}, name, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, a.completeTasks)
}

func (f *taskFlag) String() string { return *f.p }
func (f *taskFlag) Type() string   { return "TASK" }

func (f *taskFlag) Set(s string) error {
	if _, err := strconv.ParseUint(s, 10, 64); err != nil && cow.ValidTagName(s) != nil {
		return fmt.Errorf("%q is not a task id (a number from timeagent log) or a tag name", s)
	}
	*f.p = s
	return nil
}

// numberFlag is a flag that takes a whole number (an id that is not a
// task's: --session).
type numberFlag struct {
	p    *string
	what string
}

func (f *numberFlag) String() string { return *f.p }
func (f *numberFlag) Type() string   { return "ID" }

func (f *numberFlag) Set(s string) error {
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return fmt.Errorf("%q is not %s", s, f.what)
	}
	*f.p = s
	return nil
}

var (
	cobraUnknownCmd = regexp.MustCompile(`^unknown command "(.*)" for "(.*)"`)
	cobraSuggest    = regexp.MustCompile(`Did you mean this\?\n((?:\t.*\n)+)`)
	cobraBadFlag    = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: (.*)$`)
	cobraExclusive  = regexp.MustCompile(`^if any flags in the group \[.*\] are set none of the others can be; \[(.*)\] were all set$`)
	cobraTogether   = regexp.MustCompile(`^if any flags in the group \[(.*)\] are set they must all be set; missing \[(.*)\]$`)
	cobraNoValue    = regexp.MustCompile(`^flag needs an argument: (?:'(.)' in -.|(--\S+))$`)
)

// usageText rewrites cobra's and pflag's messages into one line.
func usageText(err error) string {
	s := err.Error()
	if m := cobraUnknownCmd.FindStringSubmatch(s); m != nil {
		msg := fmt.Sprintf("unknown command %q", m[1])
		if sug := cobraSuggest.FindStringSubmatch(s); sug != nil {
			var names []string
			for _, l := range strings.Split(strings.TrimSpace(sug[1]), "\n") {
				names = append(names, strings.TrimSpace(l))
			}
			msg += " (did you mean " + orList(names) + "?)"
		}
		return msg
	}
	if m := cobraExclusive.FindStringSubmatch(s); m != nil {
		return andList(dashed(strings.Fields(m[1]))) + " exclude each other: give one"
	}
	if m := cobraTogether.FindStringSubmatch(s); m != nil {
		return andList(dashed(strings.Fields(m[1]))) + " go together: add " + andList(dashed(strings.Fields(m[2])))
	}
	if m := cobraNoValue.FindStringSubmatch(s); m != nil {
		if m[1] != "" {
			return "-" + m[1] + " needs a value"
		}
		return m[2] + " needs a value"
	}
	if m := cobraBadFlag.FindStringSubmatch(s); m != nil {
		flag := m[2]
		if i := strings.Index(flag, ", "); i >= 0 {
			flag = flag[i+2:] // "-m, --message": the long name
		}
		return fmt.Sprintf("invalid %s: %s", flag, m[3])
	}
	return s
}

func dashed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "--" + n
	}
	return out
}

func andList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// usageHelp is what follows a usage error: the command's usage line and
// where its help (with examples) is.
func usageHelp(cmd *cobra.Command) string {
	if cmd == nil {
		return ""
	}
	if !cmd.HasParent() {
		return fmt.Sprintf("usage: %s COMMAND [ARGS...]\nrun `%s --help` for the commands\n", cmd.Name(), cmd.Name())
	}
	return fmt.Sprintf("usage: %s\nrun `%s --help` for the flags and examples\n", cmd.UseLine(), cmd.CommandPath())
}

// isUsage reports whether err is a bad command line.
func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || isCobraUsage(err)
}
