package main

import "os"

// statfs checks that path is reachable (there are no FUSE mounts here).
func statfs(path string) error {
	_, err := os.Stat(path)
	return err
}
