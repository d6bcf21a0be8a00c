package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestRelaxGC: a short command's collector waits for shortHeap, unless
// the user set GOGC or GOMEMLIMIT.
func TestRelaxGC(t *testing.T) {
	restore := func(pct int, limit int64) {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer restore(pct, limit)

	t.Setenv("GOGC", "50")
	relaxGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, relaxGC changed the GC percent to %d", got)
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "1GiB")
	relaxGC()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT set, relaxGC changed the memory limit to %d", got)
	}
	t.Setenv("GOMEMLIMIT", "")
	relaxGC()
	if got := debug.SetGCPercent(100); got != -1 {
		t.Fatalf("GC percent %d, want -1 (off until the limit)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != shortHeap {
		t.Fatalf("memory limit %d, want %d", got, shortHeap)
	}
}
