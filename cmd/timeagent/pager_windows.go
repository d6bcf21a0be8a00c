package main

import (
	"os/exec"
	"strings"
)

// shellCommand runs a pager command line: its words, without a shell.
func shellCommand(s string) *exec.Cmd {
	w := strings.Fields(s)
	return exec.Command(w[0], w[1:]...)
}
