//go:build !linux

package recovery

import (
	"errors"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// UnmountStale detaches a FUSE mount left on root by a dead session; there
// are none on this platform.
func UnmountStale(string) (bool, error) { return false, nil }

func finishDeadFuse(Target, journal.Session, tasks.ID) (int, error) {
	return 0, errors.New("a FUSE session cannot be recovered on this platform")
}
