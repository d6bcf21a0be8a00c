package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"
)

// mountTmpfs mounts a tmpfs of the given size for the test (tests run as root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestFullDisk fills real small file systems: a write that would leave too
// little space is refused with ENOSPC instead of crashing in badger's
// memory-mapped writes.
func TestFullDisk(t *testing.T) {
	_, err := Open(filepath.Join(mountTmpfs(t, "8m"), "j"), "/r")
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrCorrupt) {
		t.Errorf("open on an 8 MiB file system: %v", err)
	}

	j, err := Open(filepath.Join(mountTmpfs(t, "40m"), "j"), "/r")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.PutBytes(randomBytes(1 << 20)); !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrCorrupt) {
		t.Errorf("PutBytes: %v", err)
	}
	if err := j.Update(func(tx *Tx) error { return tx.PutTask(tasks.Task{ID: 1}) }); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Update: %v", err)
	}
	if err := j.PutChanges(1, []Change{{Path: "a"}}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("PutChanges: %v", err)
	}
	if _, err := j.State(); err != nil {
		t.Errorf("reading on a full disk: %v", err)
	}
}

// TestSpaceRunsOutMidBatch checks the re-check inside a large batch.
func TestSpaceRunsOutMidBatch(t *testing.T) {
	j := openTest(t)
	calls := 0
	testFreeBytes = func() int64 {
		calls++
		if calls > 1 {
			return 1 << 20
		}
		return 1 << 40
	}
	defer func() { testFreeBytes = nil }()
	up := map[string]StatEntry{}
	for i := 0; i < 120000; i++ {
		up[fmt.Sprintf("some/longer/directory/%08d/file-name.go", i)] = StatEntry{Kind: Dir}
	}
	if err := j.PutStats(up, nil); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v", err)
	}
}

// TestOpenReadOnlyFS opens a journal on a file system remounted read-only.
func TestOpenReadOnlyFS(t *testing.T) {
	mnt := mountTmpfs(t, "100m")
	dir := filepath.Join(mnt, "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	_, err = Open(dir, "/r")
	if !errors.Is(err, syscall.EROFS) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("open on a read-only file system: %v", err)
	}
}

// TestOpenPermissionDenied opens a root-owned journal as another user, in a
// child process with dropped privileges (tests run as root).
func TestOpenPermissionDenied(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test needs root to drop privileges in a child (uid %d)", os.Getuid())
	}
	base := t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	dir := filepath.Join(base, "j")
	j, err := Open(dir, "/r")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	// The go build cache is private to root: run a world-executable copy.
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "journal.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHelperOpenAsOther$")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), "JOURNAL_OPEN_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Logf("as uid 65534: %s", out)
	if !strings.Contains(string(out), "permission=true corrupt=false") {
		t.Fatalf("helper says: %s", out)
	}
}

// TestHelperOpenAsOther is the unprivileged child of TestOpenPermissionDenied.
func TestHelperOpenAsOther(t *testing.T) {
	dir := os.Getenv("JOURNAL_OPEN_DIR")
	if dir == "" {
		return // only meaningful as a helper process
	}
	_, err := Open(dir, "/r")
	fmt.Printf("permission=%v corrupt=%v: %v\n", errors.Is(err, fs.ErrPermission), errors.Is(err, ErrCorrupt), err)
	os.Exit(0)
}
