package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// damageInJournal flips a byte of content where the journal's value log
// holds it (content must be random and over 4 KiB, so it is stored raw in
// a value log).
func (e *env) damageInJournal(content []byte) {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal", "*.vlog"))
	sample := content[len(content)/2 : len(content)/2+64]
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		if i := bytes.Index(b, sample); i >= 0 {
			b[i+5] ^= 0xff
			writeFile(e.t, f, b, 0o600)
			return
		}
	}
	e.t.Fatalf("the content is in none of the value logs %v", files)
}

// damagedEnv: base.bin (random) and a.txt; task 1 replaces base.bin and
// edits a.txt, task 2 edits a.txt again; then the base content of base.bin
// is damaged on disk. It returns the manifests of tasks 1 and 2.
func damagedEnv(t *testing.T) (e *env, m1, m2 string) {
	e = newEnv(t)
	old := randomBytes(41, 64<<10)
	writeFile(t, e.path("base.bin"), old, 0o644)
	e.write("a.txt", "a0\n", 0o644)
	writeFile(t, filepath.Join(e.scratch, "new.bin"), randomBytes(42, 64<<10), 0o644)
	e.sh("copy", `cp "$SCRATCH/new.bin" base.bin; echo a1 > a.txt`)
	m1 = e.manifest()
	e.sh("copy", `echo a2 > a.txt`)
	m2 = e.manifest()
	e.damageInJournal(old)
	return e, m1, m2
}

// TestVerifyClean: a healthy journal verifies, exit 0, in both outputs.
func TestVerifyClean(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.txt", "a0\n", 0o644)
	writeFile(t, e.path("base.bin"), randomBytes(41, 64<<10), 0o644)
	e.sh("copy", `echo a1 > a.txt`)
	r := e.ok("verify")
	contains(t, "verify", r.Stdout, "journal verified")
	e.goldenOK("verify-clean", "verify", "--json")
}

// TestVerifyDamaged: content damaged on disk is reported with the task and
// path of every record that uses it; exit 1, no panic, one line on stderr.
func TestVerifyDamaged(t *testing.T) {
	t.Parallel()
	e, _, m2 := damagedEnv(t)
	r := e.fails(1, "verify")
	t.Logf("verify:\n%s%s", r.Stdout, r.Stderr)
	oneLine(t, r.Stderr)
	contains(t, "verify", r.Stdout,
		"damaged chunk ", "content lost", "; needed by task 1 before base.bin\n",
		"1 damaged record; tasks affected: 1; paths affected: base.bin\n", "next: ")
	r = e.fails(1, "verify", "--json")
	e.golden("verify-damaged", r.Stdout)
	var doc struct {
		Error string `json:"error"`
	}
	decodeJSON(t, result{Stdout: r.Stderr}, &doc)
	contains(t, "verify --json stderr", doc.Error, "damaged")
	sameManifest(t, "after verify", m2, e.manifest())
}

// TestUndoDamagedBlob: an undo that needs damaged content is refused with
// the path, the task and the blob named, and nothing changes: the tree is
// byte for byte the same, no intent is left (the next command finishes
// nothing), status and verify work, and moves that do not need the content
// still work.
func TestUndoDamagedBlob(t *testing.T) {
	t.Parallel()
	e, m1, m2 := damagedEnv(t)
	e.ok("undo") // task 2 -> 1: only a.txt
	sameManifest(t, "undo of task 2", m1, e.manifest())

	r := e.fails(1, "undo")
	t.Logf("refused undo: %s", r.Stderr)
	oneLine(t, r.Stderr)
	contains(t, "undo needing damaged content", r.Stderr,
		"undo (task 1 to 0) refused, nothing was changed", "base.bin (its before state in task 1)", "read blob ", "timeagent verify")
	sameManifest(t, "after the refused undo", m1, e.manifest())
	for _, args := range [][]string{{"status"}, {"log"}, {"diff"}} {
		r := e.ok(args...)
		if strings.Contains(r.Stderr, "recovered") {
			t.Fatalf("%v after the refused undo recovered something (an intent was left):\n%s", args, r)
		}
	}
	var st struct {
		ActiveTask  uint64 `json:"activeTask"`
		AppliedTask uint64 `json:"appliedTask"`
	}
	if e.jsonOf(&st, "status", "--json"); st.ActiveTask != 1 || st.AppliedTask != 1 {
		t.Fatalf("status after the refused undo: %+v", st)
	}
	e.fails(1, "verify")
	e.ok("redo") // task 1 -> 2: only a.txt
	sameManifest(t, "redo to task 2", m2, e.manifest())
	e.fails(1, "switch", "0")
	sameManifest(t, "after the refused switch", m2, e.manifest())
}

// TestVerifyUnopenable: a journal too damaged to open is verify's finding,
// not an error that sends the user back to verify: exit 1, one line on
// stderr, the damage and what to do on stdout.
func TestVerifyUnopenable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sh("copy", "echo x > f")
	files, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal", "*"))
	for _, f := range files {
		writeFile(t, f, bytes.Repeat([]byte("garbage!"), 512), 0o600)
	}
	r := e.fails(1, "verify")
	oneLine(t, r.Stderr)
	contains(t, "verify of an unopenable journal", r.Stdout, "damaged journal: it cannot be opened", "next: ")
	if strings.Contains(r.Stderr+r.Stdout, "run `timeagent verify`") {
		t.Errorf("verify sends the user to verify:\n%s", r)
	}
	r = e.fails(1, "verify", "--json")
	var doc struct {
		OK     bool `json:"ok"`
		Damage []struct {
			Kind string `json:"kind"`
		} `json:"damage"`
	}
	decodeJSON(t, r, &doc)
	if doc.OK || len(doc.Damage) != 1 || doc.Damage[0].Kind != "journal" {
		t.Errorf("verify --json: %+v", doc)
	}
}

// TestPrintVerify: one line per damage naming tasks and paths, a summary,
// and the next step, which differs when the unfinished apply needs damaged
// content.
func TestPrintVerify(t *testing.T) {
	uses := []journal.BlobUse{{In: journal.UseStat, Path: "x"}}
	for i := 1; i <= 10; i++ {
		uses = append(uses, journal.BlobUse{In: journal.UseAfter, Task: tasks.ID(i), Path: "x"})
	}
	damage := []journal.Damage{
		{Kind: "layer", Key: `layer 3 "a/b"`, Detail: "unreadable", Task: 3, Path: "a/b"},
		{Kind: "blob", Key: "blob 1/2/0", Detail: "missing", UsedBy: uses, NeededByApply: true},
		{Kind: "session", Key: "session 4", Detail: "bad json", Session: 4},
	}
	ids, paths := affected(damage)
	var b strings.Builder
	printVerify(&b, verifyDoc{Damage: damage, Tasks: ids, Paths: paths}, "/state")
	want := `damaged change of a/b in task 3: unreadable
damaged blob 1/2/0: missing; needed by stat cache x, task 1 after x, task 2 after x, task 3 after x, task 4 after x, task 5 after x, task 6 after x, task 7 after x and 3 more; the unfinished apply needs it
damaged record of session 4: bad json
3 damaged records; tasks affected: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10; paths affected: a/b, x
` + "next: the unfinished apply cannot be finished: status, log and diff still work, an undo, redo or switch whose content is readable takes its place, run and checkpoint refuse until then; `timeagent verify --salvage` keeps everything readable in a new journal without that apply\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
