//go:build unix

package modeltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// absent stands for a path that does not exist, in trees and changes.
const absent = "\x00absent"

// paths are the files histories work on; d always exists.
var paths = []string{"a", "b", "c", "d/e"}

type tree map[string]string // path → content; a missing path is absent

func (t tree) get(p string) string {
	if c, ok := t[p]; ok {
		return c
	}
	return absent
}

func (t tree) set(p, c string) {
	if c == absent {
		delete(t, p)
	} else {
		t[p] = c
	}
}

func (t tree) clone() tree {
	out := make(tree, len(t))
	for p, c := range t {
		out[p] = c
	}
	return out
}

type change struct{ before, after string }

type task struct {
	id, parent uint64
	kind       string
	layer      map[string]change
	visit      uint64
}

// model is what timeagent must do, written from the design (DESIGN.md
// "Transitions", docs/design-changes.md): tasks with their layers, the
// position, the visit clock, and what the stat cache knows.
type model struct {
	tasks    map[uint64]*task
	active   uint64
	current  uint64
	reserved uint64 // the id reserved for a fuse session's next task (cow.Reserve)
	clock    uint64
	cur      tree            // the real tree
	known    map[string]bool // paths the stat cache has seen (copy scans, applies)
	cache    tree            // their content as last seen
	complete bool            // a full scan has filled the cache
	ever     map[string]bool // every content the user or the agent ever had
}

func newModel(start tree) *model {
	m := &model{tasks: map[uint64]*task{0: {id: 0}}, cur: start.clone(), known: map[string]bool{}, cache: tree{},
		ever: map[string]bool{}}
	return m
}

// replaced notes contents timeagent or the agent replaced at p: timeagent
// answers for them (a content the user overwrote themselves in a path no
// task ever touched is theirs to lose).
func (m *model) replaced(cs ...string) {
	for _, c := range cs {
		m.ever[c] = true
	}
}

func (m *model) ancestors(id uint64) []uint64 {
	var out []uint64
	for id != 0 {
		out = append(out, id)
		id = m.tasks[id].parent
	}
	return out
}

func (m *model) visitTo(id uint64) {
	m.clock++
	for _, a := range m.ancestors(id) {
		m.tasks[a].visit = m.clock
	}
}

func (m *model) children(id uint64) []uint64 {
	var out []uint64
	for _, t := range m.tasks {
		if t.id != 0 && t.parent == id {
			out = append(out, t.id)
		}
	}
	slices.Sort(out)
	return out
}

// newTask creates a task under parent; activate visits it.
func (m *model) newTask(parent uint64, kind string, layer map[string]change, activate bool) uint64 {
	return m.newTaskID(max(m.current, m.reserved)+1, parent, kind, layer, activate)
}

// reserve is cow.Reserve: the reserved id while it is above every task,
// else a new one; no other task takes it.
func (m *model) reserve() uint64 {
	if m.reserved <= m.current {
		m.reserved = max(m.current, m.reserved) + 1
	}
	return m.reserved
}

// newTaskID creates task id under parent; activate visits it.
func (m *model) newTaskID(id, parent uint64, kind string, layer map[string]change, activate bool) uint64 {
	m.current = max(m.current, id)
	t := &task{id: id, parent: parent, kind: kind, layer: layer}
	m.tasks[t.id] = t
	if kind == "agent" {
		for _, c := range layer {
			m.replaced(c.before, c.after)
		}
	}
	if activate {
		m.visitTo(parent)
		t.visit = m.clock
		m.active = t.id
	}
	return t.id
}

