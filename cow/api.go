package cow

import (
	"errors"
	"io"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Aliases for the journal's record types, which cow treats as its own.
type (
	NodeState = journal.NodeState
	Change    = journal.Change
	BlobRef   = journal.BlobRef
	NodeKind  = journal.NodeKind
)

// Errors callers branch on.
var (
	// ErrDrift: files changed since their task ended and the user did not confirm.
	ErrDrift = errors.New("files changed since their task ended")
	// ErrBadPath: a path read from the journal is not a clean relative path.
	ErrBadPath = errors.New("invalid path in journal")
	// ErrCwdRemoved: the user's current directory would be removed by the apply.
	ErrCwdRemoved = errors.New("current directory would be removed")
	// ErrUnsupported: a node kind this system cannot create (fifos on
	// Windows). Apply skips such paths, finishes everything else and then
	// returns this error listing them.
	ErrUnsupported = errors.New("node kind not supported on this system")
)

// Blobs is the content store an apply reads from and a scan writes to.
type Blobs interface {
	PutBlob(r io.Reader) (BlobRef, error)
	WriteBlob(ref BlobRef, w io.Writer) error
}

// Progress reports long work (scans, applies, verification). Implementations
// draw a bar on a terminal or nothing at all.
type Progress interface {
	Start(label string, total int64)
	Add(n int64)
	Done()
}

// Manifest is a whole tree: every path (slash-separated, relative, clean) with
// its state and the stat fields seen when it was read.
type Manifest map[string]journal.StatEntry

// ScanOptions tune a scan.
type ScanOptions struct {
	// Cache is the previous scan's manifest: a file whose size, mtime, ctime,
	// inode and mode are unchanged is not re-read.
	Cache Manifest
	// Exclude names relative paths (and everything below them) to skip, such as
	// a state dir inside the root.
	Exclude func(rel string) bool
	// Workers is the number of parallel readers (0: a sensible default).
	Workers int
	// Progress may be nil; its Add is called from several goroutines.
	Progress Progress
	// HardLinks, if set, is called after the scan, in path order, with every
	// regular file that has more than one link: each is recorded as a
	// separate file and restored as one (the link is not kept).
	HardLinks func(rel string)
}

// Plan is the result of walking from one task to another.
type Plan struct {
	Walk tasks.Walk
	// Expected is the state every touched path should have at Walk.From.
	Expected map[string]NodeState
	// Target is the state every touched path must have at Walk.To.
	Target map[string]NodeState
}

// LayerSource reads one task's layer.
type LayerSource interface {
	Layer(id tasks.ID) ([]Change, error)
}

// Drifted is a path whose real state differs from what its task left.
type Drifted struct {
	Path     string
	Expected NodeState
	Actual   NodeState
}
