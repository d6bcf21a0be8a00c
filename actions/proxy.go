package actions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

// Environment variables a session sets for its child and the proxies read.
const (
	// EnvProxyDir is the session's proxy directory (also first on PATH).
	EnvProxyDir = "TIMEAGENT_PROXY_DIR"
	// EnvActionsDir is the directory the proxies write their records into.
	EnvActionsDir = "TIMEAGENT_ACTIONS_DIR"
	// EnvSession is the session id, recorded in every action.
	EnvSession = "TIMEAGENT_SESSION"
	// EnvAllowHighRisk, set to "1", allows high and critical actions without asking.
	EnvAllowHighRisk = "TIMEAGENT_ALLOW_HIGH_RISK"
	// EnvRoot is the session root (sqlite3 files inside it are not external).
	EnvRoot = "TIMEAGENT_ROOT"
	// EnvDepth counts proxies nested inside proxies; the proxy sets it for the tool it runs.
	EnvDepth = "TIMEAGENT_PROXY_DEPTH"
)

// Exit codes of the proxy itself.
const (
	// ExitRefused: the action was denied, or the tool could not be executed.
	ExitRefused = 126
	// ExitNotFound: no real tool outside the proxy directory.
	ExitNotFound = 127
)

// MaxDepth is how deep proxies may nest (a proxied tool calling a proxied
// tool) before the proxy refuses, assuming a loop.
const MaxDepth = 8

// Env is what a session tells its proxies.
type Env struct {
	// ProxyDir is the directory Install filled; it goes first on PATH.
	ProxyDir string
	// ActionsDir receives one record file per call (see ReadLog).
	ActionsDir string
	// Root is the session root.
	Root string
	// Session is the session id written into every record.
	Session uint64
	// AllowHighRisk runs high and critical actions without asking.
	AllowHighRisk bool
}

// Environ returns environ with the session's variables set (replacing any
// inherited ones, TIMEAGENT_ALLOW_HIGH_RISK removed unless allowed, the
// nesting depth reset) and ProxyDir prepended to PATH.
func (e Env) Environ(environ []string) []string {
	set := map[string]string{
		EnvProxyDir:   e.ProxyDir,
		EnvActionsDir: e.ActionsDir,
		EnvRoot:       e.Root,
		EnvSession:    strconv.FormatUint(e.Session, 10),
	}
	if e.AllowHighRisk {
		set[EnvAllowHighRisk] = "1"
	}
	drop := []string{EnvProxyDir, EnvActionsDir, EnvRoot, EnvSession, EnvAllowHighRisk, EnvDepth}
	var out []string
	path := ""
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if envKeyIs(k, "PATH") {
			path = v
			continue
		}
		skip := false
		for _, d := range drop {
			if envKeyIs(k, d) {
				skip = true
			}
		}
		if !skip {
			out = append(out, kv)
		}
	}
	if path == "" {
		path = e.ProxyDir
	} else {
		path = e.ProxyDir + string(os.PathListSeparator) + path
	}
	out = append(out, "PATH="+path)
	for _, k := range drop {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func envKeyIs(k, name string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(k, name)
	}
	return k == name
}

// setEnv returns environ with key set to value.
func setEnv(environ []string, key, value string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); envKeyIs(k, key) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}

// toolName returns the tool name of an argv[0]: its base name, without an
// .exe/.cmd extension on Windows.
func toolName(argv0 string) string {
	name := filepath.Base(argv0)
	if runtime.GOOS == "windows" {
		ext := strings.ToLower(filepath.Ext(name))
		if ext == ".exe" || ext == ".cmd" || ext == ".bat" || ext == ".com" {
			name = name[:len(name)-len(ext)]
		}
	}
	return name
}