// plan is cow.MakePlan: the expected state at a and the target at b of
// every path on the walk.
func (m *model) plan(a, b uint64) (expected, target tree, touched []string) {
	up := m.ancestors(a)
	down := m.ancestors(b)
	inDown := map[uint64]bool{0: true}
	for _, d := range down {
		inDown[d] = true
	}
	var walkUp []uint64
	l := uint64(0)
	for _, u := range up {
		if inDown[u] {
			l = u
			break
		}
		walkUp = append(walkUp, u)
	}
	var walkDown []uint64
	for _, d := range down {
		if d == l {
			break
		}
		walkDown = append(walkDown, d)
	}
	slices.Reverse(walkDown)
	expected, target = tree{}, tree{}
	seen := map[string]bool{}
	step := func(id uint64, isUp bool) {
		for p, c := range m.tasks[id].layer {
			if !seen[p] {
				seen[p] = true
				touched = append(touched, p)
				if isUp {
					expected.set(p, c.after)
				} else {
					expected.set(p, c.before)
				}
			}
			if isUp {
				target.set(p, c.before)
			} else {
				target.set(p, c.after)
			}
		}
	}
	for _, id := range walkUp {
		step(id, true)
	}
	for _, id := range walkDown {
		step(id, false)
	}
	slices.Sort(touched)
	return expected, target, touched
}

// move is undo/redo/switch with --yes: drifted paths become an outside task
// (child of a, reused when one with the same changes exists), then the
// touched paths are written.
func (m *model) move(to uint64) { m.moveView(to, true) }

// clone copies the model, for steps whose outcome is read back (a move
// killed at a random point).
func (m *model) clone() *model {
	c := *m
	c.tasks = make(map[uint64]*task, len(m.tasks))
	for id, t := range m.tasks {
		tc := *t
		tc.layer = make(map[string]change, len(t.layer))
		for p, ch := range t.layer {
			tc.layer[p] = ch
		}
		c.tasks[id] = &tc
	}
	c.cur, c.cache = m.cur.clone(), m.cache.clone()
	c.known = make(map[string]bool, len(m.known))
	for p, k := range m.known {
		c.known[p] = k
	}
	c.ever = make(map[string]bool, len(m.ever))
	for e, k := range m.ever {
		c.ever[e] = k
	}
	return &c
}

// moveView is move; real says the real tree is written (not only a
// session's view), so the stat cache learns the touched paths.
func (m *model) moveView(to uint64, real bool) []string {
	a := m.active
	_, target, touched := m.keepDrift(m.cur, a, a, to)
	for _, p := range touched {
		m.replaced(m.cur.get(p), target.get(p))
		m.cur.set(p, target.get(p))
		if real {
			m.known[p] = target.get(p) != absent
			m.cache.set(p, target.get(p))
		}
	}
	m.visitTo(to)
	m.active = to
	return touched
}

// keepDrift plans from to and keeps the paths of the walk whose content in
// tr differs from the expected one as an outside task under parent (an
// existing one with the same changes is reused).
func (m *model) keepDrift(tr tree, parent, from, to uint64) (expected, target tree, touched []string) {
	expected, target, touched = m.plan(from, to)
	drift := map[string]change{}
	for _, p := range touched {
		if tr.get(p) != expected.get(p) {
			drift[p] = change{expected.get(p), tr.get(p)}
			m.replaced(tr.get(p))
		}
	}
	if len(drift) > 0 {
		reused := false
		for _, c := range m.children(parent) {
			if t := m.tasks[c]; t.kind == "outside" && sameLayer(t.layer, drift) {
				reused = true
			}
		}
		if !reused {
			m.newTask(parent, "outside", drift, false)
		}
	}
	return expected, target, touched
}

func sameLayer(a, b map[string]change) bool {
	if len(a) != len(b) {
		return false
	}
	for p, c := range a {
		if b[p] != c {
			return false
		}
	}
	return true
}

// diff is the layer from one tree to another.
func diff(from, to tree) map[string]change {
	out := map[string]change{}
	for _, p := range paths {
		if from.get(p) != to.get(p) {
			out[p] = change{from.get(p), to.get(p)}
		}
	}
	return out
}

// copyStart is a copy-mode session's first scan: what changed since the
// cache saw it is kept as an outside task (all paths when the cache is
// complete, the paths it knows otherwise).
func (m *model) copyStart() {
	drift := map[string]change{}
	for _, p := range paths {
		if (m.complete || m.known[p]) && m.cache.get(p) != m.cur.get(p) {
			drift[p] = change{m.cache.get(p), m.cur.get(p)}
		}
	}
	if len(drift) > 0 {
		m.newTask(m.active, "outside", drift, true)
	}
	m.rescan()
	m.complete = true
}

