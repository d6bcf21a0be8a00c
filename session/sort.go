package session

import (
	"sort"

	"github.com/timeagent-dev/timeagent/journal"
)

func sortChanges(c []journal.Change) {
	sort.Slice(c, func(i, k int) bool { return c[i].Path < c[k].Path })
}
