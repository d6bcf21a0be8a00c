//go:build !windows

package main

import "os/exec"

// shellCommand runs a pager command line through sh, as git does.
func shellCommand(s string) *exec.Cmd { return exec.Command("sh", "-c", s) }