func (m *model) rescan() {
	for _, p := range paths {
		m.known[p] = true
	}
	m.cache = m.cur.clone()
}

// op is one thing the agent does, or (pause) one thing another terminal
// does while the agent waits.
type op struct {
	kind    string // write, rm, checkpoint, undo, pause, late
	path    string
	content string
	// act is what another terminal does at a pause: tundo (timeagent
	// undo), mwrite/mrm (through the mount, or the real tree in copy
	// mode), lwrite/lrm (through a descriptor on the real tree opened
	// before the mount)
	act string
}

type history struct {
	t        *rapid.T
	tt       *testing.T
	bin      string
	home     string
	root     string
	marks    string
	m        *model
	n        int // content counter
	sessions int // sessions run, for their marker files
}

func (h *history) fresh(who string) string {
	h.n++
	return fmt.Sprintf("%s%d\n", who, h.n)
}

func (h *history) env() []string {
	env := []string{"TIMEAGENT_HOME=" + h.home, "HOME=" + h.home, "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "TIMEAGENT_END_WAIT=30s"}
	return env
}

func (h *history) cmd(args ...string) *exec.Cmd {
	c := exec.Command(h.bin, args...)
	c.Dir, c.Env = h.root, h.env()
	return c
}

// ta runs timeagent and fails the history on a non-zero exit.
func (h *history) ta(args ...string) string {
	c := h.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		h.t.Fatalf("timeagent %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// real reads the tree.
func (h *history) real() tree {
	out := tree{}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(h.root, p))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			h.t.Fatalf("read %s: %v", p, err)
		}
		out[p] = string(b)
	}
	return out
}

type logDoc struct {
	ActiveTask uint64 `json:"activeTask"`
	Tasks      []struct {
		ID     uint64 `json:"id"`
		Parent uint64 `json:"parent"`
		Kind   string `json:"kind"`
	} `json:"tasks"`
}

// log reads log --json.
func (h *history) log(what string) logDoc {
	var doc logDoc
	if err := json.Unmarshal([]byte(h.ta("log", "--json")), &doc); err != nil {
		h.t.Fatalf("%s: log --json: %v", what, err)
	}
	return doc
}

// check compares the tree, the task tree and the position with the model.
func (h *history) check(what string) {
	got := h.real()
	if d := treeDiff(h.m.cur, got); d != "" {
		h.t.Fatalf("%s: tree differs from the model (- model, + real):\n%s", what, d)
	}
	doc := h.log(what)
	if doc.ActiveTask != h.m.active {
		h.t.Fatalf("%s: active task %d, model %d", what, doc.ActiveTask, h.m.active)
	}
	var gotTasks, wantTasks []string
	for _, t := range doc.Tasks {
		if t.ID != 0 {
			gotTasks = append(gotTasks, fmt.Sprintf("%d<-%d %s", t.ID, t.Parent, t.Kind))
		}
	}
	for _, t := range h.m.tasks {
		if t.id != 0 {
			wantTasks = append(wantTasks, fmt.Sprintf("%d<-%d %s", t.id, t.parent, t.kind))
		}
	}
	slices.Sort(gotTasks)
	slices.Sort(wantTasks)
	if !slices.Equal(gotTasks, wantTasks) {
		h.t.Fatalf("%s: tasks %v, model %v", what, gotTasks, wantTasks)
	}
}

func treeDiff(want, got tree) string {
	var b strings.Builder
	for _, p := range paths {
		if want.get(p) != got.get(p) {
			fmt.Fprintf(&b, "- %s %q\n+ %s %q\n", p, want.get(p), p, got.get(p))
		}
	}
	return b.String()
}

// pauseFiles are the files a paused agent and the other terminal meet at:
// the agent creates ready and waits for go.
func pauseFiles(dir string, sid, k int) (ready, goOn string) {
	return filepath.Join(dir, fmt.Sprintf("s%d-ready%d", sid, k)), filepath.Join(dir, fmt.Sprintf("s%d-go%d", sid, k))
}

