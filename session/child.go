package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync/atomic"
)

// ErrStart means the child could not be started; no task is recorded.
var ErrStart = errors.New("failed to start")

// Child is the agent process of a session.
type Child struct {
	cmd  *exec.Cmd
	sigs chan os.Signal
	done chan struct{}
	// forwarded is set once a signal was passed on to the child.
	forwarded atomic.Bool
}

// LookPath resolves argv[0] the way the child's start will, so a command that
// does not exist is refused before anything is recorded.
func LookPath(argv0 string) (string, error) {
	p, err := exec.LookPath(argv0)
	if err != nil {
		return "", fmt.Errorf("%w %q: command not found", ErrStart, argv0)
	}
	return p, nil
}

// StartChild starts argv in dir with env, inheriting the given stdio (the
// terminal), and forwards SIGINT, SIGTERM and SIGHUP that timeagent receives.
// argv is passed unchanged, never re-joined into a shell string. With ctty
// (Unix), stdin is a pseudo-terminal made for the child: the child starts a
// new session with it as its controlling terminal, so the terminal's keys
// (Ctrl-C, Ctrl-Z) and its size changes reach the child through it.
func StartChild(argv []string, dir string, env []string, stdin io.Reader, stdout, stderr io.Writer, ctty bool) (*Child, error) {
	name := argv[0]
	if dir != "" && filepath.Base(name) != name && !filepath.IsAbs(name) {
		// ./script: relative to the child's directory, not to timeagent's
		// (which leaves the root while an overlay is mounted).
		name = filepath.Join(dir, name)
	}
	path, err := LookPath(name)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	setChildAttrs(cmd)
	if ctty {
		setControllingTerminal(cmd)
	}
	c := &Child{cmd: cmd, sigs: make(chan os.Signal, 8), done: make(chan struct{})}
	signal.Notify(c.sigs, forwardedSignals...)
	// The parent-death signal (Linux) follows the thread that forked the
	// child, not the process: keep that thread until Wait, so the runtime
	// cannot retire it and send the child a SIGTERM early, and so the
	// signal comes exactly when timeagent dies.
	runtime.LockOSThread()
	if err := dropAgentCaps(); err != nil {
		runtime.UnlockOSThread()
		signal.Stop(c.sigs)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		signal.Stop(c.sigs)
		return nil, fmt.Errorf("%w %q: %v", ErrStart, argv[0], err)
	}
	go c.forward(stdin)
	return c, nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

func (c *Child) forward(stdin io.Reader) {
	for {
		select {
		case s := <-c.sigs:
			if skipForward(s, stdin) {
				continue
			}
			c.forwarded.Store(true)
			_ = c.cmd.Process.Signal(s)
		case <-c.done:
			return
		}
	}
}

// Signal sends s to the child.
func (c *Child) Signal(s os.Signal) error { return c.cmd.Process.Signal(s) }

// Wait waits for the child and returns its exit status: the exit code, or
// 128+N when it died of signal N. It must run on the goroutine that called
// StartChild.
//
// Once a signal was forwarded, the session is ending because of it: the
// signals stay caught (and ignored) while timeagent finalises the session,
// so a second copy cannot kill it half way. Copies are common: the kernel
// sends a parent-death signal (run --isolate's namespaced half) once for
// every thread of the dying parent.
func (c *Child) Wait() int {
	err := c.cmd.Wait()
	runtime.UnlockOSThread()
	if !c.forwarded.Load() {
		signal.Stop(c.sigs)
	}
	close(c.done)
	return exitStatus(c.cmd.ProcessState, err)
}
