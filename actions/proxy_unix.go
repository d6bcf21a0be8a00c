//go:build !windows

package actions

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// askTerminal asks prompt on the controlling terminal (/dev/tty, never
// stdin) and reports whether the answer was y or yes. It returns an error
// when there is no controlling terminal. An interrupt while asking, an empty
// answer or end of input is No.
func askTerminal(prompt string) (bool, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false, err // *PathError: "open /dev/tty: ..."
	}
	defer tty.Close()
	// A background process reading its terminal would be stopped by
	// SIGTTIN until someone brings it to the foreground: refuse instead.
	if pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP); err != nil || pgrp != unix.Getpgrp() {
		return false, errors.New("not in the foreground of /dev/tty")
	}
	if _, err := tty.WriteString(prompt); err != nil {
		return false, fmt.Errorf("write /dev/tty: %w", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	answer := make(chan string, 1)
	go func() { answer <- readAnswer(bufio.NewReader(tty)) }()
	select {
	case a := <-answer:
		return isYes(a), nil
	case <-sigs:
		tty.WriteString("\n")
		return false, nil
	}
}

// lockPrompts serializes the questions of proxies running at the same time
// (an exclusive flock on dir/.prompt.lock) so two prompts never share the
// terminal. Without a usable dir it does not lock.
func lockPrompts(dir string) (unlock func()) {
	if dir == "" {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, ".prompt.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return func() {}
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	return func() { f.Close() }
}

// forwardSignals relays SIGTERM and SIGHUP to p, and SIGINT and SIGQUIT
// unless the proxy is in its terminal's foreground process group (then the
// terminal already sent them to the whole group, p included, and sending
// them again would look like a second Ctrl-C). It returns a function that
// stops relaying.
func forwardSignals(p *os.Process) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if (s == syscall.SIGINT || s == syscall.SIGQUIT) && inForeground() {
					continue
				}
				p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// inForeground reports whether this process belongs to the foreground
// process group of its controlling terminal.
func inForeground() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// exitStatus returns a finished process's exit code, 128+N when signal N
// killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// passThrough replaces the proxy with the real tool (used for calls that
// are not external actions, which are not recorded). It returns only when
// the exec fails.
func passThrough(real string, argv, env []string) int {
	err := syscall.Exec(real, argv, env)
	fmt.Fprintf(proxyStderr, "timeagent: %s: exec %s: %v\n", argv[0], real, err)
	return ExitRefused
}

// isExecutable reports whether p is a regular file (after symlinks) with an
// execute bit.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// executableNames returns the file names tool may have in a PATH entry.
func executableNames(tool string) []string { return []string{tool} }

// proxyFileNames returns the names Install gives tool's proxy.
func proxyFileNames(tool string) []string { return []string{tool} }
