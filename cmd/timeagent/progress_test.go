package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyCapture collects what is written to a pseudo-terminal.
type ptyCapture struct {
	ptmx, tty *os.File
	mu        sync.Mutex
	buf       strings.Builder
	done      chan struct{}
}

func openCapture(t *testing.T) *ptyCapture {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	c := &ptyCapture{ptmx: ptmx, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-c.done
	})
	return c
}

func (c *ptyCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor polls until the captured output contains s or the time is up.
func (c *ptyCapture) waitFor(s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(c.String(), s) {
			return true
		}
	}
	return false
}

func withProgressDelay(t *testing.T, d time.Duration) {
	old := progressDelay
	progressDelay = d
	t.Cleanup(func() { progressDelay = old })
}

// TestProgressOnTerminalOnly: a bar appears on a terminal once work takes
// longer than progressDelay, and never under --json or on a non-terminal.
func TestProgressOnTerminalOnly(t *testing.T) {
	c := openCapture(t)
	withProgressDelay(t, 10*time.Millisecond)
	a := &app{io: stdio{in: c.tty, out: c.tty, err: c.tty}}
	f := a.progressFactory()
	if f == nil {
		t.Fatal("no progress reporter on a terminal")
	}
	p := f()
	p.Start("scanning", 100)
	p.Add(1)
	time.Sleep(30 * time.Millisecond)
	for i := 0; i < 50; i++ {
		p.Add(1)
	}
	if !c.waitFor("scanning", 3*time.Second) {
		t.Errorf("no progress bar on the terminal: %q", c.String())
	}
	p.Done()

	a.json = true
	if a.progressFactory() != nil {
		t.Error("progress reporter under --json")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	b := &app{io: stdio{in: strings.NewReader(""), out: io.Discard, err: pw}}
	if b.progressFactory() != nil {
		t.Error("progress reporter on a pipe")
	}
}

// TestProgressQuickWorkDrawsNothing: work shorter than the delay prints nothing.
func TestProgressQuickWorkDrawsNothing(t *testing.T) {
	c := openCapture(t)
	withProgressDelay(t, time.Hour)
	p := newTermProgress(c.tty)
	p.Start("applying", 10)
	for i := 0; i < 10; i++ {
		p.Add(1)
	}
	p.Done()
	time.Sleep(100 * time.Millisecond)
	if out := c.String(); out != "" {
		t.Errorf("quick work printed %q", out)
	}
}
