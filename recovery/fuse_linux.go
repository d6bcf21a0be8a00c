//go:build linux

package recovery

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/timeagent-dev/timeagent/cow"
	"github.com/timeagent-dev/timeagent/journal"
	"github.com/timeagent-dev/timeagent/tasks"
)

// fuseMountedAt reports whether a FUSE filesystem is mounted exactly at dir.
func fuseMountedAt(dir string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp != dir {
			continue
		}
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && strings.HasPrefix(fields[i+1], "fuse") {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// unescapeMount decodes the octal escapes (\040 for space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// UnmountStale lazily detaches a FUSE mount left on root by a dead session,
// so the user's directory is readable again (never "transport endpoint is not
// connected").
func UnmountStale(root string) (bool, error) {
	mounted, err := fuseMountedAt(root)
	if err != nil || !mounted {
		return false, err
	}
	if err := unix.Unmount(root, unix.MNT_DETACH); err != nil {
		return false, fmt.Errorf("detach stale mount on %s: %w (try: umount -l %s)", root, err, root)
	}
	return true, nil
}

// finishDeadFuse applies the dead session's recorded work onto the real tree
// (which the overlay left untouched), as an apply with an intent.
func finishDeadFuse(t Target, s journal.Session, last tasks.ID) (int, error) {
	j := t.Journal
	st, err := j.State()
	if err != nil {
		return 0, err
	}
	if st.Applied == st.Active {
		return 0, nil
	}
	in := journal.Intent{From: st.Applied, To: st.Active, Started: t.now(), Reason: "recovery of session " + fmt.Sprint(s.ID)}
	if err := j.Update(func(tx *journal.Tx) error { return tx.PutIntent(in) }); err != nil {
		return 0, err
	}
	tree, err := j.Tree()
	if err != nil {
		return 0, err
	}
	plan, err := cow.MakePlan(tree, j, in.From, in.To)
	if err != nil {
		return 0, err
	}
	if _, err := cow.FinishIntent(j, t.Tree, t.progress()); err != nil {
		return 0, err
	}
	_ = last
	return len(plan.Target), nil
}
