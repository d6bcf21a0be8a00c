package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/timeagent-dev/timeagent/tasks"
)

func TestOpenForeignRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/home/a/repo")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	_, err = Open(dir, "/home/b/other")
	if !errors.Is(err, ErrForeign) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"/home/a/repo", "/home/b/other"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	j, err = Open(dir, "/home/a/repo")
	if err != nil {
		t.Fatalf("reopen with the right root: %v", err)
	}
	j.Close()
}

func TestOpenEmptyRoot(t *testing.T) {
	if _, err := Open(t.TempDir(), ""); err == nil {
		t.Fatal("empty root accepted")
	}
}

func TestOpenSchemaMismatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.db.Update(func(txn *badger.Txn) error { return txn.Set(keySchema, u64(SchemaVersion+6)) }); err != nil {
		t.Fatal(err)
	}
	j.Close()
	_, err = Open(dir, "/r")
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("got %v", err)
	}
	if want := fmt.Sprintf("version %d, this timeagent supports %d", SchemaVersion+6, SchemaVersion); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestOpenMissingMeta(t *testing.T) {
	for _, key := range [][]byte{keySchema, keyRoot} {
		dir := filepath.Join(t.TempDir(), "j")
		j, err := Open(dir, "/r")
		if err != nil {
			t.Fatal(err)
		}
		if err := j.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) }); err != nil {
			t.Fatal(err)
		}
		j.Close()
		if _, err = Open(dir, "/r"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("without %s: %v", describeKey(key), err)
		}
	}
}

func TestOpenBusy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, "/r")
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second open: %v", err)
	}
	j.Close()
	j, err = Open(dir, "/r")
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	j.Close()
}

func TestOpenParentIsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(filepath.Join(file, "journal"), "/r")
	if !errors.Is(err, syscall.ENOTDIR) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

func TestOpenNotAJournal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, "/r")
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

