package main

import (
	"strings"
	"testing"
)

func TestParseChord(t *testing.T) {
	for _, c := range []struct {
		in   string
		b    byte
		csiu string
		err  string
	}{
		{"ctrl-]", 0x1d, "\x1b[93;5u", ""},
		{"C-]", 0x1d, "\x1b[93;5u", ""},
		{"^t", 0x14, "\x1b[116;5u", ""},
		{"Ctrl+G", 0x07, "\x1b[103;5u", ""},
		{`ctrl-\`, 0x1c, "\x1b[92;5u", ""},
		{"ctrl-c", 0, "", "interrupts the agent"},
		{"ctrl-[", 0, "", "is Escape"},
		{"alt-x", 0, "", "give ctrl-X"},
		{"ctrl-", 0, "", "give ctrl-X"},
	} {
		got, err := parseChord(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.b != c.b || got.csiu != c.csiu {
			t.Errorf("%q: %+v, %v; want byte %#x and %q", c.in, got, err, c.b, c.csiu)
		}
	}
}

func TestChordFind(t *testing.T) {
	c, _ := parseChord("ctrl-]")
	for _, x := range []struct {
		in   string
		i, n int
	}{
		{"abc", -1, 0},
		{"ab\x1dcd", 2, 1},
		{"x\x1b[93;5uy", 1, 7},
		{"\x1b[93;5u\x1d", 0, 7},
		{"\x1d\x1b[93;5u", 0, 1},
	} {
		i, n := c.find([]byte(x.in))
		if i != x.i || n != x.n {
			t.Errorf("find(%q) = %d, %d; want %d, %d", x.in, i, n, x.i, x.n)
		}
	}
}

func TestModeTracker(t *testing.T) {
	var m modeTracker
	m.scan([]byte("hello\x1b[?1049h\x1b[?25l\x1b[?10"))
	m.scan([]byte("00;1006hmore\x1b[?2004h"))
	m.scan([]byte("\x1b[?2004l"))
	want := "\x1b[?1049h\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?2004l"
	if got := m.restore(); got != want {
		t.Errorf("restore() = %q, want %q", got, want)
	}
	var none modeTracker
	if got := none.restore(); got != "" {
		t.Errorf("an agent that set no mode: restore() = %q", got)
	}
}
