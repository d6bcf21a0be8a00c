//go:build windows

package actions

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
)

// askTerminal asks prompt on the console (CONOUT$/CONIN$, never stdin) and
// reports whether the answer was y or yes. It returns an error when there is
// no console.
func askTerminal(prompt string) (bool, error) {
	in, err := os.OpenFile("CONIN$", os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile("CONOUT$", os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer out.Close()
	if _, err := out.WriteString(prompt); err != nil {
		return false, fmt.Errorf("write CONOUT$: %w", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	answer := make(chan string, 1)
	go func() { answer <- readAnswer(bufio.NewReader(in)) }()
	select {
	case a := <-answer:
		return isYes(a), nil
	case <-sigs:
		return false, nil
	}
}

// lockPrompts does not lock on Windows.
func lockPrompts(dir string) (unlock func()) { return func() {} }

// forwardSignals ignores Ctrl-C in the proxy while the tool runs: the
// console delivers it to the tool itself.
func forwardSignals(p *os.Process) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	return func() { signal.Stop(sigs) }
}

// exitStatus returns a finished process's exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

// passThrough runs the real tool for a call that is not recorded.
func passThrough(real string, argv, env []string) int {
	code, err := runChild(real, argv, env)
	if err != nil {
		fmt.Fprintf(proxyStderr, "timeagent: %s: %v\n", argv[0], err)
	}
	return code
}

// isExecutable reports whether p is a regular file.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// executableNames returns the file names tool may have in a PATH entry: the
// name with each PATHEXT extension, or the name itself if it has one.
func executableNames(tool string) []string {
	if filepath.Ext(tool) != "" {
		return []string{tool}
	}
	exts := os.Getenv("PATHEXT")
	if exts == "" {
		exts = ".COM;.EXE;.BAT;.CMD"
	}
	var out []string
	for _, e := range strings.Split(exts, ";") {
		if e != "" {
			out = append(out, tool+strings.ToLower(e))
		}
	}
	return out
}

// proxyFileNames returns the names Install gives tool's proxies.
func proxyFileNames(tool string) []string { return []string{tool + ".exe", tool + ".cmd"} }
