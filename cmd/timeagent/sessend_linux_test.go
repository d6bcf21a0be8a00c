package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests cover the end of a fuse session: processes that outlive the
// agent, writes that reach the real tree under the overlay, and an agent
// that tries to reach the real tree behind it.

// waitFile waits for a file the test's children create when they are done.
func (e *env) waitFile(name string, timeout time.Duration) {
	e.t.Helper()
	waitFor(e.t, name, timeout, func() bool { return exists(filepath.Join(e.scratch, name)) })
}

// scratchLine returns a one-line file a child wrote into the scratch dir.
func (e *env) scratchLine(name string) string {
	e.t.Helper()
	return strings.TrimSpace(e.readScratch(name))
}

// backgroundWriter is a script the agent starts in the background: a git
// commit, a gc that packs (and deletes) the base's loose objects, and a loop
// that keeps changing files of the base, COUNT times 50 ms, after the agent
// exited; it writes its pid to $SCRATCH/bg.pid and touches
// $SCRATCH/bg.done at its end.
const backgroundWriter = `set -e
echo agent > agent.txt
git add -A >/dev/null 2>&1
git commit -q -m "agent commit" >/dev/null 2>&1
sh -c 'echo $$ > "$SCRATCH/bg.pid"; sleep 0.2
git gc -q >/dev/null 2>&1 || true
i=0
while [ "$i" -lt COUNT ]; do
	echo "line $i" >> main.go 2>/dev/null || true
	echo "$i" > "bg-$i.txt" 2>/dev/null || true
	[ "$i" = 3 ] && rm -f README.md docs/index.md 2>/dev/null
	i=$((i+1)); sleep 0.05
done
touch "$SCRATCH/bg.done"' > /dev/null 2>&1 < /dev/null &
`

// TestProcessOutlivesAgent: a process the agent started keeps writing after
// the agent exits. What it wrote before the session ended is in the
// session's task with its before-states, so undo brings every file of the
// base back byte for byte and git fsck passes; a process still writing after
// the wait is named and cannot write into the tree through the overlay.
func TestProcessOutlivesAgent(t *testing.T) {
	for _, tc := range []struct {
		name, wait string
		count      int
		outlives   bool
	}{
		{"within the wait", "60", 8, false},
		{"beyond the wait", "0.5", 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRealisticEnv(t)
			e.git("add", "-A")
			e.git("commit", "-q", "-m", "base")
			base := e.manifest()
			e.extra = append(e.extra, "TIMEAGENT_END_WAIT="+tc.wait)
			r := e.sh("fuse", strings.ReplaceAll(backgroundWriter, "COUNT", strconv.Itoa(tc.count)))
			pid := e.scratchLine("bg.pid")
			if tc.outlives {
				contains(t, "run's notice", r.Stderr, pid, "still")
			}
			e.waitFile("bg.done", 60*time.Second)
			if !tc.outlives {
				if exists(e.path("README.md")) || !exists(e.path("bg-0.txt")) || !strings.Contains(e.read("main.go"), "line 0") {
					t.Fatalf("the writes of a process that ended within the wait are not in the tree:\n%s\n%s", r, e.manifest())
				}
			}
			e.gitFsck(e.root)
			// A process that outlived the wait may have changed files after
			// the apply (git gc removes .git/gc.pid): that is drift, kept
			// as an outside task, and a non-interactive undo needs --yes.
			e.ok("undo", "--yes")
			sameManifest(t, "after undo", base, e.manifest())
			e.gitFsck(e.root)
			e.ok("redo", "--yes")
			if !exists(e.path("agent.txt")) {
				t.Fatalf("redo: agent.txt missing\n%s", e.manifest())
			}
			e.gitFsck(e.root)
		})
	}
}

// TestLowerWriterDuringSession: a process whose working directory was inside
// the root before the overlay was mounted writes relatively into the real
// tree during the session. run warns about it at the start, and the bytes
// it wrote to a file the agent also changed are kept in an outside task,
// reachable by switch, instead of being overwritten by the session's end.
func TestLowerWriterDuringSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("shared.txt", "base\n", 0o644)
	e.write("keep.txt", "keep\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "base")
	w := exec.Command("sh", "-c", `while [ ! -e "$SCRATCH/go" ]; do sleep 0.02; done
echo "from the lower tree" > shared.txt
touch "$SCRATCH/wrote"`)
	w.Dir = e.root
	w.Env = e.baseEnv()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	waitFor(t, "the writer to start", 10*time.Second, func() bool {
		link, err := os.Readlink("/proc/" + strconv.Itoa(w.Process.Pid) + "/cwd")
		return err == nil && link == e.root
	})
	r := e.sh("fuse", `echo "from the agent" > shared.txt
touch "$SCRATCH/go"
while [ ! -e "$SCRATCH/wrote" ]; do sleep 0.02; done`)
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	contains(t, "run's warning", r.Stderr, strconv.Itoa(w.Process.Pid), "working directory")
	if got := e.read("shared.txt"); got != "from the agent\n" {
		t.Fatalf("after the session shared.txt = %q\n%s", got, r)
	}
	if !e.findInSomeTask("shared.txt", "from the lower tree\n") {
		t.Fatalf("what the lower writer wrote is in no task\n%s\n%s", r, e.ok("log").Stdout)
	}
}

