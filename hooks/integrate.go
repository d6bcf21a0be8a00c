package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// MCPServerName is the name timeagent's MCP server is registered under.
const MCPServerName = "timeagent"

// Options say what Integrate installs or removes, and where.
type Options struct {
	Agent Agent
	// User installs into the user's settings (else the project's).
	User bool
	// Project is the project directory (the root) for project scope.
	Project string
	// Home is the user's home directory; CodexHome is $CODEX_HOME (empty:
	// Home/.codex).
	Home, CodexHome string
	// Binary is timeagent's absolute path, which the hooks call (Codex runs
	// hooks in a login shell that resets PATH).
	Binary string
	// Remove takes out exactly the entries Integrate adds.
	Remove bool
}

// FileChange is what Integrate did (or would do) to one settings file.
type FileChange struct {
	Path string
	// Added, Updated and Removed name the entries written, rewritten (an
	// older timeagent path) and taken out; Kept those already in place.
	Added, Updated, Removed, Kept []string
	// Deleted is set when the file held nothing else and was removed.
	Deleted bool
	before  []byte
	after   []byte
	exists  bool
}

// Changed reports whether the file's content changes.
func (f FileChange) Changed() bool { return f.Deleted || !bytes.Equal(f.before, f.after) }

// Result is what Integrate did.
type Result struct {
	Files []FileChange
	// Notes are what the user must know (Codex's trust rule).
	Notes []string
}

// Changed reports whether any file changed.
func (r Result) Changed() bool {
	for _, f := range r.Files {
		if f.Changed() {
			return true
		}
	}
	return false
}

// ErrMalformed marks a settings file Integrate refuses to touch.
var ErrMalformed = errors.New("cannot read the existing settings")

// Files returns the settings files Integrate edits for o: the hooks file,
// then the MCP file (the same file for Gemini).
func (o Options) Files() (hooksFile, mcpFile string) {
	codexHome := o.CodexHome
	if codexHome == "" {
		codexHome = filepath.Join(o.Home, ".codex")
	}
	switch {
	case o.Agent == Claude && o.User:
		return filepath.Join(o.Home, ".claude", "settings.json"), filepath.Join(o.Home, ".claude.json")
	case o.Agent == Claude:
		return filepath.Join(o.Project, ".claude", "settings.json"), filepath.Join(o.Project, ".mcp.json")
	case o.Agent == Codex && o.User:
		return filepath.Join(codexHome, "hooks.json"), filepath.Join(codexHome, "config.toml")
	case o.Agent == Codex:
		return filepath.Join(o.Project, ".codex", "hooks.json"), filepath.Join(o.Project, ".codex", "config.toml")
	case o.Agent == Gemini && o.User:
		f := filepath.Join(o.Home, ".gemini", "settings.json")
		return f, f
	default:
		f := filepath.Join(o.Project, ".gemini", "settings.json")
		return f, f
	}
}

