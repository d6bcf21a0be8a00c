package hooks

import (
	"fmt"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// TestStateViews: the record keeps one view per conversation, drops the
// oldest past maxViews (never the one just written), and survives a save
// and load.
func TestStateViews(t *testing.T) {
	var s State
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < maxViews+5; i++ {
		s.Saw(fmt.Sprint("c", i), tasks.ID(i), t0.Add(time.Duration(i)*time.Second))
	}
	s.Saw("", 99, t0) // the oldest time, but just written
	if len(s.Views) != maxViews {
		t.Fatalf("%d views", len(s.Views))
	}
	if _, ok := s.Views[""]; !ok {
		t.Fatal("the view just written was dropped")
	}
	if _, ok := s.Views["c0"]; ok {
		t.Fatal("the oldest view was kept")
	}
	dir := t.TempDir()
	if err := SaveState(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(dir)
	if err != nil || len(got.Views) != maxViews || got.Views[""].Task != 99 {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	if empty, err := LoadState(t.TempDir()); err != nil || len(empty.Views) != 0 {
		t.Fatalf("missing record: %+v %v", empty, err)
	}
}
