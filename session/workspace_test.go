package session

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"

	"github.com/timeagent-dev/timeagent/journal"
)

// TestOpenForReading: a root without a journal gets one (a read-only open
// cannot create it); after that the journal opens read-only, Writable makes
// it writable with the lock kept, and the lock is free after Close.
func TestOpenForReading(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("badger has no read-only open on Windows: reading commands open the journal read-write there")
	}
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ws, err := OpenForReading(root, state, "status")
	if err != nil {
		t.Fatal(err)
	}
	if ws.Journal.ReadOnly() {
		t.Fatal("a new journal was opened read-only")
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	ws, err = OpenForReading(root, state, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Journal.ReadOnly() {
		t.Fatal("an existing, cleanly closed journal was not opened read-only")
	}
	if _, _, err := TryLock(state, Holder{Command: "other"}); err == nil {
		t.Fatal("the root's lock is free while a reading command holds the workspace")
	}
	if err := ws.Writable(); err != nil {
		t.Fatal(err)
	}
	if ws.Journal.ReadOnly() {
		t.Fatal("Writable left the journal read-only")
	}
	if err := ws.Journal.Update(func(tx *journal.Tx) error { return tx.PutTask(tasks.Task{ID: 1, Summary: "x"}) }); err != nil {
		t.Fatalf("write after Writable: %v", err)
	}
	if _, _, err := TryLock(state, Holder{Command: "other"}); err == nil {
		t.Fatal("Writable let the root's lock go")
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	l, _, err := TryLock(state, Holder{Command: "other"})
	if err != nil {
		t.Fatalf("lock after Close: %v", err)
	}
	l.Release()
}
