//go:build unix && !linux

package session

import "os/exec"

func setPdeathsig(*exec.Cmd) {}
