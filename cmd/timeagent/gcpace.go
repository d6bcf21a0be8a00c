package main

import (
	"os"
	"runtime/debug"
)

// shortHeap is the heap a short command may grow to before the garbage
// collector first runs.
const shortHeap = 64 << 20

// relaxGC lets a short command (one that opens the workspace, does its
// work and exits) allocate up to shortHeap before the garbage collector
// runs, and collect as usual past it. Reading a history of 10,000 tasks
// grows the heap from nothing to about 13 MB, and the collections on the
// way (the first at 4 MB) cost a third of `log`'s time. Sessions, the MCP
// server and the menu keep the default pacing. GOGC or GOMEMLIMIT set by
// the user win.
func relaxGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(shortHeap)
	debug.SetGCPercent(-1)
}
