//go:build !linux && !windows

package session

import "fmt"

// withSocketPath calls fn with p, which must fit in a socket address.
func withSocketPath(p string, fn func(string) error) error {
	if len(p) > maxSocketPath {
		return fmt.Errorf("socket path %s is longer than the %d bytes a socket address holds: set %s to a shorter directory",
			p, maxSocketPath, HomeEnv)
	}
	return fn(p)
}
