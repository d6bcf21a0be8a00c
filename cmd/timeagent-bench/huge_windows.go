package main

import "errors"

// diskUsage: allocated blocks are not measured on Windows (the benchmark
// runs its workloads with sh and dd, on Linux and macOS).
func diskUsage(dir string) int64 { return 0 }

// freeBytes: not measured on Windows; the step that needs it is skipped.
func freeBytes(dir string) (int64, error) {
	return 0, errors.New("free space is not measured on windows")
}
