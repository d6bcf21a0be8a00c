package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// defaultHotkey is the chord that opens the menu inside `timeagent run`.
const defaultHotkey = "ctrl-]"

// chord is a parsed hotkey: the byte a terminal sends for it, and the form
// a terminal sends when the agent turned on the kitty keyboard protocol
// (CSI code ; 5 u).
type chord struct {
	name string
	b    byte
	csiu string
}

// reservedCtrl are control keys the hotkey may not take: the agent (or the
// terminal) needs them.
var reservedCtrl = map[byte]string{
	'c': "interrupts the agent", 'd': "ends input", 'z': "suspends the agent", 'h': "is Backspace",
	'i': "is Tab", 'j': "is Enter", 'm': "is Enter", 'q': "resumes output", 's': "stops output", '[': "is Escape",
}

// parseChord reads ctrl-X (also C-X, ctrl+X, ^X) for a letter or one of
// \ ] ^ _.
func parseChord(s string) (chord, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	var key string
	for _, p := range []string{"ctrl-", "ctrl+", "c-", "^"} {
		if strings.HasPrefix(l, p) {
			key = l[len(p):]
			break
		}
	}
	if len(key) != 1 || !(key[0] >= 'a' && key[0] <= 'z' || strings.ContainsRune(`\]^_[`, rune(key[0]))) {
		return chord{}, fmt.Errorf("invalid --hotkey %q: give ctrl-X for a letter X or one of \\ ] ^ _ (default %s)", s, defaultHotkey)
	}
	k := key[0]
	if why, ok := reservedCtrl[k]; ok {
		return chord{}, fmt.Errorf("invalid --hotkey %q: ctrl-%c %s; pick another (default %s)", s, k, why, defaultHotkey)
	}
	b := k & 0x1f
	return chord{name: "ctrl-" + key, b: b, csiu: "\x1b[" + strconv.Itoa(int(k)) + ";5u"}, nil
}

// find returns where the chord starts in p and its length, or -1.
func (c chord) find(p []byte) (int, int) {
	i := strings.IndexByte(string(p), c.b)
	j := strings.Index(string(p), c.csiu)
	switch {
	case i < 0 && j < 0:
		return -1, 0
	case j < 0 || (i >= 0 && i < j):
		return i, 1
	}
	return j, len(c.csiu)
}

// privateMode matches a DEC private mode set or reset (CSI ? N h / l).
var privateMode = regexp.MustCompile(`\x1b\[\?([0-9;]+)([hl])`)

// trackedModes are the terminal modes the menu changes and the agent may
// rely on: the alternate screen, the cursor's visibility, mouse reporting,
// bracketed paste and focus reports. Their last state set by the agent is
// set again when the menu closes.
var trackedModes = []int{1049, 1047, 47, 25, 1000, 1002, 1003, 1006, 2004, 1004}

// modeTracker remembers the agent's last setting of each tracked mode from
// its output stream (a sequence cut between two reads is seen whole: the
// last bytes are kept for the next scan).
type modeTracker struct {
	set  map[int]bool
	tail string
}

func (t *modeTracker) scan(p []byte) {
	if t.set == nil {
		t.set = map[int]bool{}
	}
	s := t.tail + string(p)
	for _, m := range privateMode.FindAllStringSubmatch(s, -1) {
		for _, n := range strings.Split(m[1], ";") {
			if v, err := strconv.Atoi(n); err == nil {
				t.set[v] = m[2] == "h"
			}
		}
	}
	// Keep an unfinished escape sequence for the next read.
	t.tail = ""
	if i := strings.LastIndexByte(s, 0x1b); i >= 0 && len(s)-i < 16 && !privateMode.MatchString(s[i:]) {
		t.tail = s[i:]
	}
}

// restore is the escape sequences that set every tracked mode back to what
// the agent last chose (modes it never touched are left to the terminal's
// default, which the menu restored on leaving).
func (t *modeTracker) restore() string {
	var b strings.Builder
	for _, m := range trackedModes {
		on, ok := t.set[m]
		if !ok {
			continue
		}
		c := "l"
		if on {
			c = "h"
		}
		fmt.Fprintf(&b, "\x1b[?%d%s", m, c)
	}
	return b.String()
}
