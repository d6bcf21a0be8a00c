// Package crashtest holds crash-recovery integration tests for timeagent:
// they build the binary once, run it on real git repositories, kill it (and
// its child, and its applies) with real signals at real moments, damage its
// journal and fill its disk, and then check that the next command recovers
// and that undo and redo give back the expected tree byte for byte. It has no
// code outside its tests.
package crashtest
