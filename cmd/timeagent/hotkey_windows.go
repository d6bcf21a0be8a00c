//go:build windows

package main

import (
	"errors"
	"os"

	"github.com/timeagent-dev/timeagent/internal/menu"
)

// hotkeySupported: Windows has no pseudo-terminals here; run starts the
// agent on the console as before, and `timeagent tm` opens the menu.
const hotkeySupported = false

var errNoHotkey = errors.New("the hotkey is not available on Windows: open the menu with timeagent tm in another console")

// hotkey is not available on Windows.
type hotkey struct{ tty *os.File }

func startHotkey(in, out *os.File, c chord, src menu.Source) (*hotkey, error) {
	return nil, errNoHotkey
}

func (h *hotkey) stop() {}
