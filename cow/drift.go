package cow

import (
	"fmt"
	"os"
	"path"
	"sort"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Drift compares the real tree on the given paths with their expected states.
// Content that differs is stored in blobs so it can be kept as a task. A path
// whose lstat equals its cache entry is taken to be in the cached state
// without reading it. The result is sorted by path.
func Drift(root *os.Root, blobs Blobs, expected map[string]NodeState, cache Manifest) ([]Drifted, error) {
	dirs := newDirCache(root)
	defer dirs.close()
	paths := sortedKeys(expected)
	for _, p := range paths {
		if !ValidPath(p) {
			return nil, fmt.Errorf("drift %q: %w", p, ErrBadPath)
		}
	}
	actual, err := actualStates(dirs, blobs, paths, cache)
	if err != nil {
		return nil, err
	}
	return drifted(paths, expected, actual), nil
}

// drifted lists the paths whose actual state is not the expected one.
func drifted(paths []string, expected, actual map[string]NodeState) []Drifted {
	var out []Drifted
	for _, p := range paths {
		if a := actual[p]; !a.Equal(expected[p]) {
			out = append(out, Drifted{Path: p, Expected: expected[p], Actual: a})
		}
	}
	return out
}

// actualStates returns the real state of each path, reading (into blobs)
// the content of files the cache does not vouch for. Paths are grouped by
// directory so each directory is opened once.
func actualStates(dirs *dirCache, blobs Blobs, paths []string, cache Manifest) (map[string]NodeState, error) {
	byDir := map[string][]string{}
	for _, p := range paths {
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], p)
	}
	out := make(map[string]NodeState, len(paths))
	for _, dir := range sortedKeys(byDir) {
		d, err := dirs.get(dir)
		if err != nil {
			if isNotExist(err) || !dirs.isDir(dir) {
				continue // the whole directory is gone: every path is absent
			}
			return nil, fmt.Errorf("drift %s: %w", dir, err)
		}
		for _, p := range byDir[dir] {
			s, err := actualState(d, blobs, p, cache)
			if err != nil {
				dirs.release(d)
				return nil, err
			}
			out[p] = s
		}
		dirs.release(d)
	}
	return out, nil
}

// actualState reads one path of d.
func actualState(d *dirHandle, blobs Blobs, p string, cache Manifest) (NodeState, error) {
	name := path.Base(p)
	for attempt := 0; attempt < maxReadAttempts; attempt++ {
		st, err := d.lstat(name)
		if err != nil {
			if isNotExist(err) {
				return NodeState{}, nil
			}
			return NodeState{}, fmt.Errorf("drift %s: %w", p, err)
		}
		switch {
		case st.skip:
			return NodeState{}, nil // sockets and devices are never recorded
		case st.kind == dirKind, st.kind == fifoKind:
			return NodeState{Kind: st.kind, Mode: st.mode}, nil
		case st.kind == symlinkKind:
			target, err := d.readlink(name)
			if err != nil {
				if isNotExist(err) {
					continue
				}
				return NodeState{}, fmt.Errorf("drift %s: %w", p, err)
			}
			return NodeState{Kind: symlinkKind, Target: target}, nil
		}
		if e, ok := cache[p]; ok && st.matches(e) {
			return e.State(), nil
		}
		e, ok, err := readFileEntry(d, blobs, name, p)
		if err != nil {
			return NodeState{}, err
		}
		if ok {
			return e.State(), nil
		}
	}
	return NodeState{}, fmt.Errorf("drift %s: path keeps changing type", p)
}

// sortDrifted orders drifted paths by path.
func sortDrifted(d []Drifted) {
	sort.Slice(d, func(i, j int) bool { return d[i].Path < d[j].Path })
}

// StateReader reads the state of paths somewhere other than a real tree:
// the mounted view of a fuse session (fs.ViewReader).
type StateReader interface {
	// States returns the state of each path; cache (the stat cache of the
	// real tree) may vouch for real files whose lstat matches their entry.
	States(paths []string, cache map[string]journal.StatEntry) (map[string]NodeState, error)
	// Below returns every path below the directory dir that known does not
	// list, with its state.
	Below(dir string, known map[string]NodeState) (map[string]NodeState, error)
}

// DriftFrom is planDrift against the states r reads: the touched paths
// whose state differs from the plan's expected state, plus whatever lies
// below a directory the plan removes that the plan does not know. The
// result is sorted by path. cache is passed on to r.States.
func DriftFrom(r StateReader, plan Plan, cache map[string]journal.StatEntry) ([]Drifted, error) {
	paths := sortedKeys(plan.Expected)
	for _, p := range paths {
		if !ValidPath(p) {
			return nil, fmt.Errorf("drift %q: %w", p, ErrBadPath)
		}
	}
	actual, err := r.States(paths, cache)
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	out := drifted(paths, plan.Expected, actual)
	for _, p := range plan.Paths() {
		if plan.Target[p].Kind == dirKind || actual[p].Kind != dirKind {
			continue
		}
		extra, err := r.Below(p, plan.Target)
		if err != nil {
			return nil, fmt.Errorf("drift: %w", err)
		}
		for q, s := range extra {
			if !ValidPath(q) {
				return nil, fmt.Errorf("drift %q: %w", q, ErrBadPath)
			}
			out = append(out, Drifted{Path: q, Actual: s})
		}
	}
	sortDrifted(out)
	return dedupeDrifted(out), nil
}

// KeepDrift records drifted content as an outside task, child of parent
// (an existing outside child holding exactly these changes is reused), and
// returns its id. The position in history does not move. Every move does
// this before it overwrites drifted content (design: drift).
func KeepDrift(j *journal.Journal, parent tasks.ID, d []Drifted, now time.Time) (tasks.ID, error) {
	tree, err := j.Tree()
	if err != nil {
		return 0, fmt.Errorf("record drift: %w", err)
	}
	changes := make([]Change, len(d))
	for i, x := range d {
		changes[i] = Change{Path: x.Path, Before: x.Expected, After: x.Actual}
	}
	return recordDrift(j, tree, parent, changes, now)
}
