package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// This file holds colour and paging of human output, as git does them:
// colour on a terminal unless NO_COLOR is set (--color overrides), and
// output longer than the terminal shown through $PAGER, else `less` with
// LESS=FRX.

// stdoutTerminal is stdout when it is a terminal of this process (not a
// command served for another process, not a pipe or file).
func (a *app) stdoutTerminal() (*os.File, bool) {
	if a.active != nil {
		return nil, false
	}
	f, ok := a.io.out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return f, true
}

// useColor resolves --color: always, never, or auto (a terminal and
// NO_COLOR unset or empty).
func (a *app) useColor(mode string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		if os.Getenv("NO_COLOR") != "" {
			return false, nil
		}
		_, ok := a.stdoutTerminal()
		return ok, nil
	}
	return false, &usageError{fmt.Errorf("invalid --color %q: use auto, always or never", mode)}
}

// colorVar defines --color WHEN on cmd, stored in p.
func colorVar(cmd *cobra.Command, p *string) {
	enumVar(cmd, p, "color", "auto", "WHEN", "colour the output: auto (on a terminal, unless NO_COLOR is set), always or never",
		"auto", "always", "never")
}

// termWidth is the width of the terminal on stdout, else git's 80 columns
// (COLUMNS, when set, wins as in git).
func (a *app) termWidth() int {
	if n, err := parsePositive(os.Getenv("COLUMNS")); err == nil {
		return n
	}
	if f, ok := a.stdoutTerminal(); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

func parsePositive(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("not a positive number: %q", s)
	}
	return n, nil
}

// pager collects human output; close writes it to stdout, through the
// pager when stdout is a terminal and the output is longer than it.
type pager struct {
	a   *app
	buf bytes.Buffer
	w   io.Writer
	// direct buffers stdout when it is not a terminal: a listing of
	// thousands of lines is not thousands of writes.
	direct *bufio.Writer
}

// startPager returns where human output goes: a buffer when it may be
// paged, else (buffered) stdout itself.
func (a *app) startPager() *pager {
	p := &pager{a: a}
	if _, ok := a.stdoutTerminal(); ok {
		p.w = &p.buf
		return p
	}
	p.direct = bufio.NewWriterSize(a.io.out, 64<<10)
	p.w = p.direct
	return p
}

// pagerCommand is the pager to run: $TIMEAGENT_PAGER, $PAGER, else less;
// "" (or cat) means none.
func pagerCommand() string {
	for _, v := range []string{"TIMEAGENT_PAGER", "PAGER"} {
		if s, ok := os.LookupEnv(v); ok {
			if s = strings.TrimSpace(s); s == "cat" {
				return ""
			}
			return s
		}
	}
	return "less"
}

// close shows what was collected. A pager that cannot start leaves the
// output on stdout.
func (p *pager) close() {
	if p.direct != nil {
		_ = p.direct.Flush()
		return
	}
	out := p.a.io.out
	f, _ := p.a.stdoutTerminal()
	_, rows, err := term.GetSize(int(f.Fd()))
	name := pagerCommand()
	if err != nil || name == "" || bytes.Count(p.buf.Bytes(), []byte("\n")) < rows {
		_, _ = out.Write(p.buf.Bytes())
		return
	}
	cmd := shellCommand(name)
	cmd.Stdin = bytes.NewReader(p.buf.Bytes())
	cmd.Stdout, cmd.Stderr = f, p.a.io.err
	cmd.Env = os.Environ()
	if _, ok := os.LookupEnv("LESS"); !ok {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if _, ok := os.LookupEnv("LV"); !ok {
		cmd.Env = append(cmd.Env, "LV=-c")
	}
	// Ctrl-C belongs to the pager (less keeps running on it), as in git:
	// caught here so timeagent waits for the pager instead of leaving it
	// behind on the terminal.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(p.a.io.err, "timeagent: warning: pager %q did not start (%v): set PAGER to a pager, or PAGER=cat for none\n", name, err)
		_, _ = out.Write(p.buf.Bytes())
		return
	}
	_ = cmd.Wait()
}
