//go:build !unix

package session

import "io/fs"

// ownedByCaller is true where ownership is not a uid (Windows: the state
// dir is under the user's own %LOCALAPPDATA%).
func ownedByCaller(fs.FileInfo) (int, bool) { return -1, true }

// othersCanWrite is false where the mode bits are not permissions (Windows
// makes them up from the read-only attribute: every directory looks 0777).
func othersCanWrite(fs.FileInfo) bool { return false }
