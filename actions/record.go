package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/timeagent-dev/timeagent/journal"
)

// Decisions recorded for a call.
const (
	DecisionAllowed  = "allowed"
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
)

// ExitUnknown is the exit code of a record written before the tool ran: the
// call is still running, or the proxy was killed before it could record the
// end.
const ExitUnknown = -1

// ErrDamagedRecord reports an action file that cannot be read or decoded.
var ErrDamagedRecord = errors.New("damaged action record")

// recordName returns the file name of a call's record: the start time in
// nanoseconds, zero-padded so names sort by time, and the proxy's pid.
func recordName(a journal.Action, pid int) string {
	return fmt.Sprintf("%020d-%d.json", a.Time.UnixNano(), pid)
}

// writeRecord writes a atomically as dir/name: a temporary file in dir,
// fsynced, renamed over name, and the directory fsynced.
func writeRecord(dir, name string, a journal.Action) error {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode action %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("write action %s: %w", dir, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return fmt.Errorf("write action %s: %w", tmpName, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("write action %s: %w", tmpName, err)
	}
	final := filepath.Join(dir, name)
	if err := os.Rename(tmpName, final); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("write action %s: %w", final, err)
	}
	syncDir(dir)
	return nil
}

// syncDir fsyncs a directory so a rename in it is durable. Errors are
// ignored: some systems cannot fsync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ReadLog reads the action records in dir, sorted by start time, and numbers
// them 1, 2, … in that order (Seq). A missing dir is an empty log. Records
// that cannot be read or decoded are left out and reported in err (wrapping
// ErrDamagedRecord) next to the records that could be read; temporary files
// of an unfinished write are ignored.
func ReadLog(dir string) ([]journal.Action, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read action log %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") || !e.Type().IsRegular() {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var (
		list []journal.Action
		errs []error
	)
	for _, n := range names {
		p := filepath.Join(dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read action %s: %w: %w", p, ErrDamagedRecord, err))
			continue
		}
		var a journal.Action
		if err := json.Unmarshal(data, &a); err != nil {
			errs = append(errs, fmt.Errorf("decode action %s: %w: %w", p, ErrDamagedRecord, err))
			continue
		}
		list = append(list, a)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.Before(list[j].Time) })
	for i := range list {
		list[i].Seq = uint64(i + 1)
	}
	return list, errors.Join(errs...)
}
