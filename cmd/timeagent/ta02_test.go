package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TimeAgent 0.2's JSON contract (../shared/reference/timeagent-0.2-json.md),
// checked as strictly as its VS Code extension parses it: every field
// present, of its type, enums within their values. Our own fields are
// pinned by the golden files beside.

type taDoc map[string]any

func parseTA(t *testing.T, what, doc string) taDoc {
	t.Helper()
	var m taDoc
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%s: not a JSON object: %v\n%s", what, err, doc)
	}
	if v, ok := m["schemaVersion"].(float64); !ok || v != 1 {
		t.Fatalf("%s: schemaVersion %v, want 1", what, m["schemaVersion"])
	}
	return m
}

type taCheck struct {
	t    *testing.T
	what string
}

func (c taCheck) fail(field, format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s: TimeAgent 0.2 field %q: "+format, append([]any{c.what, field}, args...)...)
}

func (c taCheck) field(m taDoc, k string) any {
	c.t.Helper()
	v, ok := m[k]
	if !ok {
		c.fail(k, "missing")
	}
	return v
}

func (c taCheck) obj(m taDoc, k string) taDoc {
	c.t.Helper()
	v, ok := c.field(m, k).(map[string]any)
	if !ok {
		c.fail(k, "not an object: %v", m[k])
	}
	return v
}

func (c taCheck) str(m taDoc, k string, enum ...string) string {
	c.t.Helper()
	v, ok := c.field(m, k).(string)
	if !ok {
		c.fail(k, "not a string: %v", m[k])
	}
	if len(enum) > 0 && !contains1(enum, v) {
		c.fail(k, "%q not one of %q", v, enum)
	}
	return v
}

func (c taCheck) strOrNull(m taDoc, k string, enum ...string) *string {
	c.t.Helper()
	if c.field(m, k) == nil {
		return nil
	}
	s := c.str(m, k, enum...)
	return &s
}

func (c taCheck) boolean(m taDoc, k string) bool {
	c.t.Helper()
	v, ok := c.field(m, k).(bool)
	if !ok {
		c.fail(k, "not a bool: %v", m[k])
	}
	return v
}

func (c taCheck) num(m taDoc, k string) float64 {
	c.t.Helper()
	v, ok := c.field(m, k).(float64)
	if !ok {
		c.fail(k, "not a number: %v", m[k])
	}
	return v
}

func (c taCheck) numOrNull(m taDoc, k string) {
	c.t.Helper()
	if c.field(m, k) != nil {
		c.num(m, k)
	}
}

func (c taCheck) strings(m taDoc, k string) []string {
	c.t.Helper()
	l, ok := c.field(m, k).([]any)
	if !ok {
		c.fail(k, "not an array: %v", m[k])
	}
	var out []string
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			c.fail(k, "element not a string: %v", x)
		}
		out = append(out, s)
	}
	return out
}

func (c taCheck) list(m taDoc, k string) []taDoc {
	c.t.Helper()
	l, ok := c.field(m, k).([]any)
	if !ok {
		c.fail(k, "not an array: %v", m[k])
	}
	var out []taDoc
	for _, x := range l {
		o, ok := x.(map[string]any)
		if !ok {
			c.fail(k, "element not an object: %v", x)
		}
		out = append(out, o)
	}
	return out
}

func contains1(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

var isoTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)

// checkTAStatus checks a status document and returns its session object.
func checkTAStatus(t *testing.T, doc string) taDoc {
	t.Helper()
	c := taCheck{t, "status"}
	m := parseTA(t, "status", doc)
	if c.str(m, "repository") != "." {
		c.fail("repository", "want \".\"")
	}
	s := c.obj(m, "session")
	c.boolean(s, "available")
	c.str(s, "state", "none", "active", "completed", "interrupted", "invalid")
	c.strOrNull(s, "agent")
	c.strOrNull(s, "command")
	c.strings(s, "args")
	if at := c.strOrNull(s, "startedAt"); at != nil && !isoTime.MatchString(*at) {
		c.fail("startedAt", "%q is not ISO 8601", *at)
	}
	c.numOrNull(s, "durationMs")
	c.boolean(s, "undoAvailable")
	c.boolean(s, "recoveryCheckpointAvailable")
	c.strOrNull(s, "invalidReason")
	ch := c.obj(m, "changes")
	for _, k := range []string{"created", "modified", "deleted"} {
		c.num(ch, k)
	}
	ea := c.obj(m, "externalActions")
	for _, k := range []string{"total", "highRisk", "critical", "denied"} {
		c.num(ea, k)
	}
	return s
}

