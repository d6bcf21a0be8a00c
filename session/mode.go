package session

import (
	"errors"
	"fmt"
)

// ErrNoOverlay means the FUSE overlay cannot be mounted here; the error's
// message says why and what to install or change.
var ErrNoOverlay = errors.New("fuse mode is not available here")

// chooseMode resolves --mode. auto means fuse where an overlay can be mounted
// and copy elsewhere, with a one-line notice saying why.
func chooseMode(mode string, w *Workspace, notice func(string)) (string, error) {
	switch mode {
	case "", ModeAuto:
		if err := fuseSupported(w); err != nil {
			if notice != nil {
				notice("copy mode: " + err.Error())
			}
			return ModeCopy, nil
		}
		return ModeFuse, nil
	case ModeCopy:
		return ModeCopy, nil
	case ModeFuse:
		if err := fuseSupported(w); err != nil {
			return "", fmt.Errorf("%w: %v (or use --mode copy)", ErrNoOverlay, err)
		}
		return ModeFuse, nil
	}
	return "", fmt.Errorf("unknown mode %q: use auto, copy or fuse", mode)
}