// script is the agent: a shell running ops in the root. With mark, it
// writes its pid there once its work is done, then sleeps (to be killed
// there) or exits (to have timeagent killed in the session's end).
func (h *history) script(ops []op, sid int, mark string, sleep bool) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	k := 0
	for _, o := range ops {
		switch o.kind {
		case "write":
			fmt.Fprintf(&b, "printf '%%s\\n' '%s' > %s\n", strings.TrimSuffix(o.content, "\n"), o.path)
		case "rm":
			fmt.Fprintf(&b, "rm %s\n", o.path)
		case "checkpoint":
			fmt.Fprintf(&b, "'%s' checkpoint -m cp >/dev/null\n", h.bin)
		case "undo":
			fmt.Fprintf(&b, "'%s' undo --yes >/dev/null\n", h.bin)
		case "pause":
			k++
			ready, goOn := pauseFiles(h.marks, sid, k)
			fmt.Fprintf(&b, "echo > '%s'\nwhile [ ! -e '%s' ]; do sleep 0.02; done\n", ready, goOn)
		case "late":
			// A process that outlives the agent and writes within the
			// end wait: its write belongs to the session's last task.
			fmt.Fprintf(&b, "(sleep 0.3; printf '%%s\\n' '%s' > %s) &\n", strings.TrimSuffix(o.content, "\n"), o.path)
		}
	}
	if mark != "" {
		fmt.Fprintf(&b, "echo $$ > '%s.tmp' && mv '%s.tmp' '%s'\n", mark, mark, mark)
		if sleep {
			b.WriteString("exec sleep 120\n")
		}
	}
	return b.String()
}