func checkTAWarning(c taCheck, m taDoc, state string) {
	c.t.Helper()
	w := c.field(m, "warning")
	if state == "completed" {
		if w != nil {
			c.fail("warning", "want null for a completed session: %v", w)
		}
		return
	}
	wm, ok := w.(map[string]any)
	if !ok {
		c.fail("warning", "want an object for an interrupted session: %v", w)
	}
	c.str(wm, "code", "interrupted-session")
	c.str(wm, "message")
}

func checkTAPath(c taCheck, p string) {
	c.t.Helper()
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || contains1(strings.Split(p, "/"), "..") {
		c.fail("path", "%q is not a relative slash path inside the root", p)
	}
}

// checkTADiff checks a diff document and returns its files.
func checkTADiff(t *testing.T, doc string) []taDoc {
	t.Helper()
	c := taCheck{t, "diff"}
	m := parseTA(t, "diff", doc)
	checkTAWarning(c, m, c.str(m, "sessionState", "completed", "interrupted"))
	files := c.list(m, "files")
	counts := map[string]float64{}
	for _, f := range files {
		checkTAPath(c, c.str(f, "path"))
		counts[c.str(f, "changeType", "created", "modified", "deleted")]++
		c.boolean(f, "binary")
	}
	sum := c.obj(m, "summary")
	for _, k := range []string{"created", "modified", "deleted"} {
		if n := c.num(sum, k); n != counts[k] {
			c.fail("summary", "%s %v, files say %v", k, n, counts[k])
		}
	}
	if n := c.num(sum, "total"); n != float64(len(files)) {
		c.fail("summary", "total %v, %d files", n, len(files))
	}
	return files
}

// checkTADiffFile checks a diff-file document.
func checkTADiffFile(t *testing.T, doc string) taDoc {
	t.Helper()
	c := taCheck{t, "diff-file"}
	m := parseTA(t, "diff-file", doc)
	checkTAPath(c, c.str(m, "path"))
	change := c.str(m, "changeType", "created", "modified", "deleted")
	checkTAWarning(c, m, c.str(m, "sessionState", "completed", "interrupted"))
	c.boolean(m, "binary")
	for _, side := range []string{"before", "after"} {
		s := c.obj(m, side)
		exists := c.boolean(s, "exists")
		avail := c.boolean(s, "contentAvailable")
		reason := c.strOrNull(s, "unavailableReason", "binary", "too-large", "unavailable")
		content := c.strOrNull(s, "content")
		if avail != (content != nil) || avail == (reason != nil) && exists {
			c.fail(side, "contentAvailable %v with content %v and unavailableReason %v", avail, content, reason)
		}
		if (side == "before" && change == "created" || side == "after" && change == "deleted") == exists {
			c.fail(side+".exists", "%v for a %s path", exists, change)
		}
	}
	return m
}

// checkTAActions checks an actions document.
func checkTAActions(t *testing.T, doc string) []taDoc {
	t.Helper()
	c := taCheck{t, "actions"}
	m := parseTA(t, "actions", doc)
	list := c.list(m, "actions")
	for _, a := range list {
		c.str(a, "id")
		if ts := c.str(a, "timestamp"); !isoTime.MatchString(ts) {
			c.fail("timestamp", "%q is not ISO 8601", ts)
		}
		c.str(a, "command")
		c.strings(a, "args")
		c.strOrNull(a, "cwd")
		c.str(a, "category")
		c.str(a, "risk", "low", "medium", "high", "critical")
		c.boolean(a, "reversible")
		c.str(a, "status", "observed", "allowed", "denied", "completed", "failed")
		if _, ok := a["exitCode"]; ok {
			c.num(a, "exitCode")
		}
	}
	sum := c.obj(m, "summary")
	if n := c.num(sum, "total"); n != float64(len(list)) {
		c.fail("summary.total", "%v for %d actions", n, len(list))
	}
	for _, k := range []string{"highRisk", "critical", "denied"} {
		c.num(sum, k)
	}
	return list
}

