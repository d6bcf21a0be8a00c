package journal

import (
	"io/fs"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

// SchemaVersion is the on-disk format version stored under the schema key.
const SchemaVersion = 1

// ChunkSize is the largest chunk a blob is split into.
const ChunkSize = 1 << 20

// BlobRef names immutable content: xxhash64 of the bytes, their length, and a
// collision sequence number (0 unless two different contents shared hash and
// length, which is detected by comparing the stored bytes).
type BlobRef struct {
	Hash uint64 `json:"hash"`
	Size int64  `json:"size"`
	Seq  uint16 `json:"seq,omitempty"`
}

// NodeKind is what a path is.
type NodeKind uint8

// Node kinds. Absent is the zero value: a path that does not exist.
const (
	Absent NodeKind = iota
	File
	Dir
	Symlink
	Fifo
)

// String returns the kind's name as used in JSON and human output.
func (k NodeKind) String() string {
	switch k {
	case Absent:
		return "absent"
	case File:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	case Fifo:
		return "fifo"
	}
	return "unknown"
}

// NodeState is the full state of one path: enough to recreate it exactly.
type NodeState struct {
	Kind NodeKind
	// Mode holds the permission bits (fs.ModePerm plus setuid, setgid, sticky).
	Mode fs.FileMode
	// Size and Blob describe a file's content.
	Size int64
	Blob BlobRef
	// Target is a symlink's target, byte for byte.
	Target string
}

// Equal reports whether two states describe the same node.
func (s NodeState) Equal(o NodeState) bool {
	switch {
	case s.Kind != o.Kind:
		return false
	case s.Kind == Absent:
		return true
	case s.Kind == Symlink:
		return s.Target == o.Target
	case s.Kind == File:
		return s.Mode == o.Mode && s.Size == o.Size && s.Blob == o.Blob
	default:
		return s.Mode == o.Mode
	}
}

// Change is one path in one layer: its state before and after the task.
type Change struct {
	Path   string
	Before NodeState
	After  NodeState
}

// State is where the root is in its history.
type State struct {
	// Active is the task the working tree should show (0 = the base).
	Active tasks.ID
	// Applied is the task whose state the real files are in.
	Applied tasks.ID
	// Current is the highest task id ever created.
	Current tasks.ID
	// Clock is the visit counter used for redo's "most recently visited".
	Clock uint64
	// Reserved is the id given out for a fuse session's next task, which
	// gets its record later (cow.Reserve); no other task may take it.
	Reserved tasks.ID `json:",omitempty"`
}

// Session states.
const (
	SessionActive      = "active"
	SessionCompleted   = "completed"
	SessionInterrupted = "interrupted"
)

// Session is one `timeagent run`.
type Session struct {
	ID        uint64    `json:"id"`
	Argv      []string  `json:"argv"`
	Mode      string    `json:"mode"`
	Pid       int       `json:"pid"`
	PidStart  uint64    `json:"pidStart,omitempty"`
	Root      string    `json:"root"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitempty"`
	// ExitCode is the child's exit status (128+N for signal N); -1 while running.
	ExitCode int    `json:"exitCode"`
	State    string `json:"state"`
	// Base is the task active when the session started; Tasks are the tasks it created.
	Base  tasks.ID   `json:"base"`
	Tasks []tasks.ID `json:"tasks"`
	// Isolated sessions (run --isolate) leave the real tree at Base until
	// `timeagent apply` or `undo`.
	Isolated bool `json:"isolated,omitempty"`
}

// Intent is written durably before an apply starts and deleted after it
// ends; its presence means the apply must be finished.
type Intent struct {
	From    tasks.ID  `json:"from"`
	To      tasks.ID  `json:"to"`
	Started time.Time `json:"started"`
	// Reason says what started it (undo, redo, switch, session end).
	Reason string `json:"reason"`
	// Staging marks an apply that has not changed the tree yet (only
	// staging files were written): one that cannot read a blob back is
	// cancelled instead of finished. It is cleared, durably, before the
	// apply's first change to the tree.
	Staging bool `json:"staging,omitempty"`
	// Via lists the targets of earlier applies this one took the place of
	// before they could finish (an undo past a session whose end could
	// not be applied): each path of the tree may still be at From or at
	// any of them, so the apply covers the paths of every step
	// From→Via[0]→…→To, each brought to its state at To.
	Via []tasks.ID `json:"via,omitempty"`
}

// StatEntry is one path in the copy-mode stat cache (the last known tree): the
// node it was and the stat fields that, unchanged, prove it still is.
type StatEntry struct {
	Kind    NodeKind
	Size    int64
	MtimeNs int64
	CtimeNs int64
	Ino     uint64
	Mode    fs.FileMode
	Blob    BlobRef
	Target  string
}

// State returns the node state the entry describes.
func (e StatEntry) State() NodeState {
	s := NodeState{Kind: e.Kind}
	switch e.Kind {
	case File:
		s.Mode, s.Size, s.Blob = e.Mode, e.Size, e.Blob
	case Dir, Fifo:
		s.Mode = e.Mode
	case Symlink:
		s.Target = e.Target
	}
	return s
}

// Action is one external command an agent ran through a PATH proxy.
type Action struct {
	Seq        uint64    `json:"seq"`
	Session    uint64    `json:"session"`
	Time       time.Time `json:"time"`
	Tool       string    `json:"tool"`
	Executable string    `json:"executable"`
	Argv       []string  `json:"argv"`
	Cwd        string    `json:"cwd"`
	Category   string    `json:"category"`
	Risk       string    `json:"risk"`
	Decision   string    `json:"decision"`
	Reversible bool      `json:"reversible"`
	ExitCode   int       `json:"exitCode"`
	DurationMs int64     `json:"durationMs"`
}
