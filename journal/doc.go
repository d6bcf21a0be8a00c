// Package journal is the badger database of one root: content-addressed blobs
// (chunked, compressed, verified), tasks, layers, sessions, intents, the stat
// cache of copy-mode scans and the external-action log. Every multi-record
// change is one transaction; commit points that promise durability sync.
// It knows nothing about FUSE, the CLI or how a layer was captured.
//
// Files: keys.go is the key layout (read it first), encode.go the binary
// and JSON value formats, blob.go the chunk and blob store, journal.go
// opening and the records, tx.go the atomic updates, verify.go the full
// check behind `timeagent verify`, validate.go the checks that keep a
// damaged database from crashing badger at Open, errors.go the mapping of
// badger's errors onto ErrBusy, ErrCorrupt and errnos.
//
// A Journal is safe for concurrent use by many goroutines; one process at a
// time may hold a journal directory (ErrBusy otherwise). Damaged data is
// reported as ErrCorrupt, never as a panic.
package journal
