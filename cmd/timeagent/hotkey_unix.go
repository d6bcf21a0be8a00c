//go:build !windows

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/creack/pty"
	"github.com/muesli/cancelreader"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/timeagent-dev/timeagent/internal/menu"
)

// hotkey sits between the user's terminal and the agent, which runs on a
// pseudo-terminal: every byte the user types goes to the agent exactly once,
// except the chord, which opens the time machine menu. While the menu is
// open the agent keeps running; its output is held and shown when the menu
// closes, after the agent's screen modes are set again and it is told to
// redraw (SIGWINCH).
type hotkey struct {
	chord     chord
	in, out   *os.File // the user's terminal
	ptmx, tty *os.File
	src       menu.Source
	saved     *term.State
	stdin     cancelreader.CancelReader
	outDone   chan struct{}
	inDone    chan struct{}
	served    chan struct{}
	winch     chan os.Signal

	mu     sync.Mutex
	cond   *sync.Cond
	inMenu bool
	held   bytes.Buffer // the agent's output while the menu is open
	menuQ  []byte       // the user's keys for the menu
	closed bool         // the menu stopped reading
	modes  modeTracker
	shown  uint64       // how many reads of the agent's output reached the terminal
	prog   *tea.Program // the menu, while it is open
	open   chan []byte  // the chord was typed
}

// startHotkey puts the terminal in raw mode and starts the pseudo-terminal
// the agent will run on; the child's stdio is h.tty.
func startHotkey(in, out *os.File, c chord, src menu.Source) (*hotkey, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("hotkey: open a pseudo-terminal: %w (run with --no-hotkey)", err)
	}
	if err := pty.InheritSize(in, ptmx); err != nil {
		ptmx.Close()
		tty.Close()
		return nil, fmt.Errorf("hotkey: size the pseudo-terminal: %w", err)
	}
	saved, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		ptmx.Close()
		tty.Close()
		return nil, fmt.Errorf("hotkey: put the terminal in raw mode: %w (run with --no-hotkey)", err)
	}
	stdin, err := cancelreader.NewReader(in)
	if err != nil {
		term.Restore(int(in.Fd()), saved)
		ptmx.Close()
		tty.Close()
		return nil, fmt.Errorf("hotkey: read the terminal: %w", err)
	}
	h := &hotkey{chord: c, in: in, out: out, ptmx: ptmx, tty: tty, src: src, saved: saved, stdin: stdin,
		outDone: make(chan struct{}), inDone: make(chan struct{}), served: make(chan struct{}), winch: make(chan os.Signal, 1), open: make(chan []byte, 1)}
	h.cond = sync.NewCond(&h.mu)
	signal.Notify(h.winch, syscall.SIGWINCH)
	go h.copyOutput()
	go h.copyInput()
	go h.serve()
	return h, nil
}

// copyOutput passes the agent's output to the terminal, or holds it while
// the menu is open.
func (h *hotkey) copyOutput() {
	defer close(h.outDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := h.ptmx.Read(buf)
		if n > 0 {
			h.mu.Lock()
			h.modes.scan(buf[:n])
			if h.inMenu {
				h.held.Write(buf[:n])
			} else {
				h.out.Write(buf[:n])
				h.shown++
			}
			h.mu.Unlock()
		}
		if err != nil {
			return // EIO: the agent and everything it started closed the terminal
		}
	}
}

