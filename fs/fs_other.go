//go:build !linux && !darwin

package fs

import (
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// Supported reports whether FUSE overlays can be mounted here: never on this platform.
func Supported() error { return ErrUnsupported }

// Overlay is a mounted overlay; it cannot exist on this platform.
type Overlay struct{}

// Mount fails with ErrUnsupported on this platform.
func Mount(opts Options) (*Overlay, error) { return nil, ErrUnsupported }

// Flush fails with ErrUnsupported on this platform.
func (o *Overlay) Flush() error { return ErrUnsupported }

// Checkpoint fails with ErrUnsupported on this platform.
func (o *Overlay) Checkpoint(next tasks.ID) error { return ErrUnsupported }

// SetView fails with ErrUnsupported on this platform.
func (o *Overlay) SetView(target map[string]journal.NodeState, task tasks.ID) error {
	return ErrUnsupported
}

// Unmount fails with ErrUnsupported on this platform.
func (o *Overlay) Unmount() error { return ErrUnsupported }

// Unmount fails with ErrUnsupported on this platform.
func Unmount(path string) error { return ErrUnsupported }