// findInSomeTask switches to every task (the base included) and reports
// whether rel had want in one of them.
func (e *env) findInSomeTask(rel, want string) bool {
	e.t.Helper()
	ids := []uint64{0}
	for _, task := range e.log().Tasks {
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		r := e.ta("switch", "--yes", strconv.FormatUint(id, 10))
		if r.Code != 0 {
			e.t.Fatalf("switch %d:\n%s", id, r)
		}
		if b, err := os.ReadFile(e.path(rel)); err == nil && string(b) == want {
			return true
		}
	}
	return false
}

// escapeScript tries every way an agent has to the real tree behind the
// overlay through /proc: the working directory and the open directories of
// the timeagent processes above it. It runs without CAP_SYS_PTRACE (as any
// agent that is not root: a root agent may do anything), and writes only
// into a directory that is the root itself. timeagent runs with the same
// capabilities, so only the session's own protection stands in the way.
const escapeScript = `p=$PPID
for pid in $p $(awk '{print $4}' /proc/$p/stat); do
	for link in /proc/$pid/cwd /proc/$pid/fd/*; do
		[ "$(readlink "$link" 2>/dev/null)" = "$ROOT" ] || continue
		[ -d "$link" ] || continue
		echo escaped > "$link/escaped-$pid-$(basename "$link").txt" 2>/dev/null && echo "$link" >> "$SCRATCH/escaped"
	done
done
echo agent > agent.txt
true`

// TestAgentCannotReachRealTree: writes through /proc/$PPID/cwd and through
// the session's descriptor of the lower root never reach the real tree,
// with and without --isolate.
func TestAgentCannotReachRealTree(t *testing.T) {
	for _, isolate := range []bool{false, true} {
		t.Run(map[bool]string{false: "fuse", true: "isolate"}[isolate], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write("f.txt", "base\n", 0o644)
			e.extra = append(e.extra, "ROOT="+e.root)
			args := []string{"--bounding-set", "-sys_ptrace", binary, "run", "--mode", "fuse"}
			if isolate {
				args = append(args, "--isolate")
			}
			args = append(args, "--", "sh", "-c", escapeScript)
			cmd := exec.Command("setpriv", args...)
			cmd.Dir, cmd.Env = e.root, e.baseEnv()
			r := runCmd(t, cmd, args)
			if r.Code != 0 {
				t.Fatalf("want exit 0:\n%s", r)
			}
			if exists(filepath.Join(e.scratch, "escaped")) {
				t.Fatalf("the agent reached the real tree through %s\n%s", e.scratchLine("escaped"), r)
			}
			if isolate {
				e.ok("apply")
			}
			if !exists(e.path("agent.txt")) {
				t.Fatalf("agent.txt missing after the session\n%s", r)
			}
		})
	}
}

// TestDeadSessionRecoveryKeepsDrift: a fuse session is killed (-9) while a
// process outside it has changed, in the real tree, a file the agent also
// changed. The next command applies the session's work and keeps the
// outside bytes as an outside task instead of overwriting them unseen.
func TestDeadSessionRecoveryKeepsDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("shared.txt", "base\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "base")
	lower, err := os.Open(e.root) // a descriptor on the real tree, opened before the mount
	if err != nil {
		t.Fatal(err)
	}
	defer lower.Close()
	cmd := e.cmd("run", "--mode", "fuse", "--", "sh", "-c", `echo "from the agent" > shared.txt
touch "$SCRATCH/written"; sleep 600`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	e.waitFile("written", 30*time.Second)
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(lower.Fd()))+"/shared.txt", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("from outside\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd.Process.Kill()
	cmd.Wait()
	r := e.ok("status")
	if got := e.read("shared.txt"); got != "from the agent\n" {
		t.Fatalf("after recovery shared.txt = %q\n%s", got, r)
	}
	if !e.findInSomeTask("shared.txt", "from outside\n") {
		t.Fatalf("the outside bytes are in no task\n%s\n%s", r, e.ok("log").Stdout)
	}
}

// TestOverlayUnmountedUnderAgent: the agent unmounts the overlay (it runs
// as root) and writes into the real tree. The session says so at its end,
// and what it wrote to a path the session had changed is kept as an outside
// task.
func TestOverlayUnmountedUnderAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("shared.txt", "base\n", 0o644)
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "base")
	r := e.sh("fuse", `echo "through the overlay" > shared.txt
umount -l "$PWD"
cd "$PWD"
echo "into the real tree" > shared.txt`)
	contains(t, "run's notice", r.Stderr, "unmounted")
	if !e.findInSomeTask("shared.txt", "into the real tree\n") {
		t.Fatalf("the real-tree bytes are in no task\n%s\n%s", r, e.ok("log").Stdout)
	}
	if !e.findInSomeTask("shared.txt", "through the overlay\n") {
		t.Fatalf("the overlay bytes are in no task\n%s\n%s", r, e.ok("log").Stdout)
	}
}

// TestRelativeCommandInFuse: ./script names a file relative to where run
// was started, although the session process leaves the root while the
// overlay is mounted.
func TestRelativeCommandInFuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("agent.sh", "#!/bin/sh\necho ran > ran.txt\n", 0o755)
	e.run("fuse", "./agent.sh")
	if e.read("ran.txt") != "ran\n" {
		t.Fatal("./agent.sh did not run in the root")
	}
}
