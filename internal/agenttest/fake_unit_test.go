//go:build linux

package agenttest

import "testing"

// TestFakeModelPosition pins how the fake model finds its place in a
// script: the latest user message holding a prompt's key (the later
// prompt's key when a note quotes an earlier one), then the runs of model
// turns after it; user messages without a key (tool results, context) do
// not move it.
func TestFakeModelPosition(t *testing.T) {
	f := &fakeModel{script: []Prompt{{Key: "P-ONE"}, {Key: "P-TWO"}}}
	u := func(s string) message { return message{role: "user", text: s} }
	m, o := message{role: "model"}, message{role: "other"}
	for _, tc := range []struct {
		name       string
		conv       []message
		prompt, at int
	}{
		{"first request", []message{o, u("P-ONE: go")}, 0, 0},
		{"after a tool call", []message{u("P-ONE: go"), m, o}, 0, 1},
		{"split model turn counts once", []message{u("P-ONE: go"), m, m, o, m, o}, 0, 2},
		{"resumed second prompt", []message{u("P-ONE"), m, o, m, u("P-TWO"), m, o}, 1, 1},
		{"note quoting the first prompt", []message{u("P-ONE"), m, u("note: task 1 'P-ONE' undone\nP-TWO")}, 1, 0},
		{"keyless user text", []message{u("P-ONE"), m, u("tool output"), m}, 0, 2},
		{"no key", []message{u("hello")}, -1, 0},
	} {
		p, n := f.position(tc.conv)
		if p != tc.prompt || n != tc.at {
			t.Errorf("%s: position = prompt %d turn %d, want prompt %d turn %d", tc.name, p, n, tc.prompt, tc.at)
		}
	}
}
