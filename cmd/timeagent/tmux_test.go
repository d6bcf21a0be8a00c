//go:build linux || darwin

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmux is a real terminal for a test: a tmux server of its own (its own
// socket), one 120×40 window running a command, keys typed with send-keys
// and the screen read with capture-pane, as a person would.
type tmux struct {
	t      *testing.T
	socket string
}

// newTmux starts command (a shell line) in a new tmux window in dir.
func newTmux(t *testing.T, e *env, dir, command string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	sock, err := os.MkdirTemp("", "ta-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	x := &tmux{t: t, socket: filepath.Join(sock, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", x.socket, "kill-server").Run()
		time.Sleep(300 * time.Millisecond) // the window's processes end
		os.RemoveAll(sock)
	})
	cmd := exec.Command("tmux", "-S", x.socket, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-c", dir, command)
	cmd.Env = append(e.baseEnv(), "TERM=xterm-256color", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	return x
}

func (x *tmux) tmux(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.socket}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys types keys (tmux key names: Enter, Escape, Up, C-] …; others literally).
func (x *tmux) keys(keys ...string) {
	x.t.Helper()
	x.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// screen is what the terminal shows now.
func (x *tmux) screen() string {
	x.t.Helper()
	return x.tmux("capture-pane", "-p", "-t", "0")
}

// waitFor waits until the screen shows every text, and returns it.
func (x *tmux) waitFor(texts ...string) string {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := x.screen()
		missing := ""
		for _, want := range texts {
			if !strings.Contains(s, want) {
				missing = want
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the screen never showed %q:\n%s", missing, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitGone waits until the screen no longer shows text, and returns it.
// A key typed right after Escape must wait for this: a terminal program
// reads an escape followed at once by a letter as alt+letter.
func (x *tmux) waitGone(text string) string {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := x.screen()
		if !strings.Contains(s, text) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the screen still shows %q:\n%s", text, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitContent waits until rel in the root reads want.
func (e *env) waitContent(rel, want string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(e.path(rel))
		if string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s reads %q, want %q", rel, b, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMenuTmux opens the menu on a real terminal after two sessions, moves
// the cursor, switches, undoes and redoes with its keys, answers the drift
// question, and checks the files on disk each time.
func TestMenuTmux(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "v0\n", 0o644)
	e.sh("copy", `echo v1 > a.txt`)
	e.sh("copy", `echo v2 > a.txt; printf 'x\000y' > blob.bin`)
	x := newTmux(t, e, e.root, fmt.Sprintf("%q tm; echo menu-exit=$?; sleep 60", binary))
	x.waitFor("active task 2 of 2", "task 2 · agent · 2 files", "+v2")
	// The files pane: the binary file is named, not shown.
	x.keys("Tab", "j")
	x.waitFor("── blob.bin", "Binary files /dev/null and b/blob.bin differ")
	x.keys("Tab", "j")
	x.waitFor("task 1 · agent · 1 file", "+v1")
	x.keys("Enter")
	x.waitFor("switch: task 2 → task 1")
	e.waitContent("a.txt", "v1\n")
	if exists(e.path("blob.bin")) {
		t.Error("switching to task 1 left blob.bin (created by task 2)")
	}
	x.keys("u")
	x.waitFor("undo: task 1 → task 0")
	e.waitContent("a.txt", "v0\n")
	x.keys("r")
	x.waitFor("redo: task 0 → task 1")
	e.waitContent("a.txt", "v1\n")

	// An edit made outside: switching over it asks, inside the menu.
	e.write("a.txt", "edited\n", 0o644)
	x.keys("k", "Enter")
	x.waitFor("move to task 2? [y/N]", "a.txt", "kept as task 3")
	x.keys("n")
	x.waitFor("switch cancelled: nothing was changed")
	e.waitContent("a.txt", "edited\n")
	x.keys("Enter")
	x.waitFor("move to task 2? [y/N]")
	x.keys("y")
	x.waitFor("switch: task 1 → task 2")
	e.waitContent("a.txt", "v2\n")
	// The edit is kept as a task, and the menu's poll shows it.
	x.waitFor("[outside]")

	x.keys("/", "blob", "Enter")
	x.waitFor(`filter "blob": 1 shown`)
	x.keys("Escape")
	x.waitGone(`filter "blob"`)
	x.waitFor("active task 2 of 3")
	x.keys("t", "release", "Enter")
	x.waitFor("tagged task 2 release", "[release]")
	x.keys("q")
	x.waitFor("menu-exit=0")
	var tags tagsJSON
	e.jsonOf(&tags, "tag", "--json")
	if len(tags.Tags) != 1 || tags.Tags[0].Name != "release" || tags.Tags[0].Task != 2 {
		t.Errorf("tags after t in the menu: %+v", tags.Tags)
	}
}

// TestMenuTmuxLiveSession opens the menu while a fuse session runs: it
// shows the session's task, and u moves the agent's view at once through
// the control channel.
func TestMenuTmuxLiveSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "v0\n", 0o644)
	e.sh("copy", `echo v1 > a.txt`)
	bg := e.cmd("run", "--mode", "fuse", "-m", "live agent", "--", "sh", "-c", `echo v2 > a.txt
while [ ! -e "$SCRATCH/go" ]; do sleep 0.1; done
cat a.txt > "$SCRATCH/view"`)
	var out strings.Builder
	bg.Stdout, bg.Stderr = &out, &out
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bg.Wait() }()
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(e.scratch, "go"), nil, 0o644)
		<-done
	})
	e.waitContent("a.txt", "v2\n") // through the overlay: the session is up
	x := newTmux(t, e, e.root, fmt.Sprintf("%q tm; echo menu-exit=$?; sleep 60", binary))
	x.waitFor("active task 2 of 2", "live agent")
	x.keys("u")
	x.waitFor("undo: task 2 → task 1")
	e.waitContent("a.txt", "v1\n")
	x.keys("q")
	x.waitFor("menu-exit=0")
	if err := os.WriteFile(filepath.Join(e.scratch, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the session failed: %v\n%s", err, out.String())
	}
	done <- nil
	if got := e.readScratch("view"); got != "v1\n" {
		t.Errorf("the agent saw %q after the menu's undo, want v1", got)
	}
	if got := e.read("a.txt"); got != "v1\n" {
		t.Errorf("after the session a.txt is %q, want v1", got)
	}
}

