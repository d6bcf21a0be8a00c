package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/timeagent-dev/timeagent/"

// rank orders the project's packages from the bottom (0) up, as DESIGN.md's
// package table does. A package may import only packages of a lower rank.
var rank = map[string]int{
	"tasks":               0,
	"internal/textdiff":   0,
	"internal/lanes":      0,
	"internal/plural":     0,
	"internal/layers":     0,
	"internal/testrepo":   0,
	"internal/sparse":     0,
	"internal/mountinfo":  0,
	"internal/fusectl":    0,
	"internal/graph":      0,
	"internal/xattr":      0,
	"internal/menu":       1,
	"journal":             1,
	"cow":                 2,
	"fs":                  3,
	"actions":             3,
	"gitexport":           3,
	"hooks":               4,
	"recovery":            4,
	"session":             5,
	"cmd/timeagent":       6,
	"cmd/timeagent-bench": 6,
	"internal/crashtest":  6,
	"internal/modeltest":  6,
	"internal/agenttest":  6,
}

func TestLayering(t *testing.T) {
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		// Only stdout is parsed: on a fresh machine go list reports the
		// modules it downloads for another GOOS ("go: downloading ...") on stderr.
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v\n%s", goos, err, stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			pkg := strings.TrimPrefix(fields[0], module)
			r, ok := rank[pkg]
			if !ok {
				t.Errorf("package %s has no place in the layering: add it to rank (and to DESIGN.md's table)", pkg)
				continue
			}
			for _, imp := range fields[1:] {
				if !strings.HasPrefix(imp, module) {
					continue
				}
				dep := strings.TrimPrefix(imp, module)
				if dr, ok := rank[dep]; ok && dr >= r {
					t.Errorf("%s (GOOS=%s) imports %s, which is not below it", pkg, goos, dep)
				}
			}
		}
	}
}
