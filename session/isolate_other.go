//go:build !linux

package session

import (
	"errors"
	"io"
)

// EnvIsolated marks the timeagent process that runs inside its own mount
// namespace (run --isolate).
const EnvIsolated = "TIMEAGENT_ISOLATED"

// Isolated reports whether this process is the namespaced half of run --isolate.
func Isolated() bool { return false }

// ReexecIsolated is Linux only: mount namespaces do not exist elsewhere.
func ReexecIsolated([]string, io.Reader, io.Writer, io.Writer) (int, error) {
	return 2, errors.New("--isolate needs Linux mount namespaces")
}

// dropAgentCaps: no user namespaces here, nothing to drop.
func dropAgentCaps() error { return nil }
