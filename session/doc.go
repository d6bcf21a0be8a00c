// Package session runs a child command as one timeagent session: it finds the
// root and its state dir, holds the per-root lock, serves the control socket
// that other timeagent processes reach a running session through, starts the
// child with signals forwarded, and records what the child changed (copy mode
// by full-tree scans, fuse mode through the overlay). It knows nothing about
// flags or output formats.
package session
