package actions

import (
	"os"
	"testing"
)

// TestMain lets the test binary be the proxy, as timeagent's main is: run
// through a symlink named after a tool, or as `actions.test __proxy TOOL ...`
// (the Windows shim's form).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "__proxy" {
		os.Exit(RunProxy(os.Args[2], os.Args[3:]))
	}
	if tool, ok := IsProxyInvocation(os.Args[0]); ok {
		os.Exit(RunProxy(tool, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
