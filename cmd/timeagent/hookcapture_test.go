package main

import (
	"fmt"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
)

// TestChangesSince: after a crash between a capture's task commit and its
// stat-cache save, the next scan (against the stale cache) records only
// what changed since that task: paths it left as they are are dropped, a
// path changed again starts from the task's state, a path changed back to
// the cache's state is a change too.
func TestChangesSince(t *testing.T) {
	file := func(h uint64) journal.NodeState {
		return journal.NodeState{Kind: journal.File, Mode: 0o644, Size: 1, Blob: journal.BlobRef{Hash: h, Size: 1}}
	}
	none := journal.NodeState{}
	layer := []journal.Change{
		{Path: "a", Before: file(1), After: file(2)}, // left as the task made it
		{Path: "b", Before: none, After: file(3)},    // changed again since
		{Path: "c", Before: file(4), After: none},    // back to the cache's state
	}
	scan := []journal.Change{ // Diff(stale cache, now)
		{Path: "a", Before: file(1), After: file(2)},
		{Path: "b", Before: none, After: file(5)},
		{Path: "d", Before: none, After: file(6)}, // new since
	}
	got := changesSince(scan, layer)
	want := []journal.Change{
		{Path: "b", Before: file(3), After: file(5)},
		{Path: "c", Before: none, After: file(4)},
		{Path: "d", Before: none, After: file(6)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changesSince:\n%v\nwant\n%v", got, want)
	}
}