// session runs the agent's ops in a session and has the model follow in
// the order timeagent records: the session's first task at the start, a
// new task at each checkpoint, and at an in-session undo (fuse; from the
// agent or from another terminal) the open task sealed, the drift rule on
// the view, and later writes in a task recorded only when something is
// written. Another terminal writes through the mount (the agent's view) or
// through a descriptor on the real tree opened before the mount (what the
// view shows only where the session has not written). At the end the real
// tree goes from the session's base to its last task with the drift rule.
// kill is "", "sleep" (timeagent killed while the agent waits) or "end"
// (killed a random moment after the agent exited, in the session's end).
func (h *history) session(mode string, isolate bool, kill string) {
	m := h.m
	h.sessions++
	sid := h.sessions
	if mode == "copy" {
		m.copyStart()
	}
	lower := m.cur.clone() // the real tree under a fuse session
	base := m.active
	open := m.newTask(base, "agent", map[string]change{}, true)
	pending, pendingParent := false, uint64(0)
	seg := m.cur.clone()
	upper := map[string]bool{} // paths the view no longer takes from the real tree (fuse)
	seal := func() {
		l := diff(seg, m.cur)
		if pending {
			if len(l) > 0 {
				open = m.newTaskID(m.reserved, pendingParent, "agent", l, true)
				pending = false
			}
		} else {
			m.tasks[open].layer = l
			for _, c := range l {
				m.replaced(c.before, c.after)
			}
		}
		seg = m.cur.clone()
	}
	undo := func() bool {
		if pending && pendingParent == 0 && len(diff(seg, m.cur)) == 0 {
			return false // at the base: nothing to undo
		}
		seal()
		to := m.tasks[m.active].parent
		for _, p := range m.moveView(to, false) {
			upper[p] = true
		}
		m.reserve()
		pending, pendingParent = true, to
		seg = m.cur.clone()
		return true
	}
	present := func(t tree) []string {
		var out []string
		for _, p := range paths {
			if t.get(p) != absent {
				out = append(out, p)
			}
		}
		return out
	}
	var ops []op
	lowerUsed := false
	n := rapid.IntRange(1, 4).Draw(h.t, "ops")
	for i := 0; i < n; i++ {
		kinds := []string{"write", "write", "rm", "pause"}
		if kill == "" && !isolate && i > 0 {
			kinds = append(kinds, "checkpoint")
			if mode == "fuse" {
				kinds = append(kinds, "undo")
			}
		}
		switch k := rapid.SampledFrom(kinds).Draw(h.t, "op"); k {
		case "write":
			p := rapid.SampledFrom(paths).Draw(h.t, "path")
			c := h.fresh("agent")
			ops = append(ops, op{kind: k, path: p, content: c})
			m.cur.set(p, c)
			upper[p] = true
		case "rm":
			pp := present(m.cur)
			if len(pp) == 0 {
				continue
			}
			p := rapid.SampledFrom(pp).Draw(h.t, "rmpath")
			ops = append(ops, op{kind: k, path: p})
			m.cur.set(p, absent)
			upper[p] = true
		case "checkpoint":
			ops = append(ops, op{kind: k})
			wasPending := pending
			seal()
			if wasPending && pending {
				// A checkpoint records the reserved task even when empty.
				open = m.newTaskID(m.reserved, pendingParent, "agent", map[string]change{}, true)
				pending = false
			}
			open = m.newTaskID(m.reserve(), open, "agent", map[string]change{}, true)
		case "undo":
			if !undo() {
				continue
			}
			ops = append(ops, op{kind: k})
		case "pause":
			acts := []string{"mwrite", "mrm"}
			if mode == "fuse" {
				acts = append(acts, "lwrite", "lrm")
				if kill == "" && !isolate {
					acts = append(acts, "tundo")
				}
			}
			o := op{kind: k, act: rapid.SampledFrom(acts).Draw(h.t, "act")}
			switch o.act {
			case "tundo":
				if !undo() {
					continue
				}
			case "mwrite", "lwrite":
				o.path = rapid.SampledFrom(paths).Draw(h.t, "ppath")
				o.content = h.fresh("user")
			case "mrm", "lrm":
				from := m.cur
				if o.act == "lrm" || isolate {
					from = lower
				}
				pp := present(from)
				if len(pp) == 0 {
					continue
				}
				o.path = rapid.SampledFrom(pp).Draw(h.t, "ppath")
				o.content = absent
			}
			switch {
			case !isolate && (o.act == "mwrite" || o.act == "mrm"):
				m.cur.set(o.path, o.content)
				upper[o.path] = true
			case o.act != "tundo":
				// Through the descriptor, or by path beside an isolated
				// session: the real tree.
				lowerUsed = lowerUsed || o.act[0] == 'l'
				lower.set(o.path, o.content)
				if !upper[o.path] {
					// The view shows the real tree here: the change is
					// seen, and is the before-state of a later write.
					m.cur.set(o.path, o.content)
					seg.set(o.path, o.content)
				}
			}
			ops = append(ops, o)
		}
	}
	if mode == "fuse" && kill == "" && rapid.IntRange(0, 3).Draw(h.t, "late") == 0 {
		p := rapid.SampledFrom(paths).Draw(h.t, "latepath")
		c := h.fresh("late")
		ops = append(ops, op{kind: "late", path: p, content: c})
		m.cur.set(p, c)
	}
	seal()
	if pending {
		m.reserved = 0 // released at the end: no task took it
	}
	args := []string{"run", "--mode", mode}
	if isolate {
		args = append(args, "--isolate")
	}
	mark, delay := "", 0
	if kill != "" {
		mark = filepath.Join(h.marks, fmt.Sprintf("s%d-mark", sid))
		if kill == "end" {
			delay = rapid.IntRange(0, 300).Draw(h.t, "killdelay")
		}
	}
	args = append(args, "-m", "agent", "--", "sh", "-c", h.script(ops, sid, mark, kill == "sleep"))
	h.runSession(args, ops, sid, kill, mark, delay, lowerUsed)
	final := m.cur.clone()
	if mode == "copy" {
		m.rescan()
		return
	}
	if isolate {
		m.cur = lower
		h.check("after an isolated session")
		h.ta("apply", "--yes")
	}
	// The end's apply (or apply after --isolate): the real tree from the
	// session's base to the last task, drift kept under the base.
	_, target, touched := m.keepDrift(lower, base, base, m.active)
	m.cur = lower
	for _, p := range touched {
		m.known[p] = target.get(p) != absent
		m.cache.set(p, target.get(p))
		m.cur.set(p, target.get(p))
		if target.get(p) != final.get(p) {
			h.t.Fatalf("model: the end writes %s %q, the view showed %q", p, target.get(p), final.get(p))
		}
	}
}

