//go:build linux

package crashtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/internal/testrepo"
)

// The Go agents of the session crash tests (session_kill_test.go). Each
// works in its current directory (the root, through the overlay), reads its
// parameters from the environment (set in its argv by agentArgvEnv), and
// reports to the test through files in $SCRATCH: the manifest of the tree it
// saw (what the real tree must become) and markers that say how far it got.

func init() {
	agents["churn"] = churnAgent
	agents["isolated"] = isolatedAgent
	agents["mover"] = moverAgent
}

// agentArgvEnv is agentArgv with extra environment variables (K=V).
func agentArgvEnv(name string, kv ...string) []string {
	argv := []string{"env", agentEnv + "=" + name}
	argv = append(argv, kv...)
	return append(argv, os.Args[0])
}

// churnFiles is the number of files under many/ the churn agent works on,
// movedFiles the number under the directory it renames.
const churnFiles, movedFiles = 1500, 200

// churnPath is the i-th file under many/.
func churnPath(i int) string {
	return filepath.Join("many", fmt.Sprintf("d%d", i/100), fmt.Sprintf("f%d", i))
}

// churnContent is what round r writes into file i (sizes vary with both).
func churnContent(r, i int) []byte {
	head := fmt.Sprintf("round %d file %d\n", r, i)
	return []byte(head + strings.Repeat(string(rune('a'+(i+r)%26)), (i*37+r*101)%2000))
}

// churnAgent is one round ($ROUND, from 1) of a session whose end-of-session
// apply takes a while: it deletes every fifth file of many/ (a different
// fifth each round), rewrites the others (creating those an earlier round
// deleted), renames the directory moved/r<ROUND-1> (200 files) to
// moved/r<ROUND>, and adds a file in .git. Its last acts are its manifest in
// $SCRATCH/final and the marker $SCRATCH/done; then it exits.
func churnAgent() error {
	r, err := strconv.Atoi(os.Getenv("ROUND"))
	if err != nil {
		return fmt.Errorf("ROUND: %w", err)
	}
	for i := 0; i < churnFiles; i++ {
		p := churnPath(i)
		if i%5 == r%5 {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, churnContent(r, i), 0o644); err != nil {
			return err
		}
	}
	if err := os.Rename(filepath.Join("moved", fmt.Sprintf("r%d", r-1)), filepath.Join("moved", fmt.Sprintf("r%d", r))); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(".git", "churn"), []byte(fmt.Sprintf("round %d\n", r)), 0o644); err != nil {
		return err
	}
	if err := syncDir("."); err != nil {
		return err
	}
	if err := agentManifest("final"); err != nil {
		return err
	}
	return mark("done")
}

