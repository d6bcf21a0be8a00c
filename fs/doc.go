// Package fs is the copy-on-write overlay of a fuse session: a go-fuse
// filesystem mounted over the root's own path whose lower tree is the root
// directory opened before the mount, and whose upper layer lives in a private
// staging directory of the state dir.
//
// Every first change of a path in a task records the path's state before the
// change into the journal (the task's before), and every change updates its
// after: metadata operations at once, file content when a file is closed or
// fsync'd. Checkpoint starts the next task's layer without copying anything;
// SetView switches the mounted view to another state (undo, redo, switch) and
// invalidates the kernel's caches for every path that changed.
//
// The package owns the FUSE nodes and the upper layer. It must not know about
// the CLI, and it reads and writes the journal only through its blob and layer
// API. go-fuse's own fs package is imported as fusefs everywhere.
package fs
