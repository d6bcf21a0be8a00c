package menu

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// bigHistory is 10,000 tasks: a main line with a branch every 50 tasks
// (a user who undid and went another way), the active task in the middle.
func bigHistory(n int) History {
	h := History{Active: uint64(n / 2), Current: uint64(n), Stamp: "big"}
	for id := 1; id <= n; id++ {
		parent := id - 1
		if id%50 == 0 {
			parent = id - 10
		}
		h.Tasks = append(h.Tasks, Task{ID: uint64(id), Parent: uint64(parent), Kind: "agent", Status: "other",
			Summary: fmt.Sprintf("task %d: refactor the module and update its tests", id), Created: epoch, Files: id % 17})
	}
	return h
}

// BenchmarkOpen10k is the first frame of a 10,000-task history: laying out
// the whole tree, then drawing the screen.
func BenchmarkOpen10k(b *testing.B) {
	h := bigHistory(10000)
	for b.Loop() {
		m := New(nil, Options{Poll: -1, Location: time.UTC})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(historyMsg{h: h})
		_ = m.View()
	}
}

// BenchmarkScroll10k is one frame while scrolling a 10,000-task history:
// a key moving the cursor, then the redraw.
func BenchmarkScroll10k(b *testing.B) {
	m := New(nil, Options{Poll: -1, Location: time.UTC})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(historyMsg{h: bigHistory(10000)})
	down := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'j'}}
	page := tea.KeyMsg{Type: tea.KeyPgDown}
	i := 0
	for b.Loop() {
		k := down
		if i%10 == 0 {
			k = page
		}
		if m.cursor == len(m.visible)-1 {
			m.cursor = 0
		}
		m.Update(k)
		_ = m.View()
		i++
	}
}

// BenchmarkOpen10kFlat is the widest tree: 10,000 tasks each started from
// the base (a user who always undid everything), so 10,000 lanes are open.
func BenchmarkOpen10kFlat(b *testing.B) {
	h := bigHistory(10000)
	for i := range h.Tasks {
		h.Tasks[i].Parent = 0
	}
	for b.Loop() {
		m := New(nil, Options{Poll: -1, Location: time.UTC})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(historyMsg{h: h})
		_ = m.View()
	}
}