// copyInput routes the user's keys: to the agent, or to the menu once the
// chord was typed.
func (h *hotkey) copyInput() {
	defer close(h.inDone)
	buf := make([]byte, 4096)
	for {
		n, err := h.stdin.Read(buf)
		if n > 0 {
			h.route(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (h *hotkey) route(p []byte) {
	h.mu.Lock()
	if h.inMenu {
		h.menuQ = append(h.menuQ, p...)
		h.cond.Broadcast()
		h.mu.Unlock()
		return
	}
	i, n := h.chord.find(p)
	if i < 0 {
		h.mu.Unlock()
		h.ptmx.Write(p)
		return
	}
	h.inMenu, h.closed = true, false
	h.menuQ = append(h.menuQ[:0], p[i+n:]...)
	h.mu.Unlock()
	if i > 0 {
		h.ptmx.Write(p[:i])
	}
	h.open <- nil
}

// Read is the menu's input: the keys typed since the chord.
func (h *hotkey) Read(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.menuQ) == 0 && !h.closed {
		h.cond.Wait()
	}
	if len(h.menuQ) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.menuQ)
	h.menuQ = h.menuQ[n:]
	return n, nil
}

// serve opens the menu when the chord is typed, and resizes the agent's
// terminal when the user's changes size.
func (h *hotkey) serve() {
	defer close(h.served)
	for {
		select {
		case _, ok := <-h.open:
			if !ok {
				return
			}
			h.showMenu()
		case <-h.winch:
			pty.InheritSize(h.in, h.ptmx)
		}
	}
}

func (h *hotkey) showMenu() {
	stopReading := func() {
		h.mu.Lock()
		h.closed = true
		h.cond.Broadcast()
		h.mu.Unlock()
	}
	p := tea.NewProgram(menu.New(h.src, menu.Options{}), tea.WithAltScreen(), tea.WithInput(h), tea.WithOutput(h.out),
		tea.WithoutBracketedPaste(), tea.WithoutSignalHandler(),
		tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if _, ok := msg.(tea.QuitMsg); ok {
				stopReading()
			}
			return msg
		}))
	h.mu.Lock()
	h.prog = p
	h.mu.Unlock()
	_, err := p.Run()
	stopReading()
	h.mu.Lock()
	h.prog = nil
	if err != nil {
		fmt.Fprintf(h.out, "timeagent: time machine menu: %v\r\n", err)
	}
	// The agent's screen: its modes, then what it printed meanwhile.
	io.WriteString(h.out, h.modes.restore())
	alt := h.modes.altScreen()
	h.out.Write(h.held.Bytes())
	h.held.Reset()
	rest := h.menuQ
	h.menuQ, h.inMenu = nil, false
	h.mu.Unlock()
	// Keys typed after the menu stopped reading belong to the agent.
	if len(rest) > 0 {
		h.ptmx.Write(rest)
	}
	if alt {
		h.forceRedraw()
	}
	h.redraw()
}

// forceRedraw makes a full-screen agent draw its whole screen again: the
// menu's alternate screen replaced what the agent had drawn on its own, and
// a program that keeps a copy of its screen (ratatui, ink) redraws only the
// cells it thinks changed on a SIGWINCH of the same size. A size one row
// smaller, then the real one, is a change it must redraw in full for; the
// smaller size stays until the agent has drawn (or for a second), so a slow
// agent does not read the real size again on both signals.
func (h *hotkey) forceRedraw() {
	size, err := pty.GetsizeFull(h.in)
	if err != nil || size.Rows < 2 {
		return
	}
	smaller := *size
	smaller.Rows--
	h.mu.Lock()
	before := h.shown
	h.mu.Unlock()
	if pty.Setsize(h.ptmx, &smaller) != nil {
		return
	}
	h.signalResize()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		h.mu.Lock()
		drawn := h.shown != before
		h.mu.Unlock()
		if drawn {
			return
		}
	}
}

// redraw sizes the agent's terminal like the user's and tells the agent's
// foreground process group to redraw.
func (h *hotkey) redraw() {
	pty.InheritSize(h.in, h.ptmx)
	h.signalResize()
}

// signalResize sends SIGWINCH to the agent's foreground process group.
func (h *hotkey) signalResize() {
	if pgrp, err := unix.IoctlGetInt(int(h.ptmx.Fd()), unix.TIOCGPGRP); err == nil && pgrp > 0 {
		_ = unix.Kill(-pgrp, unix.SIGWINCH)
	}
}

// stop ends the hotkey after the agent exited: the rest of the agent's
// output is shown (for at most a second: a process the agent left behind
// may hold the terminal open), an open menu is closed, the user's keys are
// no longer read, and the terminal leaves raw mode.
func (h *hotkey) stop() {
	h.tty.Close()
	select {
	case <-h.outDone:
	case <-time.After(time.Second):
	}
	h.stdin.Cancel()
	<-h.inDone
	h.mu.Lock()
	p := h.prog
	h.mu.Unlock()
	if p != nil {
		p.Quit()
	}
	close(h.open)
	<-h.served
	h.ptmx.Close()
	signal.Stop(h.winch)
	h.stdin.Close()
	term.Restore(int(h.in.Fd()), h.saved)
}

// hotkeySupported: the hotkey needs a pseudo-terminal (Unix).
const hotkeySupported = true

// altScreen reports whether the agent last switched to the alternate screen
// (whose content the menu's own alternate screen replaced).
func (t *modeTracker) altScreen() bool {
	return t.set[1049] || t.set[1047] || t.set[47]
}
