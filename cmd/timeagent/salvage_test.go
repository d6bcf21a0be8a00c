package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifySalvage damages one file of the journal (a table, MANIFEST,
// KEYREGISTRY): every command fails; `verify --salvage` replaces the
// journal, keeps the old one aside and names what was lost; then log works
// and switch restores every task the report does not name byte for byte,
// and refuses (changing nothing) a task whose changes were lost.
func TestVerifySalvage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		file func(dir string) string
		off  func(size int) int
	}{
		{"table", func(dir string) string { m, _ := filepath.Glob(filepath.Join(dir, "*.sst")); return m[0] }, func(n int) int { return n / 3 }},
		{"manifest", func(dir string) string { return filepath.Join(dir, "MANIFEST") }, func(n int) int { return 12 }},
		{"keyregistry", func(dir string) string { return filepath.Join(dir, "KEYREGISTRY") }, func(n int) int { return n - 3 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("base.txt", "base\n", 0o644)
			manifests := map[uint64]string{0: e.manifest()}
			const n = 8
			for i := 1; i <= n; i++ {
				e.sh("copy", fmt.Sprintf(`mkdir -p d%d && seq 1 %d > d%d/f.txt && echo %d >> base.txt`, i, 300*i, i, i))
				manifests[uint64(i)] = e.manifest()
			}
			dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal"))
			if len(dirs) != 1 {
				t.Fatalf("journals: %v", dirs)
			}
			f := c.file(dirs[0])
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b[c.off(len(b))] ^= 0x5a
			writeFile(t, f, b, 0o600)
			e.fails(1, "verify")

			r := e.ok("verify", "--salvage")
			t.Logf("salvage:\n%s%s", r.Stdout, r.Stderr)
			contains(t, "salvage", r.Stdout, "salvaged the journal: kept ", "the damaged journal is kept in ", "next: ")
			old, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal.damaged-*"))
			if len(old) != 1 {
				t.Fatalf("the damaged journal is not kept aside: %v", old)
			}
			if got, _ := os.ReadFile(filepath.Join(old[0], filepath.Base(f))); string(got) != string(b) {
				t.Errorf("the damaged journal was changed")
			}
			sameManifest(t, "after the salvage", manifests[n], e.manifest())
			e.ok("log")
			lost := map[uint64]bool{}
			for _, line := range strings.Split(r.Stdout, "\n") {
				var id uint64
				if _, err := fmt.Sscanf(line, "lost: task %d:", &id); err == nil {
					lost[id] = true
				}
			}
			if c.name != "table" && len(lost) > 0 {
				t.Errorf("%s damage lost tasks %v", c.name, lost)
			}
			if !lost[n] && !lost[n-1] {
				e.ok("undo")
				sameManifest(t, "undo after the salvage", manifests[n-1], e.manifest())
				e.ok("redo")
				sameManifest(t, "redo after the salvage", manifests[n], e.manifest())
			}
			cur := uint64(n)
			restored := 0
			for id := uint64(n - 1); ; id-- {
				if lost[id] || lost[cur] {
					before := e.manifest()
					if r := e.ta("switch", fmt.Sprint(id)); r.Code == 0 {
						sameManifest(t, fmt.Sprintf("switch %d next to a lost task", id), manifests[id], e.manifest())
						cur = id
					} else {
						sameManifest(t, fmt.Sprintf("refused switch %d", id), before, e.manifest())
					}
				} else {
					e.ok("switch", fmt.Sprint(id))
					sameManifest(t, fmt.Sprintf("switch %d", id), manifests[id], e.manifest())
					cur = id
					restored++
				}
				if id == 0 {
					break
				}
			}
			if c.name != "table" && restored != n {
				t.Errorf("restored %d of %d tasks", restored, n)
			}
			if !lost[n] {
				e.ok("switch", fmt.Sprint(n))
				if cur == 0 {
					sameManifest(t, "back to the last task", manifests[n], e.manifest())
				}
			}
			var doc struct {
				SchemaVersion int  `json:"schemaVersion"`
				Salvaged      bool `json:"salvaged"`
			}
			e.jsonOf(&doc, "verify", "--salvage", "--json")
			if doc.SchemaVersion != 1 || (doc.Salvaged != (len(lost) > 0)) {
				t.Errorf("verify --salvage --json of a healthy journal: %+v", doc)
			}
		})
	}
}
