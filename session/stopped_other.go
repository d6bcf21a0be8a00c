//go:build !linux

package session

// processStopped reports whether process pid is stopped; only Linux tells
// here, so elsewhere a stopped session is never reported.
func processStopped(int) bool { return false }

// overlayMounts returns the mount points of timeagent overlays; only Linux
// lists them without touching them.
func overlayMounts() ([]string, error) { return nil, nil }
