package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/timeagent-dev/timeagent/journal"
)

// TestReadingCommandsRecoverFirst: status and log open the journal
// read-only, but a dead session left in a cleanly closed journal (which a
// read-only open accepts) must still be recovered before they answer, as
// by every other command: the session is marked interrupted.
func TestReadingCommandsRecoverFirst(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("badger has no read-only open on Windows: reading commands open the journal read-write there")
	}
	for _, command := range []string{"status", "log"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.sh("copy", "echo two > f")
			dirs, _ := filepath.Glob(filepath.Join(e.home, "roots", "*", "journal"))
			if len(dirs) != 1 {
				t.Fatalf("want one journal, found %v", dirs)
			}
			dead := exec.Command("true")
			if err := dead.Run(); err != nil {
				t.Fatal(err)
			}
			j, err := journal.Open(dirs[0], e.root)
			if err != nil {
				t.Fatal(err)
			}
			list, err := j.Sessions()
			if err != nil || len(list) != 1 {
				t.Fatalf("sessions: %v %v", list, err)
			}
			st, err := j.State()
			if err != nil {
				t.Fatal(err)
			}
			s := list[0]
			s.ID, s.Pid, s.PidStart, s.State, s.ExitCode = s.ID+1, dead.Process.Pid, 0, journal.SessionActive, -1
			s.Base, s.Tasks, s.EndedAt = st.Active, nil, s.StartedAt
			if err := j.Update(func(tx *journal.Tx) error { return tx.PutSession(s) }); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			ro, err := journal.OpenReadOnly(dirs[0], e.root)
			if err != nil {
				t.Fatalf("the journal does not open read-only, so this test tests nothing: %v", err)
			}
			ro.Close()
			r := e.ok(command)
			contains(t, command+" after a dead session", r.Stderr, "recovered")
			j, err = journal.Open(dirs[0], e.root)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if got, err := j.Session(s.ID); err != nil || got.State != journal.SessionInterrupted {
				t.Fatalf("after %s the dead session is %q (%v), want %q", command, got.State, err, journal.SessionInterrupted)
			}
		})
	}
}

// TestSessionRecordsLeft: only a session's own directory (named by its id)
// makes a reading command open the journal for writing.
func TestSessionRecordsLeft(t *testing.T) {
	tests := []struct {
		name  string
		make  []string
		wantL bool
	}{
		{"no sessions dir", nil, false},
		{"empty", []string{"sessions/"}, false},
		{"other names", []string{"sessions/tmp/", "sessions/12x"}, false},
		{"a session's records", []string{"sessions/12/"}, true},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		for _, p := range tt.make {
			full := filepath.Join(dir, p)
			var err error
			if p[len(p)-1] == '/' {
				err = os.MkdirAll(full, 0o700)
			} else {
				err = os.WriteFile(full, nil, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := sessionRecordsLeft(dir); got != tt.wantL {
			t.Errorf("%s: sessionRecordsLeft = %v, want %v", tt.name, got, tt.wantL)
		}
	}
}
