// Package cow owns node states and layers as the working tree sees them: full
// tree scans for copy mode, diffs between manifests, the walk between two
// tasks (transitions), drift detection and the crash-safe apply of a target
// state onto an os.Root. It uses the journal for blobs and records but knows
// nothing about badger internals or FUSE.
package cow
