//go:build !unix

package journal

// dirLocked cannot probe without flock; badger's own lock error is
// recognised by classifyOpenError instead.
func dirLocked(dir string) (bool, error) { return false, nil }
