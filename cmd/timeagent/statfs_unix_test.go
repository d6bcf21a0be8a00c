//go:build unix

package main

import "syscall"

// statfs asks the file system of path for its statistics, which reaches
// a FUSE server every time.
func statfs(path string) error {
	var sfs syscall.Statfs_t
	return syscall.Statfs(path, &sfs)
}
