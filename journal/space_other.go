//go:build !unix

package journal

// freeBytes is not measured on this platform.
func freeBytes(dir string) (int64, bool) { return 0, false }
