//go:build linux

package fs

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixKnownFail lists the posixtest cases the overlay cannot pass, with why.
var posixKnownFail = map[string]string{}

func TestPosix(t *testing.T) {
	var names []string
	for n := range posixtest.All {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if why, ok := posixKnownFail[name]; ok {
				t.Logf("known failure: %s", why)
				return
			}
			// The suite expects an empty directory: give it an empty lower
			// directory beside lower content.
			o := mountTest(t, func(root string) {
				fillSample(root)
				if err := os.Mkdir(filepath.Join(root, "work"), 0o755); err != nil {
					t.Fatal(err)
				}
			})
			posixtest.All[name](t, filepath.Join(o.root, "work"))
		})
	}
}
