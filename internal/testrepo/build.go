package testrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binary is the timeagent a test package's TestMain runs: TIMEAGENT_TEST_BIN
// when set, else one built into a temporary directory. cleanup removes what
// it built.
func Binary(prefix string) (bin string, cleanup func(), err error) {
	if bin = os.Getenv("TIMEAGENT_TEST_BIN"); bin != "" {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "timeagent")
	build := exec.Command("go", "build", "-o", bin, "github.com/timeagent-dev/timeagent/cmd/timeagent")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build timeagent: %w", err)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}