// TestTimeAgent02 runs every call TimeAgent 0.2's VS Code extension makes
// and checks each answer against its contract: --version, status through a
// session's life, diff, diff-file of every kind of change, actions, and
// undo --yes.
func TestTimeAgent02(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			out := e.ok("--version").Stdout
			v := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
			if v == nil || strings.HasPrefix(out, "timeagent") || strings.Count(out, "\n") != 1 {
				t.Fatalf("--version: %q, want the bare version on one line", out)
			}
			major, _ := strconv.Atoi(v[1])
			minor, _ := strconv.Atoi(v[2])
			if major == 0 && minor < 3 {
				t.Fatalf("--version %q, want at least 0.3.0", out)
			}
			if long := e.ok("version").Stdout; !strings.HasPrefix(long, "timeagent "+strings.TrimSpace(out)+" ") {
				t.Fatalf("version says %q, --version %q", long, out)
			}

			e.write("mod.txt", "line1\nline2\n", 0o644)
			e.write("del.txt", "deleted\n", 0o644)
			e.write("bin.dat", "\x00\x01binary\x00", 0o644)
			e.write("tc", "was a file\n", 0o644)
			s := checkTAStatus(t, e.ok("status", "--json").Stdout)
			if s["available"] != false || s["state"] != "none" || s["agent"] != nil || s["undoAvailable"] != false {
				t.Fatalf("status before any session: %v", s)
			}
			e.sh(mode, `set -e
"$TA" status --json > "$SCRATCH/status-active.json"
printf 'line1\nchanged\n' > mod.txt
rm del.txt
printf 'new\n' > new.txt
printf '\000\002\003other' > bin.dat
head -c 1200000 /dev/zero | tr '\000' 'a' > large.txt
rm tc && mkdir tc
go version > /dev/null`)
			s = checkTAStatus(t, e.readScratch("status-active.json"))
			if s["available"] != true || s["state"] != "active" || s["agent"] != "sh" || s["command"] != "sh" {
				t.Fatalf("status during the session: %v", s)
			}
			r := e.ok("status", "--json")
			s = checkTAStatus(t, r.Stdout)
			if s["state"] != "completed" || s["undoAvailable"] != true || s["recoveryCheckpointAvailable"] != false ||
				s["durationMs"] == nil || s["args"].([]any)[0] != "-c" {
				t.Fatalf("status after the session: %v", s)
			}
			m := parseTA(t, "status", r.Stdout)
			if ch := m["changes"].(map[string]any); ch["created"] != 2.0 || ch["modified"] != 3.0 || ch["deleted"] != 1.0 {
				t.Fatalf("status changes: %v", ch)
			}
			if ea := m["externalActions"].(map[string]any); ea["total"] != 1.0 || ea["denied"] != 0.0 {
				t.Fatalf("status externalActions: %v", ea)
			}

			files := checkTADiff(t, e.ok("diff", "--json").Stdout)
			byPath := map[string]taDoc{}
			for _, f := range files {
				byPath[f["path"].(string)] = f
			}
			if len(files) != 6 || byPath["bin.dat"]["binary"] != true || byPath["mod.txt"]["binary"] != false ||
				byPath["tc"]["changeType"] != "modified" || byPath["del.txt"]["changeType"] != "deleted" {
				t.Fatalf("diff files: %v", files)
			}
			for _, tc := range []struct {
				path          string
				before, after string // content, or a reason in <>
			}{
				{"mod.txt", "line1\nline2\n", "line1\nchanged\n"},
				{"new.txt", "<absent>", "new\n"},
				{"del.txt", "deleted\n", "<absent>"},
				{"bin.dat", "<binary>", "<binary>"},
				{"large.txt", "<absent>", "<too-large>"},
				{"tc", "was a file\n", "<unavailable>"},
			} {
				d := checkTADiffFile(t, e.ok("diff-file", tc.path, "--json").Stdout)
				for side, want := range map[string]string{"before": tc.before, "after": tc.after} {
					x := d[side].(map[string]any)
					got := "<absent>"
					switch {
					case x["exists"] == false:
					case x["contentAvailable"] == true:
						got = x["content"].(string)
					default:
						got = "<" + x["unavailableReason"].(string) + ">"
					}
					if got != want {
						t.Fatalf("diff-file %s %s: %q, want %q", tc.path, side, got, want)
					}
				}
			}
			acts := checkTAActions(t, e.ok("actions", "--json").Stdout)
			if len(acts) != 1 || acts[0]["command"] != "go" || acts[0]["args"].([]any)[0] != "version" ||
				acts[0]["status"] != "completed" || acts[0]["risk"] != "low" {
				t.Fatalf("actions: %v", acts)
			}
			e.ok("undo", "--yes")
			s = checkTAStatus(t, e.ok("status", "--json").Stdout)
			if s["undoAvailable"] != false {
				t.Fatalf("status after undo: %v", s)
			}
		})
	}
}
