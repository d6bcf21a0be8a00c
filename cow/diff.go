package cow

// Diff returns the changes from before to after, sorted by path. A path
// counts as changed when its node states differ (a missing path is absent);
// a directory replaced by a file is one change at that path plus one for
// each of the directory's former children.
func Diff(before, after Manifest) []Change {
	paths := make(map[string]struct{}, len(after))
	for p := range before {
		paths[p] = struct{}{}
	}
	for p := range after {
		paths[p] = struct{}{}
	}
	var out []Change
	for _, p := range sortedKeys(paths) {
		var b, a NodeState
		if e, ok := before[p]; ok {
			b = e.State()
		}
		if e, ok := after[p]; ok {
			a = e.State()
		}
		if !b.Equal(a) {
			out = append(out, Change{Path: p, Before: b, After: a})
		}
	}
	return out
}
