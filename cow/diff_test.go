package cow

import (
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
)

func fileState(content string, mode uint32) NodeState {
	return NodeState{Kind: fileKind, Mode: fsMode(mode), Size: int64(len(content)), Blob: BlobRef{Hash: hashString(content), Size: int64(len(content))}}
}

func dirState(mode uint32) NodeState { return NodeState{Kind: dirKind, Mode: fsMode(mode)} }

func linkState(target string) NodeState { return NodeState{Kind: symlinkKind, Target: target} }

func manifestOf(s map[string]NodeState) Manifest {
	m := Manifest{}
	for p, st := range s {
		m[p] = journal.StatEntry{Kind: st.Kind, Mode: st.Mode, Size: st.Size, Blob: st.Blob, Target: st.Target}
	}
	return m
}

func TestDiff(t *testing.T) {
	absent := NodeState{}
	tests := []struct {
		name          string
		before, after map[string]NodeState
		want          []Change
	}{
		{"equal", map[string]NodeState{"a": fileState("x", 0o644)}, map[string]NodeState{"a": fileState("x", 0o644)}, nil},
		{"created", nil, map[string]NodeState{"a": fileState("x", 0o644)},
			[]Change{{Path: "a", Before: absent, After: fileState("x", 0o644)}}},
		{"deleted", map[string]NodeState{"a": fileState("x", 0o644)}, nil,
			[]Change{{Path: "a", Before: fileState("x", 0o644), After: absent}}},
		{"content", map[string]NodeState{"a": fileState("x", 0o644)}, map[string]NodeState{"a": fileState("y", 0o644)},
			[]Change{{Path: "a", Before: fileState("x", 0o644), After: fileState("y", 0o644)}}},
		{"file mode", map[string]NodeState{"a": fileState("x", 0o644)}, map[string]NodeState{"a": fileState("x", 0o755)},
			[]Change{{Path: "a", Before: fileState("x", 0o644), After: fileState("x", 0o755)}}},
		{"dir mode", map[string]NodeState{"d": dirState(0o755)}, map[string]NodeState{"d": dirState(0o700)},
			[]Change{{Path: "d", Before: dirState(0o755), After: dirState(0o700)}}},
		{"symlink target", map[string]NodeState{"l": linkState("a")}, map[string]NodeState{"l": linkState("b")},
			[]Change{{Path: "l", Before: linkState("a"), After: linkState("b")}}},
		{"dir replaced by file",
			map[string]NodeState{"d": dirState(0o755), "d/x": fileState("1", 0o644), "d/y": dirState(0o755), "e": fileState("e", 0o644)},
			map[string]NodeState{"d": fileState("now a file", 0o644), "e": fileState("e", 0o644)},
			[]Change{
				{Path: "d", Before: dirState(0o755), After: fileState("now a file", 0o644)},
				{Path: "d/x", Before: fileState("1", 0o644), After: absent},
				{Path: "d/y", Before: dirState(0o755), After: absent},
			}},
		{"sorted", nil, map[string]NodeState{"b": dirState(0o755), "a/z": fileState("", 0o644), "a": dirState(0o755)},
			[]Change{{Path: "a", After: dirState(0o755)}, {Path: "a/z", After: fileState("", 0o644)}, {Path: "b", After: dirState(0o755)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(manifestOf(tt.before), manifestOf(tt.after))
			if !sameChanges(got, tt.want) {
				t.Errorf("Diff = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
