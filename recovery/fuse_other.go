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

// DetachDead detaches dead FUSE mounts on dir or its parents; there are none
// on this platform.
func DetachDead(string) error { return nil }

func finishDeadFuse(Target, journal.Session, tasks.ID, func() error) (int, error) {
	return 0, errors.New("a FUSE session cannot be recovered on this platform")
}

// DetachDeadAbove detaches a dead timeagent overlay covering path; there are
// none on this platform.
func DetachDeadAbove(string) (string, error) { return "", nil }
