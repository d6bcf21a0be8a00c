package fs

import (
	"errors"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// ErrUnsupported: FUSE overlays cannot be mounted on this platform.
var ErrUnsupported = errors.New("fuse overlays are not supported on this platform")

// ErrStagingInRoot: the staging dir must be outside the root it serves.
var ErrStagingInRoot = errors.New("staging dir is inside the root")

// Options configure an overlay.
type Options struct {
	// RootPath is the absolute canonical root: the mountpoint and the lower tree.
	RootPath string
	// Journal receives before-states, blobs and after-states.
	Journal *journal.Journal
	// StagingDir is a private directory in the state dir for the upper layer.
	// It must not be inside RootPath.
	StagingDir string
	// Task is the task that is active when the session starts recording.
	Task tasks.ID
	// Logf, if set, receives debug messages.
	Logf func(format string, args ...any)
}
