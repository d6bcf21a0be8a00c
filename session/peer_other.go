//go:build !linux

package session

import "net"

// checkPeer relies on the state dir's 0700 permissions where the OS offers no
// portable peer-credential call.
func checkPeer(net.Conn) error { return nil }