// isolatedAgent works in an isolated session: it modifies, creates, deletes,
// renames a directory and changes a mode, closes everything and fsyncs the
// root, writes its manifest ($SCRATCH/final) and the marker $SCRATCH/done,
// then waits to be killed.
func isolatedAgent() error {
	if err := os.WriteFile("a", []byte("isolated a\n"), 0o644); err != nil {
		return err
	}
	if err := os.Remove("c"); err != nil {
		return err
	}
	if err := os.Rename("src", "source"); err != nil {
		return err
	}
	if err := os.Chmod("run.sh", 0o700); err != nil {
		return err
	}
	for i := 0; i < 50; i++ {
		if err := os.MkdirAll(filepath.Join("gen", fmt.Sprint(i%5)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join("gen", fmt.Sprint(i%5), fmt.Sprintf("g%d", i)), churnContent(7, i), 0o644); err != nil {
			return err
		}
	}
	if err := syncDir("."); err != nil {
		return err
	}
	if err := agentManifest("final"); err != nil {
		return err
	}
	if err := mark("done"); err != nil {
		return err
	}
	time.Sleep(time.Minute)
	return nil
}

// moverFiles is how many files set A of the mover agent writes (half of them
// over files of many/, half new ones; $MOVER_FILES overrides it), moverB how
// many set B writes.
const moverFiles, moverB = 1000, 200

// moverAgent makes one task and then moves inside its own session over the
// control socket ($MOVE):
//
//   - undo: set A (task 1); manifest m1; marker go; `timeagent undo`.
//   - switch: set A; m1; `timeagent undo`; set B (a branch from the base,
//     task 2); m2; marker go; `timeagent switch A`.
//   - checkpoint: set A; m1; marker go; `timeagent checkpoint`.
//   - reserved: set A; m1; `timeagent undo`; set B; m2; marker go (no move:
//     set B lives in the reserved task the undo opened).
//
// After the move returns it writes the marker "returned" (with the command's
// output) and waits to be killed.
func moverAgent() error {
	out, err := ta("status", "--json")
	if err != nil {
		return fmt.Errorf("status in the session: %v\n%s", err, out)
	}
	var st struct {
		Session struct {
			Tasks []uint64 `json:"tasks"`
		} `json:"session"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st.Session.Tasks) != 1 {
		return fmt.Errorf("status --json in the session: %v\n%s", err, out)
	}
	first := strconv.FormatUint(st.Session.Tasks[0], 10)
	n := moverFiles
	if v := os.Getenv("MOVER_FILES"); v != "" {
		if n, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("MOVER_FILES: %w", err)
		}
	}
	if err := moverSet("A", n); err != nil {
		return err
	}
	if err := agentManifest("m1"); err != nil {
		return err
	}
	var move []string
	switch m := os.Getenv("MOVE"); m {
	case "undo":
		move = []string{"undo"}
	case "checkpoint":
		move = []string{"checkpoint", "-m", "second"}
	case "switch", "reserved":
		if out, err := ta("undo"); err != nil {
			return fmt.Errorf("undo in the session: %v\n%s", err, out)
		}
		if err := moverSet("B", moverB); err != nil {
			return err
		}
		if err := agentManifest("m2"); err != nil {
			return err
		}
		if m == "switch" {
			move = []string{"switch", first}
		}
	default:
		return fmt.Errorf("MOVE=%q", m)
	}
	if err := mark("go"); err != nil {
		return err
	}
	if move != nil {
		out, err := ta(move...)
		if err != nil {
			return fmt.Errorf("%s in the session: %v\n%s", move[0], err, out)
		}
		if err := os.WriteFile(filepath.Join(os.Getenv("SCRATCH"), "returned.out"), out, 0o644); err != nil {
			return err
		}
		if err := mark("returned"); err != nil {
			return err
		}
	}
	time.Sleep(time.Minute)
	return nil
}

// moverSet writes n files of set name: the first half over many/ (modified),
// the rest new under set-<name>/, removes every tenth file of many/ above
// them, and fsyncs the root so every change is journaled.
func moverSet(name string, n int) error {
	for i := 0; i < n; i++ {
		p := churnPath(i)
		if i >= n/2 {
			p = filepath.Join("set-"+name, fmt.Sprintf("d%d", i/100), fmt.Sprintf("f%d", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(p, []byte(name+" "+string(churnContent(3, i))), 0o644); err != nil {
			return err
		}
	}
	for i := n / 2; i < churnFiles; i += 10 {
		if err := os.Remove(churnPath(i)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return syncDir(".")
}

// ta runs timeagent (the built binary, $TA) from inside the session.
func ta(args ...string) ([]byte, error) {
	cmd := exec.Command(os.Getenv("TA"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// syncDir fsyncs a directory: the overlay journals its batched metadata
// changes (deletions, renames, mkdir) at once.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// agentManifest writes the manifest of the tree the agent sees to
// $SCRATCH/name.
func agentManifest(name string) error {
	m, err := testrepo.Manifest(".")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(os.Getenv("SCRATCH"), name), []byte(m))
}

// mark writes the marker $SCRATCH/name holding the current time (Unix ns).
func mark(name string) error {
	return writeAtomic(filepath.Join(os.Getenv("SCRATCH"), name), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
}

func writeAtomic(p string, b []byte) error {
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// marker waits (polling every half millisecond) for the agent's marker,
// removes it and returns the time it holds. It fails the test if the
// session ends first.
func (e *env) marker(p *proc, name string, timeout time.Duration) time.Time {
	e.t.Helper()
	path := filepath.Join(e.scratch, name)
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil {
			ns, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				e.t.Fatalf("marker %s: %q", name, b)
			}
			os.Remove(path)
			return time.Unix(0, ns)
		}
		if ended(p) {
			e.t.Fatalf("the session ended (exit %d) before the agent's marker %q:\n%s", p.code, name, p.output())
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for the agent's marker %q:\n%s", name, p.output())
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// scratchFile returns the content of $SCRATCH/name and removes it.
func (e *env) scratchFile(name string) string {
	e.t.Helper()
	p := filepath.Join(e.scratch, name)
	b, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	os.Remove(p)
	return string(b)
}

// hasMarker reports whether the agent left $SCRATCH/name (and removes it).
func (e *env) hasMarker(name string) bool {
	p := filepath.Join(e.scratch, name)
	if !exists(p) {
		return false
	}
	os.Remove(p)
	return true
}

// setupMany writes the files the churn and mover agents work on: many/
// (1,500 files in 15 directories) and moved/r0 (200 files, mode 0600).
func (e *env) setupMany() {
	e.t.Helper()
	for i := 0; i < churnFiles; i++ {
		writeFile(e.t, e.path(filepath.ToSlash(churnPath(i))), churnContent(0, i), 0o644)
	}
	for i := 0; i < movedFiles; i++ {
		writeFile(e.t, e.path(fmt.Sprintf("moved/r0/sub%d/m%d", i%4, i)), churnContent(0, i+5000), 0o600)
	}
}