// TestHotkeyTmux runs an agent under run's hotkey on a real terminal: the
// chord opens the menu over the agent, u moves the agent's view at once,
// q brings the agent's screen back, and the keys typed afterwards reach
// the agent exactly once.
func TestHotkeyTmux(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "v0\n", 0o644)
	e.sh("copy", `echo v1 > a.txt`)
	agent := `printf '\033[?25l'; echo agent-ready; echo v2 > a.txt; read line; echo "got:$line:$(cat a.txt)"; read l2; echo "got2:$l2"`
	x := newTmux(t, e, e.root, fmt.Sprintf("%q run --mode fuse -m hotkey-agent -- sh -c %s; echo run-exit=$?; sleep 60", binary, shellWord(agent)))
	x.waitFor("ctrl-] opens the time machine menu", "agent-ready")
	e.waitContent("a.txt", "v2\n")
	x.keys("C-]")
	x.waitFor("active task 2 of 2", "hotkey-agent")
	x.keys("u")
	x.waitFor("undo: task 2 → task 1")
	e.waitContent("a.txt", "v1\n")
	x.keys("q")
	s := x.waitFor("agent-ready")
	if strings.Contains(s, "active task") {
		t.Fatalf("the menu is still on screen after q:\n%s", s)
	}
	x.keys("hello", "Enter")
	s = x.waitFor("got:hello:v1")
	if strings.Count(s, "hello") != 2 { // the terminal's echo and the agent's line
		t.Errorf("hello shown %d times (want the echo and got:hello once each):\n%s", strings.Count(s, "hello"), s)
	}
	// A second time: the chord still works, and the agent's input is its own.
	x.keys("C-]")
	x.waitFor("active task 1 of 2")
	x.keys("Escape")
	x.waitFor("got:hello:v1")
	x.keys("bye", "Enter")
	x.waitFor("got2:bye", "run-exit=0")
	if got := e.read("a.txt"); got != "v1\n" {
		t.Errorf("after the session a.txt is %q, want v1 (the menu's undo)", got)
	}
}

// TestHotkeyOffWithoutTerminal: with stdin not a terminal, run starts the
// agent directly (no pseudo-terminal, no notice), and a bad --hotkey is a
// usage error.
func TestHotkeyOffWithoutTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("run", "--mode", "copy", "--", "sh", "-c", "test -t 0 && echo tty || echo notty")
	if strings.TrimSpace(r.Stdout) != "notty" || strings.Contains(r.Stderr, "opens the time machine") {
		t.Errorf("without a terminal: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	r = e.fails(2, "run", "--hotkey", "ctrl-c", "--", "true")
	contains(t, "ctrl-c hotkey", r.Stderr, "interrupts the agent")
}

// shellWord quotes s as one sh word.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestHotkeyResize: the terminal resized while the menu is open; the
// agent's terminal has the new size when the menu closes.
func TestHotkeyResize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agent := `echo agent-ready; echo "size:$(stty size)"; read line; echo "after:$(stty size)"`
	x := newTmux(t, e, e.root, fmt.Sprintf("%q run --mode copy -- sh -c %s; echo run-exit=$?; sleep 60", binary, shellWord(agent)))
	x.waitFor("agent-ready", "size:40 120")
	x.keys("C-]")
	x.waitFor("active task")
	x.tmux("resize-window", "-t", "0", "-x", "100", "-y", "30")
	x.waitFor("q quit")
	x.keys("q")
	x.waitFor("agent-ready")
	x.keys("Enter")
	x.waitFor("after:30 100", "run-exit=0")
}

// TestHotkeyAltScreen: an agent drawing on the alternate screen, which
// redraws only when its size changes (as ratatui and ink do), shows its
// screen again after the menu closes.
func TestHotkeyAltScreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stop := filepath.Join(e.scratch, "stop")
	agent := `printf '\033[?1049h'; last=; draw() { s=$(stty size); if [ "$s" != "$last" ]; then printf '\033[2J\033[H'; echo "fullscreen-agent $s"; last=$s; fi; }; trap draw WINCH; draw; while [ ! -f ` + shellWord(stop) + ` ]; do sleep 0.1; done; printf '\033[?1049l'; echo agent-done`
	x := newTmux(t, e, e.root, fmt.Sprintf("%q run --mode copy -- bash -c %s; echo run-exit=$?; sleep 60", binary, shellWord(agent)))
	x.waitFor("fullscreen-agent 40 120")
	x.keys("C-]")
	x.waitFor("active task")
	x.keys("q")
	x.waitFor("fullscreen-agent 40 120")
	writeFile(t, stop, nil, 0o644)
	x.waitFor("agent-done", "run-exit=0")
}