// IsProxyInvocation reports whether a process started as argv0 is a proxy:
// its base name is a proxied tool, TIMEAGENT_PROXY_DIR is set, and argv0 (a
// path, or a bare name the shell found on PATH) resolves into that directory.
// It returns the tool's name.
func IsProxyInvocation(argv0 string) (tool string, ok bool) {
	tool = toolName(argv0)
	if !IsTool(tool) {
		return "", false
	}
	dir := os.Getenv(EnvProxyDir)
	if dir == "" {
		return "", false
	}
	if strings.ContainsAny(argv0, `/`+string(filepath.Separator)) {
		abs, err := filepath.Abs(argv0)
		if err != nil || !sameDir(filepath.Dir(abs), dir) {
			return "", false
		}
		return tool, true
	}
	for _, name := range proxyFileNames(tool) {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return tool, true
		}
	}
	return "", false
}

// sameDir reports whether two directory paths name the same directory after
// making them absolute and resolving symlinks.
func sameDir(a, b string) bool {
	ra, err1 := canonical(a)
	rb, err2 := canonical(b)
	if err1 != nil || err2 != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return strings.EqualFold(ra, rb)
	}
	return ra == rb
}

func canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// proxyStderr is where the proxy writes its own messages.
var proxyStderr io.Writer = os.Stderr

// RunProxy runs one proxied call of tool with args (argv without argv[0]),
// configured by the environment a session set (Env.Environ), and returns the
// exit code the proxy must exit with: the tool's own (128+N when a signal N
// killed it), ExitRefused when denied, ExitNotFound when there is no real
// tool. The call is recorded in TIMEAGENT_ACTIONS_DIR before the tool runs
// and again, with exit code and duration, when it ends.
func RunProxy(tool string, args []string) int {
	depth, _ := strconv.Atoi(os.Getenv(EnvDepth))
	if depth >= MaxDepth {
		fmt.Fprintf(proxyStderr, "timeagent: %s: proxies nested %d deep, refusing (does a wrapper on PATH call %s by name again?)\n", tool, depth, tool)
		return ExitRefused
	}
	childEnv := setEnv(os.Environ(), EnvDepth, strconv.Itoa(depth+1))
	cwd, _ := os.Getwd()
	category, risk := ClassifyAt(tool, args, cwd, os.Getenv(EnvRoot))
	argv := append([]string{tool}, args...)
	proxyDir := os.Getenv(EnvProxyDir)

	if risk == RiskNone {
		real, err := findReal(tool, proxyDir, os.Getenv("PATH"), cwd)
		if err != nil {
			fmt.Fprintf(proxyStderr, "timeagent: %s: command not found (outside the proxy)\n", tool)
			return ExitNotFound
		}
		return passThrough(real, argv, childEnv)
	}

	rec := &recorder{dir: os.Getenv(EnvActionsDir)}
	session, _ := strconv.ParseUint(os.Getenv(EnvSession), 10, 64)
	a := journal.Action{
		Session:  session,
		Time:     time.Now().UTC(),
		Tool:     tool,
		Argv:     argv,
		Cwd:      cwd,
		Category: category,
		Risk:     risk,
		Decision: DecisionAllowed,
		ExitCode: ExitUnknown,
	}
	rec.name = recordName(a, os.Getpid())

	if RiskAtLeast(risk, RiskHigh) && os.Getenv(EnvAllowHighRisk) != "1" {
		cmdline, _ := DisplayCommand(argv)
		prompt := fmt.Sprintf("timeagent: %s action (%s risk): %s — run it? [y/N] ", category, risk, cmdline)
		unlock := lockPrompts(rec.dir)
		yes, err := askTerminal(prompt)
		unlock()
		switch {
		case err != nil:
			a.Decision, a.ExitCode = DecisionDenied, ExitRefused
			rec.write(a)
			fmt.Fprintf(proxyStderr, "timeagent: refused %s action (%s risk) with no terminal to ask (%v): %s; to allow it, start the session with `timeagent run --allow-high-risk ...` or run it yourself outside the session\n", category, risk, err, cmdline)
			return ExitRefused
		case !yes:
			a.Decision, a.ExitCode = DecisionDenied, ExitRefused
			rec.write(a)
			fmt.Fprintf(proxyStderr, "timeagent: denied at the terminal: %s\n", cmdline)
			return ExitRefused
		}
		a.Decision = DecisionApproved
	}

	real, err := findReal(tool, proxyDir, os.Getenv("PATH"), cwd)
	if err != nil {
		a.ExitCode = ExitNotFound
		rec.write(a)
		fmt.Fprintf(proxyStderr, "timeagent: %s: command not found (outside the proxy)\n", tool)
		return ExitNotFound
	}
	a.Executable = real
	rec.write(a) // the started record: survives a kill of the proxy

	start := time.Now()
	code, err := runChild(real, argv, childEnv)
	if err != nil {
		fmt.Fprintf(proxyStderr, "timeagent: %s: %v\n", tool, err)
	}
	a.ExitCode = code
	a.DurationMs = time.Since(start).Milliseconds()
	rec.write(a)
	return code
}

