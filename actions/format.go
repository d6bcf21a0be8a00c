package actions

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

// Disclaimer is the first line of every human listing of actions: what the
// proxies cannot see.
const Disclaimer = "External actions seen by timeagent's PATH proxies. This is detection, not containment: " +
	"it does not see tools called by absolute path, renamed or copied tools, API calls made from code, " +
	"shell built-ins, or tools not in the proxied list; none of these actions can be undone by timeagent."

// Format writes list as a table for people: the disclaimer, then one line
// per action with seq, local time, risk, decision, exit code, duration and the
// command with secret values redacted (a note says so when any were).
func Format(w io.Writer, list []journal.Action) error {
	if _, err := fmt.Fprintln(w, Disclaimer); err != nil {
		return fmt.Errorf("format actions: %w", err)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "No external actions recorded.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCATEGORY\tRISK\tDECISION\tEXIT\tDURATION\tCOMMAND")
	anyRedacted := false
	for _, a := range list {
		shown, red := DisplayCommand(a.Argv)
		anyRedacted = anyRedacted || red
		exit, dur := strconv.Itoa(a.ExitCode), (time.Duration(a.DurationMs) * time.Millisecond).String()
		if a.ExitCode == ExitUnknown {
			exit, dur = "?", "?"
		}
		if a.Decision == DecisionDenied {
			exit, dur = "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Seq, a.Time.Local().Format("2006-01-02 15:04:05"),
			a.Category, a.Risk, a.Decision, exit, dur, shown)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("format actions: %w", err)
	}
	var notes []string
	if anyRedacted {
		notes = append(notes, "Values of secret-looking flags (--token, --password, ...) are shown as "+Redacted+".")
	}
	for _, a := range list {
		if a.ExitCode == ExitUnknown && a.Decision != DecisionDenied {
			notes = append(notes, "EXIT ? means the action was still running or its proxy was killed before it ended.")
			break
		}
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return fmt.Errorf("format actions: %w", err)
		}
	}
	return nil
}

// Counts counts list by risk (key "risk") and by decision (key "decision"),
// e.g. Counts(l)["risk"]["high"].
func Counts(list []journal.Action) map[string]map[string]int {
	out := map[string]map[string]int{"risk": {}, "decision": {}}
	for _, a := range list {
		out["risk"][a.Risk]++
		out["decision"][a.Decision]++
	}
	return out
}

// RuleDoc returns the rule table as a markdown table for the README: one row
// per group of tools with the subcommands of each risk, the risk of other
// subcommands and notes. The README copy is compared with it by a test.
func RuleDoc() string {
	var b strings.Builder
	b.WriteString("| tools | category | low | medium | high | critical | other subcommands | notes |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, tr := range allRules {
		by := map[string][]string{}
		for _, r := range tr.rules {
			by[r.risk] = append(by[r.risk], "`"+r.cmd+"`")
		}
		cell := func(risk string) string { return strings.Join(by[risk], ", ") }
		notes := []string{}
		if tr.bare != "" && tr.bare != tr.dflt {
			notes = append(notes, "no subcommand: "+tr.bare)
		}
		if len(tr.valueFlags) > 0 {
			notes = append(notes, "flags whose next argument is a value, not the subcommand: `"+strings.Join(tr.valueFlags, "`, `")+"`")
		}
		if tr.note != "" {
			notes = append(notes, tr.note)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
			strings.Join(tr.tools, ", "), tr.category, cell(RiskLow), cell(RiskMedium), cell(RiskHigh),
			cell(RiskCritical), tr.dflt, strings.ReplaceAll(strings.Join(notes, "; "), "|", `\|`))
	}
	b.WriteString("\nFor every tool, a call whose arguments are only `--help`, `-h`, `--version`, `-V`, `-v`, `help` or `version` is low. " +
		"Subcommand words match the leading non-flag arguments (`*` matches any word); the longest match wins. " +
		"`none` means not an external action: passed through to the real tool with no record.\n")
	return b.String()
}

// RedactActions returns a copy of list with every argv passed through Redact
// (for JSON output), and whether any value was redacted.
func RedactActions(list []journal.Action) ([]journal.Action, bool) {
	out := make([]journal.Action, len(list))
	any := false
	for i, a := range list {
		red, r := Redact(a.Argv)
		a.Argv = red
		any = any || r
		out[i] = a
	}
	return out, any
}