// HookCommand is the command line a hook of agent for event runs.
func HookCommand(binary string, agent Agent, event string) string {
	return shellQuote(binary) + " hook " + string(agent) + " " + event
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isOurs reports whether a hook's command line is a timeagent hook of
// agent for event (whatever path it calls timeagent by).
func isOurs(command string, agent Agent, event string) bool {
	suffix := " hook " + string(agent) + " " + event
	if !strings.HasSuffix(command, suffix) {
		return false
	}
	return isTimeagent(strings.TrimSuffix(command, suffix))
}

// isTimeagent reports whether a (possibly single-quoted) program path
// names a timeagent executable.
func isTimeagent(prog string) bool {
	prog = strings.TrimSpace(prog)
	if len(prog) >= 2 && prog[0] == '\'' && prog[len(prog)-1] == '\'' {
		prog = strings.ReplaceAll(prog[1:len(prog)-1], `'\''`, "'")
	}
	base := filepath.Base(filepath.ToSlash(prog))
	if i := strings.LastIndexAny(prog, `/\`); i >= 0 {
		base = prog[i+1:]
	}
	return base == "timeagent" || base == "timeagent.exe"
}

// Integrate installs (or with Remove takes out) timeagent's hooks and MCP
// server in o.Agent's settings, merging into the files that exist: the
// user's own entries are kept, a second run changes nothing, Remove takes
// out exactly what was added. A file that cannot be parsed is refused
// (ErrMalformed) and nothing is written. It writes the files and reports.
func Integrate(o Options) (Result, error) {
	res, err := Plan(o)
	if err != nil {
		return res, err
	}
	for _, f := range res.Files {
		if !f.Changed() {
			continue
		}
		if f.Deleted {
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("remove %s: %w", f.Path, err)
			}
			// Its directory (.claude, .codex, .gemini) goes too when
			// nothing else is in it.
			if dir := filepath.Dir(f.Path); dir != o.Home && dir != o.Project {
				_ = os.Remove(dir)
			}
			continue
		}
		if err := writeAtomic(f.Path, f.after); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Plan is Integrate without writing.
func Plan(o Options) (Result, error) {
	var res Result
	if !filepath.IsAbs(o.Binary) {
		return res, fmt.Errorf("the hooks must call timeagent by an absolute path, not %q", o.Binary)
	}
	if _, err := ParseAgent(string(o.Agent)); err != nil {
		return res, err
	}
	if o.User && o.Home == "" || !o.User && o.Project == "" {
		return res, errors.New("integrate: no directory to install into")
	}
	hf, mf := o.Files()
	hc, err := loadFile(hf)
	if err != nil {
		return res, err
	}
	if err := mergeHooksFile(&hc, o); err != nil {
		return res, err
	}
	res.Files = append(res.Files, hc)
	if mf == hf {
		// Gemini: one file holds both.
		hc2 := &res.Files[0]
		if err := mergeMCPJSON(hc2, o, hc2.after); err != nil {
			return res, err
		}
	} else {
		mc, err := loadFile(mf)
		if err != nil {
			return res, err
		}
		if o.Agent == Codex {
			err = mergeCodexTOML(&mc, o)
		} else {
			err = mergeMCPJSON(&mc, o, mc.before)
		}
		if err != nil {
			return res, err
		}
		res.Files = append(res.Files, mc)
	}
	if o.Agent == Codex && !o.Remove {
		res.Notes = append(res.Notes,
			"Codex runs only hooks it trusts and skips the others silently: approve them once in the Codex TUI with /hooks "+
				"(or run `codex exec --dangerously-bypass-hook-trust`).")
		if !o.User {
			res.Notes = append(res.Notes, fmt.Sprintf(
				"Codex reads a project's .codex/ (hooks and MCP servers) only in a trusted project: add [projects.%q] trust_level = \"trusted\" "+
					"to ~/.codex/config.toml (or answer Codex's trust prompt), or install with --user instead.", o.Project))
		}
	}
	return res, nil
}

func loadFile(p string) (FileChange, error) {
	f := FileChange{Path: p}
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		f.exists = true
		f.before = b
	case errors.Is(err, fs.ErrNotExist):
	default:
		return f, fmt.Errorf("read %s: %w", p, err)
	}
	f.after = f.before
	return f, nil
}

// hookEntry is the hook group timeagent adds for one event.
func hookEntry(o Options, event string) *object {
	h := newObject()
	if o.Agent == Gemini {
		h.set("name", "timeagent-"+strings.ToLower(event))
	}
	h.set("type", "command")
	h.set("command", HookCommand(o.Binary, o.Agent, event))
	// A hook may wait for the first scan of a big tree (the capture's
	// baseline), the pre-tool hook for a capture still running.
	timeout := 120
	if o.Agent == Gemini {
		h.set("timeout", timeout*1000) // milliseconds
	} else {
		h.set("timeout", timeout) // seconds
	}
	// Every tool: the pre-tool hook classifies shell commands, and before
	// any tool (a write, an edit) it waits for a prompt's capture that
	// still runs.
	g := newObject()
	g.set("matcher", hookMatcher)
	g.set("hooks", []any{h})
	return g
}

// hookMatcher is the matcher of timeagent's hook groups (the form verified
// with each agent, agent-clients.md).
const hookMatcher = "*"

// mergeHooksFile adds (or removes) timeagent's hooks in f, a JSON file
// with a "hooks" object of event arrays of matcher groups.
func mergeHooksFile(f *FileChange, o Options) error {
	root, err := parseObject(f.after)
	if err != nil {
		return fmt.Errorf("%s: %w: %v; fix or move it, then run again (nothing was changed)", f.Path, ErrMalformed, err)
	}
	hv, ok := root.get("hooks")
	var hooksObj *object
	if ok {
		if hooksObj, ok = hv.(*object); !ok {
			return fmt.Errorf("%s: %w: \"hooks\" is not an object; fix it, then run again (nothing was changed)", f.Path, ErrMalformed)
		}
	} else {
		hooksObj = newObject()
	}
	for _, event := range Events[o.Agent] {
		name := "hooks." + event
		av, has := hooksObj.get(event)
		var groups []any
		if has {
			if groups, ok = av.([]any); !ok {
				return fmt.Errorf("%s: %w: %q is not an array; fix it, then run again (nothing was changed)", f.Path, ErrMalformed, name)
			}
		}
		want := HookCommand(o.Binary, o.Agent, event)
		found, exact := false, false
		var kept []any
		for _, gv := range groups {
			g, ok := gv.(*object)
			if !ok {
				kept = append(kept, gv)
				continue
			}
			hl, _ := g.get("hooks")
			list, _ := hl.([]any)
			var rest []any
			mine := false
			for _, hv := range list {
				h, ok := hv.(*object)
				cmd := ""
				if ok {
					c, _ := h.get("command")
					cmd, _ = c.(string)
				}
				if ok && isOurs(cmd, o.Agent, event) {
					mine = true
					found = true
					if o.Remove {
						continue
					}
					if cmd == want {
						exact = true
					} else {
						h.set("command", want)
					}
				}
				rest = append(rest, hv)
			}
			if mine && o.Remove {
				if len(rest) == 0 {
					continue // the group was ours alone
				}
				g.set("hooks", rest)
			}
			if mine && !o.Remove && len(rest) == 1 {
				// A group of ours alone from an older install (the
				// pre-tool hook matched the shell tool only).
				if m, _ := g.get("matcher"); m != hookMatcher {
					g.set("matcher", hookMatcher)
					exact = false
				}
			}
			kept = append(kept, gv)
		}
		switch {
		case o.Remove && found:
			f.Removed = append(f.Removed, name)
		case o.Remove:
		case exact:
			f.Kept = append(f.Kept, name)
		case found:
			f.Updated = append(f.Updated, name)
		default:
			kept = append(kept, hookEntry(o, event))
			f.Added = append(f.Added, name)
		}
		if len(kept) == 0 {
			hooksObj.del(event)
		} else {
			hooksObj.set(event, kept)
		}
	}
	if len(hooksObj.keys) == 0 {
		root.del("hooks")
	} else {
		root.set("hooks", hooksObj)
	}
	finishJSON(f, root)
	return nil
}

// finishJSON sets f's new content from root: unchanged bytes when nothing
// was added or taken out, deletion when a removal left an empty object.
func finishJSON(f *FileChange, root *object) {
	if len(f.Added)+len(f.Updated)+len(f.Removed) == 0 {
		return
	}
	f.Deleted = false
	if len(f.Added)+len(f.Updated) == 0 && len(root.keys) == 0 && f.exists {
		f.Deleted = true // a removal left nothing
		f.after = nil
		return
	}
	f.after = encodeObject(root)
}

// mcpEntry is the MCP server entry timeagent adds (JSON forms).
func mcpEntry(o Options) *object {
	e := newObject()
	if o.Agent == Claude {
		e.set("type", "stdio")
	}
	e.set("command", o.Binary)
	e.set("args", []any{"mcp"})
	return e
}

// mergeMCPJSON adds (or removes) mcpServers.timeagent in a JSON file whose
// current content is data.
func mergeMCPJSON(f *FileChange, o Options, data []byte) error {
	root, err := parseObject(data)
	if err != nil {
		return fmt.Errorf("%s: %w: %v; fix or move it, then run again (nothing was changed)", f.Path, ErrMalformed, err)
	}
	name := "mcpServers." + MCPServerName
	sv, ok := root.get("mcpServers")
	var servers *object
	if ok {
		if servers, ok = sv.(*object); !ok {
			return fmt.Errorf("%s: %w: \"mcpServers\" is not an object; fix it, then run again (nothing was changed)", f.Path, ErrMalformed)
		}
	} else {
		servers = newObject()
	}
	cur, has := servers.get(MCPServerName)
	if has {
		co, ok := cur.(*object)
		cmd := ""
		if ok {
			c, _ := co.get("command")
			cmd, _ = c.(string)
		}
		if !isTimeagent(cmd) {
			return fmt.Errorf("%s: an MCP server named %q is there already and does not run timeagent (%q): rename or remove it, then run again (nothing was changed)",
				f.Path, MCPServerName, cmd)
		}
		switch {
		case o.Remove:
			servers.del(MCPServerName)
			f.Removed = append(f.Removed, name)
		case string(encodeObject(co)) == string(encodeObject(mcpEntry(o))):
			f.Kept = append(f.Kept, name)
		default:
			servers.set(MCPServerName, mcpEntry(o))
			f.Updated = append(f.Updated, name)
		}
	} else if !o.Remove {
		servers.set(MCPServerName, mcpEntry(o))
		f.Added = append(f.Added, name)
	}
	if len(servers.keys) == 0 {
		root.del("mcpServers")
	} else {
		root.set("mcpServers", servers)
	}
	finishJSON(f, root)
	return nil
}

// The lines around the block timeagent writes into Codex's config.toml.
const (
	tomlBegin = "# timeagent integrate: begin (`timeagent integrate codex --remove` takes this out)"
	tomlEnd   = "# timeagent integrate: end"
)

// mergeCodexTOML adds (or removes) [mcp_servers.timeagent] in Codex's
// config.toml, as a block between marker comments appended at the end (the
// rest of the file is kept byte for byte).
func mergeCodexTOML(f *FileChange, o Options) error {
	name := "mcp_servers." + MCPServerName
	var doc map[string]any
	if _, err := toml.Decode(string(f.before), &doc); err != nil {
		return fmt.Errorf("%s: %w: %v; fix or move it, then run again (nothing was changed)", f.Path, ErrMalformed, err)
	}
	text := string(f.before)
	start := strings.Index(text, tomlBegin+"\n")
	end := -1
	if start >= 0 {
		if e := strings.Index(text[start:], tomlEnd+"\n"); e >= 0 {
			end = start + e + len(tomlEnd) + 1
		}
	}
	block := fmt.Sprintf("%s\n[mcp_servers.%s]\ncommand = %s\nargs = [\"mcp\"]\n%s\n", tomlBegin, MCPServerName, tomlString(o.Binary), tomlEnd)
	servers, _ := doc["mcp_servers"].(map[string]any)
	_, has := servers[MCPServerName]
	switch {
	case start >= 0 && end > start:
		switch {
		case o.Remove:
			rest := text[:start] + text[end:]
			// The blank line written before the block goes with it.
			if strings.HasSuffix(text[:start], "\n\n") {
				rest = text[:start-1] + text[end:]
			}
			f.after = []byte(rest)
			f.Removed = append(f.Removed, name)
			if strings.TrimSpace(rest) == "" {
				f.Deleted, f.after = true, nil
			}
		case text[start:end] == block:
			f.Kept = append(f.Kept, name)
		default:
			f.after = []byte(text[:start] + block + text[end:])
			f.Updated = append(f.Updated, name)
		}
	case has:
		if o.Remove {
			return nil // not ours: left alone
		}
		return fmt.Errorf("%s: [%s] is there already and was not written by timeagent integrate: remove it, then run again (nothing was changed)", f.Path, name)
	case o.Remove:
		return nil
	default:
		sep := ""
		if text != "" && !strings.HasSuffix(text, "\n") {
			sep = "\n"
		}
		if text != "" {
			sep += "\n"
		}
		f.after = []byte(text + sep + block)
		f.Added = append(f.Added, name)
	}
	if !f.Deleted {
		if _, err := toml.Decode(string(f.after), &doc); err != nil {
			return fmt.Errorf("%s: adding [%s] would make it invalid (%v): is mcp_servers an inline table? Add the server by hand (nothing was changed)", f.Path, name, err)
		}
	}
	return nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeAtomic replaces p with data (a temporary file renamed over it, the
// existing file's mode kept), creating its directory.
func writeAtomic(p string, data []byte) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(p); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".timeagent-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, werr := tmp.Write(data)
	cherr := tmp.Chmod(mode)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, cherr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
