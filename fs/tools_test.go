//go:build linux

package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timeagent-dev/timeagent/tasks"
)

// sh runs a bash script in dir. The child changes directory itself: a fork
// with a working directory inside the mount served by this very process is
// one of go-fuse's documented deadlocks (api.go, 1a).
func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-ec", "cd "+dir+"\n"+script)
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// session mounts over a root made by fill, runs work through the mount, and
// checks the journal: after unmount the lower tree is untouched; applying
// the layer's after states to it gives the tree the mount showed; applying
// the before states gives back the pre-session tree byte for byte.
func session(t *testing.T, fill func(root string), work func(root string)) {
	o, cleanup := setupOverlay(t, fill)
	defer cleanup()
	work(o.root)
	view := snapshot(t, o.root)
	if err := o.Unmount(); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(o.base, snapshot(t, o.root)); d != "" {
		t.Fatalf("lower tree changed during the session:\n%s", d)
	}
	ids := []tasks.ID{1}
	replay(t, o.j, "", ids, true, o.root)
	if d := diffSnapshots(view, snapshot(t, o.root)); d != "" {
		t.Fatalf("after states differ from the mounted tree:\n%s", d)
	}
	replay(t, o.j, "", ids, false, o.root)
	if d := diffSnapshots(o.base, snapshot(t, o.root)); d != "" {
		t.Fatalf("undo differs from the pre-session tree:\n%s", d)
	}
}

func gitRepo(root string) {
	script := `git init -q -b main
printf 'package main\n\nfunc main() { println("v1") }\n' > main.go
printf 'line1\nline2\n' > notes.txt
mkdir -p docs && echo doc > docs/a.md && chmod 755 docs/a.md
echo untracked > scratch.txt
echo secret > .env && echo .env > .gitignore
git add main.go notes.txt docs .gitignore && git commit -qm init`
	cmd := exec.Command("bash", "-ec", "cd "+root+"\n"+script)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("git repo: %v\n%s", err, out))
	}
}

func TestToolGit(t *testing.T) {
	session(t, gitRepo, func(root string) {
		if out := sh(t, root, "git status --porcelain"); !strings.Contains(out, "?? scratch.txt") {
			t.Fatalf("git status: %q", out)
		}
		sh(t, root, `echo line3 >> notes.txt
git add notes.txt && git commit -qm two
git checkout -qb feature
echo feature > feature.txt && git add feature.txt && git commit -qm feature
git checkout -q main
echo main >> notes.txt && git commit -qam main
git checkout -q feature
git rebase -q main
echo wip >> main.go
git stash -q
test -z "$(git status --porcelain --untracked-files=no)"
git stash pop -q
git gc -q
git fsck --no-progress
git log --oneline | wc -l | grep -q 4`)
		if out := sh(t, root, "git status --porcelain"); !strings.Contains(out, " M main.go") {
			t.Fatalf("git status after stash pop: %q", out)
		}
	})
}

func TestToolEditorSave(t *testing.T) {
	session(t, gitRepo, func(root string) {
		// What editors do: write a temp file beside, fsync, rename over.
		p := filepath.Join(root, "notes.txt")
		tmp := filepath.Join(root, ".notes.txt.swp")
		f, err := os.Create(tmp)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("edited\n")
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "edited\n" {
			t.Fatalf("after save: %q", b)
		}
		sh(t, root, `cp -p notes.txt notes.txt~ && sed -i 's/edited/sed-edited/' notes.txt && grep -q sed-edited notes.txt`)
	})
}

func TestToolGoBuild(t *testing.T) {
	gocache := t.TempDir()
	session(t, gitRepo, func(root string) {
		out := sh(t, root, fmt.Sprintf(`export GOCACHE=%s GOPATH=%s GO111MODULE=on GOTOOLCHAIN=local
printf 'module example.com/hello\n\ngo 1.21\n' > go.mod
go build -o hello . && ./hello 2>&1`, gocache, t.TempDir()))
		if !strings.Contains(out, "v1") {
			t.Fatalf("hello printed %q", out)
		}
	})
}

func TestToolSQLite(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatal("sqlite3 is not installed (apt-get install -y sqlite3)")
	}
	session(t, gitRepo, func(root string) {
		out := sh(t, root, `sqlite3 data.db 'PRAGMA journal_mode=WAL;' 'CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);'
for i in $(seq 1 20); do sqlite3 data.db "INSERT INTO t(v) VALUES (hex(randomblob(200)));"; done
sqlite3 data.db 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
sqlite3 data.db 'PRAGMA integrity_check;' 'SELECT count(*) FROM t;'`)
		if !strings.Contains(out, "ok") || !strings.Contains(out, "20") {
			t.Fatalf("sqlite: %q", out)
		}
	})
}

func TestToolManyFiles(t *testing.T) {
	session(t, gitRepo, func(root string) {
		sh(t, root, `mkdir many && cd many
for d in $(seq 1 20); do mkdir d$d; for f in $(seq 1 1000); do echo $d-$f > d$d/f$f; done; done
test "$(find . -type f | wc -l)" = 20000
cd .. && rm -rf many && mkdir keep && echo kept > keep/file`)
	})
}

// mmap writes, O_APPEND and sparse files behave as on a local filesystem
// (run in a child: a process must not page-fault on a mount it serves).
func TestMmapAppendSparse(t *testing.T) {
	session(t, gitRepo, func(root string) {
		out := sh(t, root, `python3 - <<'PY'
import mmap, os
with open("notes.txt", "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:5] = b"LINE1"
    m.flush()
    m.close()
with open("notes.txt", "rb") as f:
    assert f.read().startswith(b"LINE1"), "mmap write lost"
fd = os.open("log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.write(fd, b"one\n"); os.lseek(fd, 0, 0); os.write(fd, b"two\n"); os.close(fd)
assert open("log.txt", "rb").read() == b"one\ntwo\n"
with open("sparse.bin", "wb") as f:
    f.seek(10 << 20); f.write(b"end")
st = os.stat("sparse.bin")
assert st.st_size == (10 << 20) + 3
assert st.st_blocks * 512 < (1 << 20), "sparse file got filled"
print("ok")
PY`)
		if !strings.Contains(out, "ok") {
			t.Fatalf("python: %q", out)
		}
	})
}
