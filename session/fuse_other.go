//go:build !linux && !darwin

package session

import (
	"errors"

	"github.com/timeagent-dev/timeagent/tasks"
)

// fuseSupported: there is no FUSE on this platform; sessions run in copy mode.
func fuseSupported(*Workspace) error {
	return errors.New("FUSE is not available on this platform")
}

func startFuse(*Active, uint64, tasks.ID) (recorder, error) { return nil, fuseSupported(nil) }