// runSession runs a session, plays the other terminal at each pause, and
// ends it: normally, or by kill -9 of timeagent (kill "sleep": while the
// agent sleeps; "end": delay ms after the agent exited), after which the
// next command, run from outside the root, recovers it.
func (h *history) runSession(args []string, ops []op, sid int, kill, mark string, delay int, lowerUsed bool) {
	var lowerDir *os.File
	if lowerUsed {
		var err error
		if lowerDir, err = os.Open(h.root); err != nil {
			h.t.Fatal(err)
		}
		defer lowerDir.Close()
	}
	c := h.cmd(args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		h.t.Fatalf("start session: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var exited error
	isDone := false
	fail := func(format string, a ...any) {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		if !isDone {
			<-done
		}
		h.t.Fatalf("%s\nsession output:\n%s", fmt.Sprintf(format, a...), out.String())
	}
	// waitFile waits for the agent to create f.
	waitFile := func(f string) {
		deadline := time.After(90 * time.Second)
		for {
			if _, err := os.Stat(f); err == nil {
				return
			}
			select {
			case exited = <-done:
				isDone = true
				if _, err := os.Stat(f); err == nil {
					// The agent reached f and the session ended between
					// the look above and this one (a small tree's copy
					// session ends within milliseconds).
					return
				}
				fail("the session ended (%v) before the agent reached %s", exited, filepath.Base(f))
			case <-deadline:
				fail("the agent never reached %s", filepath.Base(f))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	k := 0
	for _, o := range ops {
		if o.kind != "pause" {
			continue
		}
		k++
		ready, goOn := pauseFiles(h.marks, sid, k)
		waitFile(ready)
		if err := h.act(o, lowerDir); err != nil {
			fail("another terminal, %s %s: %v", o.act, o.path, err)
		}
		if err := os.WriteFile(goOn, nil, 0o644); err != nil {
			fail("%v", err)
		}
	}
	if kill == "" {
		if !isDone {
			select {
			case exited = <-done:
				isDone = true
			case <-time.After(3 * time.Minute):
				fail("the session did not end")
			}
		}
		if exited != nil {
			fail("timeagent %s: %v", strings.Join(args[:3], " "), exited)
		}
		return
	}
	waitFile(mark)
	b, _ := os.ReadFile(mark)
	agent, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if kill == "end" {
		time.Sleep(time.Duration(delay) * time.Millisecond)
	}
	_ = syscall.Kill(c.Process.Pid, syscall.SIGKILL) // a no-op when it ended first
	if !isDone {
		<-done
		isDone = true
	}
	if kill == "sleep" && agent > 0 {
		_ = syscall.Kill(agent, syscall.SIGKILL)
	}
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	h.recover("kill -9 of a session")
}

// recover runs the first command after a kill from outside the root: a
// shell inside it sits on the dead mount (README, Crash recovery).
func (h *history) recover(what string) {
	c := exec.Command(h.bin, "--root", h.root, "status")
	c.Dir, c.Env = h.marks, h.env()
	if out, err := c.CombinedOutput(); err != nil {
		h.t.Fatalf("timeagent --root %s status after %s: %v\n%s", h.root, what, err, out)
	}
}

// act is what another terminal does at a pause.
func (h *history) act(o op, lowerDir *os.File) error {
	switch o.act {
	case "tundo":
		c := h.cmd("undo", "--yes")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
	case "mwrite":
		return os.WriteFile(filepath.Join(h.root, o.path), []byte(o.content), 0o644)
	case "mrm":
		return os.Remove(filepath.Join(h.root, o.path))
	case "lwrite":
		fd, err := unix.Openat(int(lowerDir.Fd()), o.path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte(o.content))
		return errors.Join(err, unix.Close(fd))
	case "lrm":
		return unix.Unlinkat(int(lowerDir.Fd()), o.path, 0)
	}
	return nil
}

// killedMove runs a switch and kill -9s it delay ms after its start; the
// next command recovers it. The model follows what the journal says
// happened: the move finished, only its drift was kept, or nothing.
func (h *history) killedMove(to uint64, delay int) {
	c := h.cmd("switch", strconv.FormatUint(to, 10), "--yes")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		h.t.Fatalf("start switch: %v", err)
	}
	time.Sleep(time.Duration(delay) * time.Millisecond)
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	_ = c.Wait()
	h.recover("kill -9 of a switch")
	doc := h.log("after a killed switch")
	switch moved := h.m.clone(); {
	case doc.ActiveTask == to:
		moved.move(to)
		h.m = moved
	default:
		kept := h.m.clone()
		kept.keepDrift(kept.cur, kept.active, kept.active, to)
		if len(kept.tasks) != len(h.m.tasks) && len(doc.Tasks) == len(kept.tasks) {
			h.m = kept
		}
	}
}

// step draws and runs one step of a user's history.
func (h *history) step(i int) {
	kinds := []string{"fuse", "copy", "edit", "undo", "redo", "switch", "kill", "killswitch"}
	if fuseOK {
		kinds = append(kinds, "isolate")
	}
	kind := rapid.SampledFrom(kinds).Draw(h.t, "step")
	if !fuseOK && kind == "fuse" {
		kind = "copy"
	}
	switch kind {
	case "fuse", "copy":
		h.session(kind, false, "")
	case "isolate":
		h.session("fuse", true, "")
	case "kill":
		mode := "copy"
		if fuseOK {
			mode = rapid.SampledFrom([]string{"fuse", "copy"}).Draw(h.t, "killmode")
		}
		h.session(mode, false, rapid.SampledFrom([]string{"sleep", "end"}).Draw(h.t, "killat"))
	case "edit":
		p := rapid.SampledFrom(paths).Draw(h.t, "editpath")
		c := h.fresh("user")
		if rapid.IntRange(0, 3).Draw(h.t, "rm") == 0 {
			c = absent
		}
		full := filepath.Join(h.root, p)
		if c == absent {
			_ = os.Remove(full)
		} else if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			h.t.Fatal(err)
		}
		h.m.cur.set(p, c)
	case "undo":
		if h.m.active == 0 {
			return
		}
		h.ta("undo", "--yes")
		h.m.move(h.m.tasks[h.m.active].parent)
	case "redo":
		kids := h.m.children(h.m.active)
		if len(kids) == 0 {
			return
		}
		best := kids[len(kids)-1]
		for _, k := range kids {
			if kv, bv := h.m.tasks[k].visit, h.m.tasks[best].visit; kv > bv || (kv == bv && k > best) {
				best = k
			}
		}
		h.ta("redo", "--yes")
		h.m.move(best)
	case "switch", "killswitch":
		ids := make([]uint64, 0, len(h.m.tasks))
		for id := range h.m.tasks {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		to := rapid.SampledFrom(ids).Draw(h.t, "to")
		if kind == "killswitch" {
			h.killedMove(to, rapid.IntRange(0, 250).Draw(h.t, "killdelay"))
			break
		}
		h.ta("switch", strconv.FormatUint(to, 10), "--yes")
		h.m.move(to)
	}
	h.check(fmt.Sprintf("step %d (%s)", i, kind))
}

// lost returns the contents the user or the agent ever had that no task
// keeps (as a before or an after state) and the tree does not hold.
func (m *model) lost() []string {
	kept := map[string]bool{absent: true}
	for _, t := range m.tasks {
		for _, c := range t.layer {
			kept[c.before], kept[c.after] = true, true
		}
	}
	for _, c := range m.cur {
		kept[c] = true
	}
	var out []string
	for c := range m.ever {
		if !kept[c] {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
