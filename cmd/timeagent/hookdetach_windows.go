//go:build windows

package main

import (
	"errors"
	"os"
)

// canDetach: Windows file locks belong to the handle of the process that
// took them, so a capture cannot be handed to a child: the hooks capture
// before they answer.
const canDetach = false

func startDetached(string, []string, *os.File) (int, error) {
	return 0, errors.New("detached captures need Unix")
}
