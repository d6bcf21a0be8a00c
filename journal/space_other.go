//go:build !unix

package journal

import "os"

// freeBytes is not measured on this platform.
func freeBytes(dir string) (int64, bool) { return 0, false }

// allocated is the file's size (its blocks are not measured here).
func allocated(info os.FileInfo) int64 { return info.Size() }
