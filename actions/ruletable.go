package actions

import (
	"path/filepath"
	"regexp"
	"strings"
)

// The rule table. RuleDoc renders it for the README; keep notes in step
// with the adjust functions.

var (
	nodePkg = toolRules{
		tools:      []string{"npm", "pnpm", "yarn"},
		category:   CategoryPackage,
		valueFlags: []string{"--prefix", "-C", "--dir", "--registry", "--userconfig", "--cache", "--loglevel", "-w", "--workspace", "--filter", "-F", "--cwd"},
		rules: []rule{
			{"ls", RiskLow}, {"list", RiskLow}, {"view", RiskLow}, {"info", RiskLow}, {"show", RiskLow},
			{"outdated", RiskLow}, {"search", RiskLow}, {"whoami", RiskLow}, {"why", RiskLow}, {"explain", RiskLow},
			{"help", RiskLow}, {"version", RiskLow}, {"ping", RiskLow}, {"config get", RiskLow}, {"config list", RiskLow},
			{"publish", RiskHigh}, {"unpublish", RiskHigh}, {"deprecate", RiskHigh}, {"dist-tag", RiskHigh},
			{"owner", RiskHigh}, {"access", RiskHigh}, {"team", RiskHigh}, {"token", RiskHigh}, {"npm publish", RiskHigh},
		},
		bare: RiskMedium, // bare yarn and pnpm install
		dflt: RiskMedium,
	}
	pythonPkg = toolRules{
		tools:      []string{"pip", "pip3", "uv", "poetry"},
		category:   CategoryPackage,
		valueFlags: []string{"--python", "--log", "--proxy", "--cache-dir", "--directory", "--project", "-C", "--config-file"},
		rules: []rule{
			{"list", RiskLow}, {"show", RiskLow}, {"freeze", RiskLow}, {"check", RiskLow}, {"help", RiskLow},
			{"version", RiskLow}, {"tree", RiskLow}, {"pip list", RiskLow}, {"pip show", RiskLow}, {"pip freeze", RiskLow},
			{"pip check", RiskLow}, {"pip tree", RiskLow}, {"config list", RiskLow}, {"env info", RiskLow},
			{"publish", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
	}
	cargo = toolRules{
		tools:      []string{"cargo"},
		category:   CategoryPackage,
		valueFlags: []string{"-C", "--config", "-Z", "--color"},
		rules: []rule{
			{"tree", RiskLow}, {"metadata", RiskLow}, {"search", RiskLow}, {"version", RiskLow}, {"help", RiskLow},
			{"locate-project", RiskLow}, {"verify-project", RiskLow}, {"pkgid", RiskLow},
			{"publish", RiskHigh}, {"yank", RiskHigh}, {"owner", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		note: "a leading `+toolchain` is skipped",
	}
	ruby = toolRules{
		tools:      []string{"gem", "bundle"},
		category:   CategoryPackage,
		valueFlags: []string{"--config-file", "--gemfile"},
		rules: []rule{
			{"list", RiskLow}, {"search", RiskLow}, {"info", RiskLow}, {"query", RiskLow}, {"env", RiskLow},
			{"which", RiskLow}, {"contents", RiskLow}, {"specification", RiskLow}, {"help", RiskLow},
			{"show", RiskLow}, {"outdated", RiskLow}, {"check", RiskLow}, {"version", RiskLow},
			{"push", RiskHigh}, {"yank", RiskHigh}, {"owner", RiskHigh},
		},
		bare: RiskMedium, // bare bundle installs
		dflt: RiskMedium,
	}
	composer = toolRules{
		tools:      []string{"composer"},
		category:   CategoryPackage,
		valueFlags: []string{"-d", "--working-dir"},
		rules: []rule{
			{"show", RiskLow}, {"info", RiskLow}, {"search", RiskLow}, {"outdated", RiskLow}, {"validate", RiskLow},
			{"licenses", RiskLow}, {"depends", RiskLow}, {"why", RiskLow}, {"why-not", RiskLow},
			{"prohibits", RiskLow}, {"diagnose", RiskLow}, {"help", RiskLow}, {"list", RiskLow},
		},
		bare: RiskLow,
		dflt: RiskMedium,
	}
	goTool = toolRules{
		tools:      []string{"go"},
		category:   CategoryPackage,
		valueFlags: []string{"-C"},
		rules: []rule{
			{"build", RiskLow}, {"test", RiskLow}, {"vet", RiskLow}, {"fmt", RiskLow}, {"run", RiskLow},
			{"list", RiskLow}, {"doc", RiskLow}, {"version", RiskLow}, {"env", RiskLow}, {"help", RiskLow},
			{"tool", RiskLow}, {"generate", RiskLow}, {"mod graph", RiskLow}, {"mod why", RiskLow},
			{"mod verify", RiskLow}, {"mod edit", RiskLow}, {"work", RiskLow}, {"bug", RiskLow},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		adjust: func(r string, c call) string {
			if len(c.words) > 0 && c.words[0] == "env" && hasFlag(c.args, "-w", "-u") {
				return RiskMedium
			}
			return r
		},
		note: "`go env -w`/`-u` medium (changes the user's Go configuration)",
	}
	systemPkg = toolRules{
		tools:      []string{"brew", "apt", "apt-get"},
		category:   CategoryPackage,
		valueFlags: []string{"-o", "-c", "-t"},
		rules: []rule{
			{"list", RiskLow}, {"ls", RiskLow}, {"info", RiskLow}, {"search", RiskLow}, {"outdated", RiskLow},
			{"deps", RiskLow}, {"config", RiskLow}, {"doctor", RiskLow}, {"show", RiskLow}, {"policy", RiskLow},
			{"depends", RiskLow}, {"rdepends", RiskLow}, {"changelog", RiskLow}, {"help", RiskLow},
			{"remove", RiskHigh}, {"purge", RiskHigh}, {"autoremove", RiskHigh}, {"dist-upgrade", RiskHigh},
			{"full-upgrade", RiskHigh}, {"uninstall", RiskHigh}, {"untap", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
	}
	databases = toolRules{
		tools:      []string{"psql", "mysql", "mongosh", "redis-cli"},
		category:   CategoryDatabase,
		valueFlags: []string{"-h", "--host", "-p", "--port", "-U", "--username", "-u", "--user", "-d", "--dbname", "-D", "--database", "-c", "--command", "-e", "--execute", "--eval", "-f", "--file", "-n", "-a", "--tls-cert-file"},
		bare:       RiskMedium,
		dflt:       RiskMedium,
		adjust:     adjustDatabase,
		note:       "high when the command text (`-c`, `--command`, `-e`, `--execute`, `--eval`, redis-cli's command) drops, truncates, deletes, alters or flushes; SQL run from files is not read",
	}
	sqlite = toolRules{
		tools:    []string{"sqlite3"},
		category: CategoryDatabase,
		bare:     RiskMedium,
		dflt:     RiskMedium,
		adjust:   adjustSQLite,
		note:     "only a database file outside the session root counts (medium, high for destructive SQL on the command line); inside the root or in memory it is not an external action: no record",
	}
	terraform = toolRules{
		tools:    []string{"terraform", "tofu"},
		category: CategoryInfrastructure,
		rules: []rule{
			{"plan", RiskLow}, {"show", RiskLow}, {"output", RiskLow}, {"validate", RiskLow}, {"fmt", RiskLow},
			{"version", RiskLow}, {"providers", RiskLow}, {"graph", RiskLow}, {"console", RiskLow}, {"help", RiskLow},
			{"state list", RiskLow}, {"state show", RiskLow}, {"state pull", RiskLow}, {"workspace list", RiskLow},
			{"workspace show", RiskLow}, {"init", RiskMedium}, {"refresh", RiskMedium}, {"workspace select", RiskMedium},
			{"workspace new", RiskMedium}, {"import", RiskHigh}, {"taint", RiskHigh}, {"untaint", RiskHigh},
			{"force-unlock", RiskHigh}, {"state rm", RiskHigh}, {"state mv", RiskHigh}, {"state push", RiskHigh},
			{"state replace-provider", RiskHigh}, {"workspace delete", RiskHigh},
			{"apply", RiskCritical}, {"destroy", RiskCritical},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		note: "global `-chdir=DIR` is skipped",
	}
	pulumi = toolRules{
		tools:      []string{"pulumi"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"-C", "--cwd", "-s", "--stack"},
		rules: []rule{
			{"preview", RiskLow}, {"pre", RiskLow}, {"whoami", RiskLow}, {"version", RiskLow}, {"about", RiskLow},
			{"logs", RiskLow}, {"stack ls", RiskLow}, {"stack output", RiskLow}, {"config get", RiskLow},
			{"help", RiskLow}, {"refresh", RiskMedium}, {"config set", RiskMedium},
			{"stack rm", RiskHigh}, {"state delete", RiskHigh}, {"cancel", RiskHigh}, {"import", RiskHigh},
			{"up", RiskCritical}, {"update", RiskCritical}, {"destroy", RiskCritical},
		},
		bare: RiskLow,
		dflt: RiskMedium,
	}
	kubectl = toolRules{
		tools:      []string{"kubectl", "helm"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"-n", "--namespace", "--context", "--kube-context", "--cluster", "--kubeconfig", "-s", "--server", "--user", "--token", "--as", "--as-group", "--repository-config", "--repository-cache", "--registry-config", "-v"},
		rules: []rule{
			{"get", RiskLow}, {"describe", RiskLow}, {"logs", RiskLow}, {"explain", RiskLow}, {"api-resources", RiskLow},
			{"api-versions", RiskLow}, {"cluster-info", RiskLow}, {"version", RiskLow}, {"top", RiskLow},
			{"diff", RiskLow}, {"events", RiskLow}, {"auth can-i", RiskLow}, {"auth whoami", RiskLow},
			{"config view", RiskLow}, {"config get-contexts", RiskLow}, {"config current-context", RiskLow},
			{"list", RiskLow}, {"ls", RiskLow}, {"status", RiskLow}, {"history", RiskLow}, {"show", RiskLow},
			{"search", RiskLow}, {"template", RiskLow}, {"lint", RiskLow}, {"env", RiskLow}, {"help", RiskLow},
			{"repo list", RiskLow}, {"dependency list", RiskLow},
			{"exec", RiskMedium}, {"cp", RiskMedium}, {"attach", RiskMedium}, {"port-forward", RiskMedium},
			{"proxy", RiskMedium}, {"config use-context", RiskMedium}, {"repo add", RiskMedium},
			{"delete", RiskHigh}, {"apply", RiskHigh}, {"create", RiskHigh}, {"replace", RiskHigh}, {"patch", RiskHigh},
			{"edit", RiskHigh}, {"scale", RiskHigh}, {"autoscale", RiskHigh}, {"rollout", RiskHigh}, {"drain", RiskHigh},
			{"cordon", RiskHigh}, {"uncordon", RiskHigh}, {"taint", RiskHigh}, {"label", RiskHigh}, {"annotate", RiskHigh},
			{"set", RiskHigh}, {"run", RiskHigh}, {"expose", RiskHigh}, {"rollout status", RiskLow},
			{"rollout history", RiskLow}, {"install", RiskHigh}, {"upgrade", RiskHigh}, {"uninstall", RiskHigh},
			{"rollback", RiskHigh}, {"push", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
	}
	containers = toolRules{
		tools:      []string{"docker", "podman"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"--context", "-c", "-H", "--host", "--config", "-l", "--log-level", "--connection", "--url", "-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"},
		rules: []rule{
			{"ps", RiskLow}, {"images", RiskLow}, {"inspect", RiskLow}, {"logs", RiskLow}, {"version", RiskLow},
			{"info", RiskLow}, {"stats", RiskLow}, {"top", RiskLow}, {"port", RiskLow}, {"diff", RiskLow},
			{"history", RiskLow}, {"search", RiskLow}, {"events", RiskLow}, {"help", RiskLow},
			{"* ls", RiskLow}, {"* list", RiskLow}, {"* inspect", RiskLow}, {"context show", RiskLow},
			{"compose ps", RiskLow}, {"compose logs", RiskLow}, {"compose config", RiskLow}, {"compose images", RiskLow},
			{"push", RiskHigh}, {"rm", RiskHigh}, {"rmi", RiskHigh}, {"kill", RiskHigh}, {"* rm", RiskHigh},
			{"* prune", RiskHigh}, {"system prune", RiskHigh}, {"compose down", RiskHigh}, {"compose rm", RiskHigh},
			{"* push", RiskHigh}, {"image push", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		adjust: func(r string, c call) string {
			if len(c.words) >= 2 && c.words[0] == "buildx" && hasFlag(c.args, "--push") {
				return maxRisk(r, RiskHigh)
			}
			return r
		},
		note: "`buildx build --push` high",
	}
	aws = toolRules{
		tools:      []string{"aws"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"--profile", "--region", "--output", "--endpoint-url", "--query", "--color", "--cli-read-timeout", "--cli-connect-timeout", "--ca-bundle"},
		rules: []rule{
			{"* describe-*", RiskLow}, {"* list-*", RiskLow}, {"* get-*", RiskLow}, {"* head-*", RiskLow},
			{"sts get-caller-identity", RiskLow}, {"s3 ls", RiskLow}, {"help", RiskLow}, {"* help", RiskLow},
			{"* delete-*", RiskHigh}, {"* terminate-*", RiskHigh}, {"* remove-*", RiskHigh},
			{"* deregister-*", RiskHigh}, {"* purge-*", RiskHigh}, {"s3 rm", RiskHigh}, {"s3 rb", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		adjust: func(r string, c call) string {
			if len(c.words) >= 2 && c.words[0] == "s3" && c.words[1] == "sync" && hasFlag(c.args, "--delete") {
				return maxRisk(r, RiskHigh)
			}
			return r
		},
		note: "`s3 sync --delete` high",
	}
	cloudVerbs = toolRules{
		tools:      []string{"gcloud", "az"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"--project", "--account", "--configuration", "--format", "--verbosity", "--impersonate-service-account", "--subscription", "--output", "-o", "--query", "-g", "--resource-group", "--region", "--zone", "--location", "-l", "--name"},
		anyWord:    true,
		rules: []rule{
			{"list", RiskLow}, {"describe", RiskLow}, {"show", RiskLow}, {"get-iam-policy", RiskLow}, {"version", RiskLow},
			{"help", RiskLow}, {"read", RiskLow}, {"get-value", RiskLow}, {"print-access-token", RiskLow},
			{"delete", RiskHigh}, {"deploy", RiskHigh}, {"remove", RiskHigh}, {"purge", RiskHigh},
			{"set-iam-policy", RiskHigh}, {"add-iam-policy-binding", RiskHigh}, {"remove-iam-policy-binding", RiskHigh},
			{"stop", RiskHigh}, {"restart", RiskHigh}, {"reset", RiskHigh},
		},
		bare: RiskLow,
		dflt: RiskMedium,
		note: "the first command word anywhere in the command decides (`gcloud compute instances delete` high)",
	}
	hosting = toolRules{
		tools:      []string{"vercel", "netlify", "flyctl", "fly", "heroku", "wrangler", "firebase"},
		category:   CategoryInfrastructure,
		valueFlags: []string{"--cwd", "--scope", "-t", "--token", "-a", "--app", "--project", "-c", "--config", "--env", "--site", "--auth", "-r", "--remote"},
		rules: []rule{
			{"ls", RiskLow}, {"list", RiskLow}, {"inspect", RiskLow}, {"logs", RiskLow}, {"whoami", RiskLow},
			{"status", RiskLow}, {"info", RiskLow}, {"help", RiskLow}, {"version", RiskLow}, {"tail", RiskLow},
			{"dev", RiskLow}, {"serve", RiskLow}, {"emulators:start", RiskLow}, {"env ls", RiskLow},
			{"projects:list", RiskLow}, {"sites:list", RiskLow}, {"apps", RiskLow}, {"config", RiskLow},
			{"releases", RiskLow}, {"apps list", RiskLow}, {"secrets list", RiskLow},
			{"deploy", RiskHigh}, {"publish", RiskHigh}, {"remove", RiskHigh}, {"rm", RiskHigh},
			{"rollback", RiskHigh}, {"releases:rollback", RiskHigh}, {"promote", RiskHigh}, {"scale", RiskHigh},
			{"ps:scale", RiskHigh}, {"config:unset", RiskHigh}, {"env rm", RiskHigh}, {"env:unset", RiskHigh},
			{"secrets unset", RiskHigh}, {"secret delete", RiskHigh}, {"sites:delete", RiskHigh},
			{"hosting:disable", RiskHigh}, {"functions:delete", RiskHigh}, {"database:remove", RiskHigh},
			{"database:set", RiskHigh}, {"firestore:delete", RiskHigh}, {"machine destroy", RiskHigh},
			{"machines destroy", RiskHigh}, {"kv:key delete", RiskHigh}, {"kv key delete", RiskHigh},
			{"d1 delete", RiskHigh}, {"r2 bucket delete", RiskHigh}, {"delete", RiskHigh},
			{"destroy", RiskCritical}, {"apps destroy", RiskCritical}, {"apps:destroy", RiskCritical},
			{"pg:reset", RiskCritical},
		},
		bare:   RiskLow,
		dflt:   RiskMedium,
		adjust: adjustHosting,
		note:   "bare `vercel` deploys (high); `--prod` on a deploy is critical",
	}
	ansible = toolRules{
		tools:    []string{"ansible-playbook"},
		category: CategoryInfrastructure,
		bare:     RiskHigh,
		dflt:     RiskHigh,
		adjust: func(r string, c call) string {
			if hasFlag(c.args, "--check", "-C", "--syntax-check", "--list-hosts", "--list-tasks", "--list-tags") {
				return RiskLow
			}
			return r
		},
		note: "every playbook run high; `--check`, `--syntax-check` and `--list-*` low",
	}
	remoteShell = toolRules{
		tools:    []string{"ssh", "scp", "rsync"},
		category: CategoryInfrastructure,
		bare:     RiskMedium,
		dflt:     RiskMedium,
		adjust: func(r string, c call) string {
			if c.tool != "rsync" {
				return r
			}
			if hasFlag(c.args, "--dry-run") || shortFlag(c.args, 'n') {
				return RiskLow
			}
			for _, a := range beforeDashes(c.args) {
				if strings.HasPrefix(a, "--delete") || a == "--remove-source-files" {
					return RiskHigh
				}
			}
			return r
		},
		note: "rsync `--delete*`/`--remove-source-files` high, `-n`/`--dry-run` low",
	}
	git = toolRules{
		tools:      []string{"git"},
		category:   CategoryGit,
		valueFlags: []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"},
		rules: []rule{
			{"push", RiskMedium}, {"remote add", RiskMedium}, {"remote set-url", RiskMedium},
			{"remote remove", RiskMedium}, {"remote rm", RiskMedium}, {"remote rename", RiskMedium},
			{"remote set-head", RiskMedium}, {"remote set-branches", RiskMedium},
			{"fetch", RiskLow}, {"pull", RiskLow}, {"clone", RiskLow}, {"ls-remote", RiskLow},
			{"lfs push", RiskMedium}, {"send-email", RiskHigh}, {"svn dcommit", RiskHigh},
		},
		bare:   RiskNone,
		dflt:   RiskNone,
		adjust: adjustGit,
		note:   "only remote operations count; local commands (status, diff, commit, …) are not external actions: no record. `push` with `--force`, `-f`, `--force-with-lease`, `--force-if-includes`, `--mirror`, `--delete`, `-d`, `--prune`, a `+refspec` or a `:ref` deletion high, `--dry-run`/`-n` low; `config --global`/`--system` writes medium",
	}
)

// allRules is the rule table, in README order.
var allRules = []*toolRules{
	&nodePkg, &pythonPkg, &cargo, &ruby, &composer, &goTool, &systemPkg,
	&databases, &sqlite,
	&terraform, &pulumi, &kubectl, &containers, &aws, &cloudVerbs, &hosting, &ansible, &remoteShell,
	&git,
}

func adjustGit(r string, c call) string {
	if len(c.words) == 0 {
		return r
	}
	switch c.words[0] {
	case "push":
		sub := argsAfter(c.args, "push")
		if hasFlag(sub, "--dry-run") || shortFlag(sub, 'n') {
			return RiskLow
		}
		if hasFlag(sub, "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune") ||
			shortFlag(sub, 'f') || shortFlag(sub, 'd') {
			return RiskHigh
		}
		for _, w := range c.words[1:] {
			if strings.HasPrefix(w, "+") || strings.HasPrefix(w, ":") {
				return RiskHigh
			}
		}
	case "config":
		if !hasFlag(c.args, "--global", "--system") {
			return r
		}
		if hasFlag(c.args, "--unset", "--unset-all", "--add", "--replace-all", "--edit", "-e", "--rename-section", "--remove-section") {
			return RiskMedium
		}
		w := c.words[1:]
		if len(w) > 0 {
			switch w[0] {
			case "set", "unset", "edit", "rename-section", "remove-section":
				return RiskMedium
			case "get", "list":
				return r
			}
		}
		if len(w) >= 2 {
			return RiskMedium
		}
	}
	return r
}

// argsAfter returns the arguments after the first occurrence of word.
func argsAfter(args []string, word string) []string {
	for i, a := range args {
		if a == word {
			return args[i+1:]
		}
	}
	return nil
}

var destructiveSQL = regexp.MustCompile(`(?i)\b(drop|truncate|delete|alter)\b|\bdropDatabase\b|\bdeleteMany\b|\bdeleteOne\b|\.remove\(`)

var destructiveRedis = map[string]bool{
	"flushall": true, "flushdb": true, "del": true, "unlink": true, "shutdown": true, "config": true, "debug": true,
}

func adjustDatabase(r string, c call) string {
	for i, a := range c.args {
		for _, f := range []string{"-c", "--command", "-e", "--execute", "--eval"} {
			text := ""
			if a == f && i+1 < len(c.args) {
				text = c.args[i+1]
			} else if strings.HasPrefix(a, f+"=") {
				text = a[len(f)+1:]
			}
			if text != "" && destructiveSQL.MatchString(text) {
				return RiskHigh
			}
		}
	}
	if c.tool == "redis-cli" && len(c.words) > 0 && destructiveRedis[strings.ToLower(c.words[0])] {
		return RiskHigh
	}
	return r
}

// sqliteValueFlags are the sqlite3 options that take a value.
var sqliteValueFlags = []string{"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-mmap", "-heap",
	"-lookaside", "-pagecache", "-vfs", "-maxsize", "-escape", "--cmd", "--init", "--separator", "--newline",
	"--nullvalue", "--mmap", "--vfs", "--maxsize"}

func adjustSQLite(_ string, c call) string {
	words := positionals(c.args, sqliteValueFlags, "sqlite3")
	if len(words) == 0 || words[0] == ":memory:" || words[0] == "" {
		return RiskNone
	}
	if insideRoot(words[0], c.cwd, c.root) {
		return RiskNone
	}
	for i, a := range c.args {
		if (a == "-cmd" || a == "--cmd") && i+1 < len(c.args) && destructiveSQL.MatchString(c.args[i+1]) {
			return RiskHigh
		}
	}
	for _, w := range words[1:] {
		if destructiveSQL.MatchString(w) {
			return RiskHigh
		}
	}
	return RiskMedium
}

// insideRoot reports whether file (relative to cwd) lies under root, with
// symlinks in the existing part of either path resolved.
func insideRoot(file, cwd, root string) bool {
	if root == "" {
		return false
	}
	if strings.HasPrefix(file, "file:") { // sqlite URI filename
		file = strings.TrimPrefix(file, "file:")
		if i := strings.IndexByte(file, '?'); i >= 0 {
			file = file[:i]
		}
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(cwd, file)
	}
	file = resolveExisting(filepath.Clean(file))
	root = resolveExisting(filepath.Clean(root))
	rel, err := filepath.Rel(root, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves symlinks in the longest existing prefix of p.
func resolveExisting(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" {
		return p
	}
	return filepath.Join(resolveExisting(dir), base)
}

func adjustHosting(r string, c call) string {
	if onlyHelp(c.args) {
		return r
	}
	bare := len(c.words) == 0
	if bare && c.tool == "vercel" {
		r = RiskHigh
	}
	deploying := bare && c.tool == "vercel" || !bare && (c.words[0] == "deploy" || c.words[0] == "publish")
	if deploying && hasFlag(c.args, "--prod", "--production") {
		return RiskCritical
	}
	return r
}