// TestOpenUnfinishedCreation: a journal whose creation was killed while
// badger wrote its first MANIFEST (as MANIFEST-REWRITE, renamed after) holds
// nothing yet and is created again, not refused as damaged; with any other
// file beside it, it is still refused.
func TestOpenUnfinishedCreation(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST-REWRITE"), []byte("Bdgr"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatalf("open after an unfinished creation: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatalf("no MANIFEST after the creation: %v", err)
	}

	other := t.TempDir()
	for _, f := range []string{"MANIFEST-REWRITE", "000001.vlog"} {
		if err := os.WriteFile(filepath.Join(other, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(other, "/r"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("MANIFEST-REWRITE beside a value log: got %v, want ErrCorrupt", err)
	}
}

func TestClassifyOpenError(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		is     []error
		isNot  []error
		errnos []syscall.Errno
	}{
		{"wrapped ENOSPC", fmt.Errorf("write: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}),
			[]error{syscall.ENOSPC}, []error{ErrCorrupt, ErrBusy}, nil},
		{"badger-formatted ENOSPC", errors.New("While opening memtable: sync x.mem err: no space left on device"),
			[]error{syscall.ENOSPC}, []error{ErrCorrupt}, nil},
		{"badger-formatted EACCES", errors.New("Error while creating manifest: open MANIFEST err: permission denied"),
			[]error{fs.ErrPermission, syscall.EACCES}, []error{ErrCorrupt}, nil},
		{"wrapped EACCES", &os.PathError{Op: "open", Path: "x", Err: syscall.EACCES},
			[]error{fs.ErrPermission}, []error{ErrCorrupt}, nil},
		{"read-only fs", errors.New("open x err: read-only file system"),
			[]error{syscall.EROFS}, []error{ErrCorrupt}, nil},
		{"lock", errors.New(`Cannot acquire directory lock on "/x".  Another process is using this Badger database. err: resource temporarily unavailable`),
			[]error{ErrBusy}, []error{ErrCorrupt}, nil},
		{"EWOULDBLOCK", syscall.EWOULDBLOCK, []error{ErrBusy}, nil, nil},
		{"bad magic", errors.New("manifest has bad magic"), []error{ErrCorrupt}, []error{ErrBusy}, nil},
		{"closed", badger.ErrDBClosed, []error{badger.ErrDBClosed}, []error{ErrCorrupt}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classifyOpenError(c.err)
			for _, e := range c.is {
				if !errors.Is(got, e) {
					t.Errorf("%v is not %v", got, e)
				}
			}
			for _, e := range c.isNot {
				if errors.Is(got, e) {
					t.Errorf("%v is %v", got, e)
				}
			}
			if got.Error() != c.err.Error() && !strings.Contains(got.Error(), c.err.Error()) {
				t.Errorf("message %q lost %q", got, c.err)
			}
		})
	}
}

// journalWithData builds a closed journal with records in tables and
// chunks in the value log, and returns its directory.
func journalWithData(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := j.PutBytes(randomBytes(300 << 10)); err != nil {
			t.Fatal(err)
		}
	}
	up := map[string]StatEntry{}
	for i := 0; i < 20000; i++ {
		up[fmt.Sprintf("p/%d", i)] = StatEntry{Kind: Dir, Size: int64(i)}
	}
	if err := j.PutStats(up, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func filesWithSuffix(t *testing.T, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOpenDamaged damages a journal's files in many ways. Open (and then
// reading everything) must either work or fail with ErrCorrupt; it must
// never panic, exit or print.
func TestOpenDamaged(t *testing.T) {
	garbage := bytes.Repeat([]byte("garbage!"), 512)
	cases := []struct {
		name     string
		damage   func(t *testing.T, dir string)
		mustFail bool
	}{
		{"manifest garbage", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "MANIFEST"), garbage, 0o600)
		}, true},
		{"manifest empty", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "MANIFEST"), nil, 0o600)
		}, false},
		{"manifest truncated", func(t *testing.T, dir string) {
			truncateHalf(t, filepath.Join(dir, "MANIFEST"))
		}, false},
		{"manifest removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "MANIFEST"))
		}, true},
		{"sst truncated", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".sst") {
				truncateHalf(t, f)
			}
		}, false},
		{"sst garbage", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".sst") {
				os.WriteFile(f, garbage, 0o600)
			}
		}, false},
		{"sst flipped", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".sst") {
				flipMiddle(t, f)
			}
		}, true},
		{"sst flipped after verification", func(t *testing.T, dir string) {
			// The table was verified at an earlier Open: Verify still
			// finds the damage (normal reads would silently stop early).
			j, err := Open(dir, "/r")
			if err != nil {
				t.Fatal(err)
			}
			j.Close()
			for _, f := range filesWithSuffix(t, dir, ".sst") {
				flipMiddle(t, f)
			}
		}, true},
		{"verified list garbage", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, verifiedFile), garbage, 0o600)
		}, false},
		{"vlog truncated", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".vlog") {
				truncateHalf(t, f)
			}
		}, false},
		{"vlog garbage", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".vlog") {
				os.WriteFile(f, garbage, 0o600)
			}
		}, false},
		{"vlog flipped", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".vlog") {
				flipMiddle(t, f)
			}
		}, false},
		{"keyregistry garbage", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "KEYREGISTRY"), garbage, 0o600)
		}, false},
		{"extra garbage files", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "000099.sst"), garbage, 0o600)
			os.WriteFile(filepath.Join(dir, "000099.vlog"), garbage, 0o600)
			os.WriteFile(filepath.Join(dir, "00099.mem"), garbage, 0o600)
		}, false},
		{"mem garbage", func(t *testing.T, dir string) {
			for _, f := range filesWithSuffix(t, dir, ".mem") {
				os.WriteFile(f, garbage, 0o600)
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := journalWithData(t)
			c.damage(t, dir)
			err := openAndReadAll(dir)
			t.Logf("result: %v", err)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("error is not ErrCorrupt: %v", err)
			}
			if c.mustFail && err == nil {
				t.Error("damage not detected")
			}
		})
	}
}

// openAndReadAll opens dir and reads every record and blob.
func openAndReadAll(dir string) error {
	j, err := Open(dir, "/r")
	if err != nil {
		return err
	}
	defer j.Close()
	sc, err := j.StatCache()
	if err != nil {
		return err
	}
	lost := 20000 - len(sc)
	damage, err := j.Verify(nil)
	if err != nil {
		return err
	}
	if len(damage) > 0 {
		return fmt.Errorf("%w: %d damaged records, first %v", ErrCorrupt, len(damage), damage[0])
	}
	if lost != 0 {
		return fmt.Errorf("%d stat entries lost without an error", lost)
	}
	return nil
}

