package actions

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

func TestReadLog(t *testing.T) {
	dir := t.TempDir()
	if list, err := ReadLog(filepath.Join(dir, "missing")); err != nil || list != nil {
		t.Errorf("missing dir: %v %v", list, err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, tool := range []string{"npm", "git", "terraform"} {
		a := journal.Action{Tool: tool, Time: base.Add(time.Duration(2-i) * time.Second), Argv: []string{tool}, ExitCode: ExitUnknown}
		if err := writeRecord(dir, recordName(a, 100+i), a); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing a record (the final write) keeps one file per call.
	a := journal.Action{Tool: "npm", Time: base.Add(2 * time.Second), Argv: []string{"npm"}, ExitCode: 4}
	if err := writeRecord(dir, recordName(a, 100), a); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".tmp-x.json-123"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	list, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Tool != "terraform" || list[2].Tool != "npm" || list[2].ExitCode != 4 ||
		list[0].Seq != 1 || list[2].Seq != 3 {
		t.Errorf("log %+v", list)
	}

	os.WriteFile(filepath.Join(dir, "00000000000000000001-1.json"), []byte(`{"tool": "np`), 0o600)
	list, err = ReadLog(dir)
	if !errors.Is(err, ErrDamagedRecord) || len(list) != 3 {
		t.Errorf("damaged record: %d records, err %v", len(list), err)
	}
	if err := writeRecord(filepath.Join(dir, "missing"), "x.json", a); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
