package hooks

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/tasks"
)

// maxNotePaths bounds the paths a note names.
const maxNotePaths = 10

// Note tells the agent that its files were moved since it last saw them
// (undo, redo or switch from another terminal, the menu or an MCP call):
// where they are now, which tasks were undone or (re)applied, and the paths
// that changed. It is empty when nothing moved: the files are at seen, or at
// a task recorded after seenAt on top of it (the agent's own work).
func Note(tree *tasks.Tree, layers cow.LayerSource, seen, now tasks.ID, seenAt time.Time) (string, error) {
	if seen == now || (seen != tasks.Base && !tree.Has(seen)) || (now != tasks.Base && !tree.Has(now)) {
		return "", nil
	}
	walk, err := tree.Path(seen, now)
	if err != nil {
		return "", err
	}
	var redone []tasks.ID
	for _, id := range walk.Down {
		if t, ok := tree.Get(id); ok && !t.Created.After(seenAt) {
			redone = append(redone, id)
		}
	}
	if len(walk.Up) == 0 && len(redone) == 0 {
		return "", nil
	}
	plan, err := cow.MakePlan(tree, layers, seen, now)
	if err != nil {
		return "", err
	}
	var paths []string
	for p, target := range plan.Target {
		if exp, ok := plan.Expected[p]; !ok || !exp.Equal(target) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString("timeagent: the files were moved since your last turn (outside this conversation): they are now at ")
	if now == tasks.Base {
		b.WriteString("the state before any recorded task")
	} else {
		t, _ := tree.Get(now)
		fmt.Fprintf(&b, "task %d %q", now, t.Summary)
	}
	if len(walk.Up) > 0 {
		fmt.Fprintf(&b, "; %s undone", describeTasks(walk.Up))
	}
	if len(redone) > 0 {
		fmt.Fprintf(&b, "; %s applied", describeTasks(redone))
	}
	if len(paths) > 0 {
		shown := paths
		if len(shown) > maxNotePaths {
			shown = shown[:maxNotePaths]
		}
		fmt.Fprintf(&b, ": %s", strings.Join(shown, ", "))
		if len(paths) > len(shown) {
			fmt.Fprintf(&b, " and %d more", len(paths)-len(shown))
		}
	}
	b.WriteString(". Read files again before you edit them; do not redo undone work unless asked.")
	return b.String(), nil
}

// describeTasks names a list of tasks: "task 6 was", "tasks 6–7 were",
// "tasks 3, 5 were".
func describeTasks(ids []tasks.ID) string {
	s := append([]tasks.ID(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 1 {
		return fmt.Sprintf("task %d was", s[0])
	}
	contiguous := true
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous {
		return fmt.Sprintf("tasks %d–%d were", s[0], s[len(s)-1])
	}
	parts := make([]string, len(s))
	for i, id := range s {
		parts[i] = fmt.Sprint(id)
	}
	return "tasks " + strings.Join(parts, ", ") + " were"
}