func truncateHalf(t *testing.T, f string) {
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func flipMiddle(t *testing.T, f string) {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 3; i < len(b)/3+64 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCloseTime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	measure := func(label string) {
		const n = 5
		cpu0 := cpuTime()
		start := time.Now()
		for i := 0; i < n; i++ {
			j, err := Open(dir, "/r")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.State(); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("Open+State+Close, %s: %v wall, %v CPU each", label, time.Since(start)/n, (cpuTime()-cpu0)/n)
	}
	measure("empty journal")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	up := map[string]StatEntry{}
	for i := 0; i < 100000; i++ {
		up[fmt.Sprintf("src/%d/file.go", i)] = StatEntry{Kind: File, Size: int64(i), Blob: BlobRef{Hash: uint64(i)}}
	}
	if err := j.PutStats(up, nil); err != nil {
		t.Fatal(err)
	}
	j.Close()
	measure("100k records")
}

// TestOpenBusyOtherProcess holds the journal in a child process (this test
// binary, re-run as a helper) and opens it here.
func TestOpenBusyOtherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldJournal$")
	cmd.Env = append(os.Environ(), "JOURNAL_HOLD_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	if _, err := Open(dir, "/r"); !errors.Is(err, ErrBusy) {
		t.Fatalf("open while another process holds it: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatalf("open after the other process exited: %v", err)
	}
	j.Close()
}

// TestHelperHoldJournal is the child of TestOpenBusyOtherProcess: it opens
// the journal, says so, and holds it until its stdin closes.
func TestHelperHoldJournal(t *testing.T) {
	dir := os.Getenv("JOURNAL_HOLD_DIR")
	if dir == "" {
		return // only meaningful as a helper process
	}
	j, err := Open(dir, "/r")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if os.Getenv("JOURNAL_HOLD_WRITE") != "" {
		ref, err := j.PutBytes(compressible(3 << 20))
		if err == nil {
			err = j.Update(func(tx *Tx) error { return tx.PutTask(tasks.Task{ID: 7, Summary: "durable"}) })
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("open", ref.Hash, ref.Size)
	} else {
		fmt.Println("open")
	}
	io.Copy(io.Discard, os.Stdin)
	j.Close()
	os.Exit(0)
}

// startWritingHolder starts TestHelperHoldJournal on dir with a write,
// and returns it once it has written, with its "open HASH SIZE" line.
func startWritingHolder(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldJournal$")
	cmd.Env = append(os.Environ(), "JOURNAL_HOLD_DIR="+dir, "JOURNAL_HOLD_WRITE=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "open ") {
		t.Fatalf("helper: %q %v", line, err)
	}
	return cmd, line
}

// TestReopenAfterKill kills a process holding the journal right after its
// Update returned: the update is there and the journal opens cleanly.
func TestReopenAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	cmd, line := startWritingHolder(t, dir)
	cmd.Process.Kill()
	cmd.Wait()
	var ref BlobRef
	if _, err := fmt.Sscanf(line, "open %d %d", &ref.Hash, &ref.Size); err != nil {
		t.Fatal(err)
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer j.Close()
	if tk, err := j.Task(7); err != nil || tk.Summary != "durable" {
		t.Errorf("task after kill: %+v %v", tk, err)
	}
	if b, err := j.ReadBlob(ref); err != nil || len(b) != int(ref.Size) {
		t.Errorf("blob after kill: %d bytes, %v", len(b), err)
	}
	if damage, err := j.Verify(nil); err != nil || len(damage) > 0 {
		t.Errorf("verify after kill: %v %v", damage, err)
	}
}

// TestEmptyLogFiles: a kill -9 just after badger created a value-log or
// memtable file leaves it empty; the journal must still open with its data.
func TestEmptyLogFiles(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, "/root/a")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := j.PutBytes([]byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"000999.vlog", "00999.mem"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	j, err = Open(dir, "/root/a")
	if err != nil {
		t.Fatalf("open with empty log files: %v", err)
	}
	defer j.Close()
	b, err := j.ReadBlob(ref)
	if err != nil || string(b) != "kept" {
		t.Fatalf("blob after reopen = %q, %v", b, err)
	}
}

// TestOpenReadOnly: a read-only open reads what a read-write open wrote,
// refuses every write, creates and removes no file of badger's in the
// journal directory, and refuses what only a read-write open can do: create a
// journal, open one another process holds, or one a killed process left
// with unflushed records (which Open then repairs and reads).
func TestOpenReadOnly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("badger has no read-only open on Windows: reading commands open the journal read-write there")
	}
	dir := filepath.Join(t.TempDir(), "j")
	if _, err := OpenReadOnly(dir, "/r"); !errors.Is(err, ErrNeedsWrite) {
		t.Fatalf("read-only open of no journal: %v, want ErrNeedsWrite", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only open created the directory: %v", err)
	}
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := j.PutBytes(randomBytes(64 << 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Update(func(tx *Tx) error { return tx.PutTask(tasks.Task{ID: 3, Summary: "kept"}) }); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	listing := func() string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range entries {
			if e.Name() == verifiedFile {
				continue // the cache of checked tables, written at the first open after a table appears
			}
			info, _ := e.Info()
			fmt.Fprintf(&b, "%s %d\n", e.Name(), info.Size())
		}
		return b.String()
	}
	before := listing()
	for round := 0; round < 2; round++ {
		r, err := OpenReadOnly(dir, "/r")
		if err != nil {
			t.Fatalf("read-only open: %v", err)
		}
		if !r.ReadOnly() {
			t.Fatal("ReadOnly() is false")
		}
		if tk, err := r.Task(3); err != nil || tk.Summary != "kept" {
			t.Fatalf("task read-only: %+v %v", tk, err)
		}
		if b, err := r.ReadBlob(ref); err != nil || len(b) != int(ref.Size) {
			t.Fatalf("blob read-only: %d bytes, %v", len(b), err)
		}
		writes := map[string]error{
			"Update":        r.Update(func(tx *Tx) error { return tx.PutTask(tasks.Task{ID: 4}) }),
			"PutChanges":    r.PutChanges(4, []Change{{Path: "x"}}),
			"ReclaimSpace":  func() error { _, err := r.ReclaimSpace(0.5); return err }(),
			"PutBytes":      func() error { _, err := r.PutBytes([]byte("new content")); return err }(),
			"PutStats":      r.PutStats(map[string]StatEntry{"p": {Kind: Dir}}, nil),
			"SetState":      r.Update(func(tx *Tx) error { return tx.SetState(State{Active: 3}) }),
			"second Update": r.Update(func(tx *Tx) error { return nil }),
		}
		for name, err := range writes {
			if !errors.Is(err, errReadOnly) {
				t.Errorf("%s on a read-only journal: %v, want errReadOnly", name, err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if after := listing(); after != before {
			t.Fatalf("a read-only open changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
	if _, err := OpenReadOnly(dir, "/other"); !errors.Is(err, ErrForeign) {
		t.Fatalf("read-only open for another root: %v, want ErrForeign", err)
	}

	// Held by another process: busy, as for Open.
	cmd, _ := startWritingHolder(t, dir)
	if _, err := OpenReadOnly(dir, "/r"); !errors.Is(err, ErrBusy) {
		t.Fatalf("read-only open while another process holds it: %v, want ErrBusy", err)
	}
	// Killed with its last writes only in the memtable's log: a read-only
	// open must not read a journal that needs repair (or must read it
	// whole); Open repairs it.
	cmd.Process.Kill()
	cmd.Wait()
	if r, err := OpenReadOnly(dir, "/r"); err == nil {
		tk, terr := r.Task(7)
		r.Close()
		if terr != nil || tk.Summary != "durable" {
			t.Fatalf("read-only open after kill misses the last update: %+v %v", tk, terr)
		}
	}
	j, err = Open(dir, "/r")
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	if tk, err := j.Task(7); err != nil || tk.Summary != "durable" {
		t.Fatalf("task after kill: %+v %v", tk, err)
	}
	j.Close()
	if _, err := OpenReadOnly(dir, "/r"); err != nil {
		t.Fatalf("read-only open after the repair: %v", err)
	}
}

// TestLevel0Bounded: every command that writes closes with one more table
// in level 0, and ends before badger's compactors start; the open that
// finds compactLevel0At of them merges them at its close, so level 0 stays
// bounded over many short commands, and nothing written is lost.
func TestLevel0Bounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	most := 0
	for i := 1; i <= 30; i++ {
		j, err := Open(dir, "/r")
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Update(func(tx *Tx) error {
			return tx.PutTask(tasks.Task{ID: tasks.ID(i), Summary: fmt.Sprintf("command %d", i)})
		}); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		level0, err := checkTables(dir, badgerOptions(dir))
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, level0)
	}
	if most > compactLevel0At {
		t.Fatalf("level 0 reached %d tables over 30 short commands, want at most %d", most, compactLevel0At)
	}
	if most < compactLevel0At {
		t.Fatalf("level 0 reached only %d tables: each close should add one (the test tests nothing)", most)
	}
	j, err := OpenReadOnly(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	list, err := j.Tasks()
	if err != nil || len(list) != 30 {
		t.Fatalf("after the compactions: %d tasks, %v", len(list), err)
	}
}
