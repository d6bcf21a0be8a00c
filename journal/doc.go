// Package journal is the badger database of one root: content-addressed blobs
// (chunked, compressed, verified), tasks, layers, sessions, intents, the stat
// cache of copy-mode scans and the external-action log. Every multi-record
// change is one transaction; commit points that promise durability sync.
// It knows nothing about FUSE, the CLI or how a layer was captured.
package journal
