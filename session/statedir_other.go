//go:build !unix

package session

import "io/fs"

// ownedByCaller is true where ownership is not a uid (Windows: the state
// dir is under the user's own %LOCALAPPDATA%).
func ownedByCaller(fs.FileInfo) (int, bool) { return -1, true }