// recorder writes one call's record, warning once on stderr when it cannot.
type recorder struct {
	dir, name string
	warned    bool
}

func (r *recorder) write(a journal.Action) {
	err := errors.New("TIMEAGENT_ACTIONS_DIR is not set")
	if r.dir != "" {
		err = writeRecord(r.dir, r.name, a)
	}
	if err != nil && !r.warned {
		r.warned = true
		fmt.Fprintf(proxyStderr, "timeagent: %s: action not recorded: %v\n", a.Tool, err)
	}
}

// runChild runs the real tool with the proxy's standard streams, forwarding
// termination signals, and returns its exit status.
func runChild(real string, argv, env []string) (int, error) {
	cmd := &exec.Cmd{
		Path:   real,
		Args:   argv,
		Env:    env,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}
	if err := cmd.Start(); err != nil {
		return ExitRefused, fmt.Errorf("start %s: %w", real, err)
	}
	stop := forwardSignals(cmd.Process)
	err := cmd.Wait()
	stop()
	if cmd.ProcessState != nil {
		return exitStatus(cmd.ProcessState), nil
	}
	return ExitRefused, fmt.Errorf("wait %s: %w", real, err)
}

// errNotFound is returned by findReal when no real tool is on PATH.
var errNotFound = errors.New("not found outside the proxy directory")

// findReal searches path (a PATH value) in order for tool, skipping every
// entry that is the proxy directory (also through symlinks or relative
// entries, resolved against cwd), repeated entries, and candidates that are
// the running executable (the same file, through symlinks or hard links) or
// symlinks into the proxy directory.
func findReal(tool, proxyDir, path, cwd string) (string, error) {
	proxyCanon, _ := canonical(proxyDir)
	self, _ := os.Executable()
	selfInfo, _ := os.Stat(self)
	seen := map[string]bool{}
	for _, entry := range filepath.SplitList(path) {
		if entry == "" {
			entry = "."
		}
		if !filepath.IsAbs(entry) {
			entry = filepath.Join(cwd, entry)
		}
		canon, err := filepath.EvalSymlinks(entry)
		if err != nil {
			continue
		}
		key := canon
		if runtime.GOOS == "windows" {
			key = strings.ToLower(canon)
		}
		if seen[key] || proxyCanon != "" && sameCanon(canon, proxyCanon) {
			continue
		}
		seen[key] = true
		for _, name := range executableNames(tool) {
			cand := filepath.Join(entry, name)
			if !isExecutable(cand) {
				continue
			}
			if fi, err := os.Stat(cand); err == nil && selfInfo != nil && os.SameFile(fi, selfInfo) {
				continue // timeagent itself, through a symlink or a hard link
			}
			if linksInto(cand, proxyCanon) {
				continue
			}
			return cand, nil
		}
	}
	return "", fmt.Errorf("find %s: %w", tool, errNotFound)
}

func sameCanon(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// linksInto reports whether following p's symlinks, hop by hop, passes
// through the proxy directory.
func linksInto(p, proxyCanon string) bool {
	if proxyCanon == "" {
		return false
	}
	for range 40 {
		if dir, err := canonical(filepath.Dir(p)); err == nil && sameCanon(dir, proxyCanon) {
			return true
		}
		target, err := os.Readlink(p)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return true // a symlink loop: never run it
}
