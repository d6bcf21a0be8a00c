package actions

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	tests := []struct {
		cmd      string
		category string
		risk     string
	}{
		{"terraform plan", CategoryInfrastructure, RiskLow},
		{"terraform apply", CategoryInfrastructure, RiskCritical},
		{"terraform apply -auto-approve", CategoryInfrastructure, RiskCritical},
		{"terraform destroy", CategoryInfrastructure, RiskCritical},
		{"terraform -chdir=infra apply", CategoryInfrastructure, RiskCritical},
		{"terraform -chdir=infra plan -out x", CategoryInfrastructure, RiskLow},
		{"terraform state rm aws_s3_bucket.b", CategoryInfrastructure, RiskHigh},
		{"terraform state list", CategoryInfrastructure, RiskLow},
		{"terraform frobnicate", CategoryInfrastructure, RiskMedium},
		{"tofu destroy", CategoryInfrastructure, RiskCritical},
		{"terraform --version", CategoryInfrastructure, RiskLow},
		{"kubectl get pods", CategoryInfrastructure, RiskLow},
		{"kubectl delete pod x", CategoryInfrastructure, RiskHigh},
		{"kubectl apply -f x.yaml", CategoryInfrastructure, RiskHigh},
		{"kubectl -n prod delete pod x", CategoryInfrastructure, RiskHigh},
		{"kubectl --namespace prod get pods", CategoryInfrastructure, RiskLow},
		{"kubectl --context=prod delete ns x", CategoryInfrastructure, RiskHigh},
		{"kubectl rollout status deploy/x", CategoryInfrastructure, RiskLow},
		{"kubectl rollout restart deploy/x", CategoryInfrastructure, RiskHigh},
		{"kubectl exec -it pod -- sh", CategoryInfrastructure, RiskMedium},
		{"helm -n prod uninstall web", CategoryInfrastructure, RiskHigh},
		{"helm list", CategoryInfrastructure, RiskLow},
		{"npm install", CategoryPackage, RiskMedium},
		{"npm i left-pad", CategoryPackage, RiskMedium},
		{"npm publish", CategoryPackage, RiskHigh},
		{"npm --prefix web publish", CategoryPackage, RiskHigh},
		{"npm ls", CategoryPackage, RiskLow},
		{"npm run build", CategoryPackage, RiskMedium},
		{"yarn", CategoryPackage, RiskMedium},
		{"yarn npm publish", CategoryPackage, RiskHigh},
		{"pnpm -C web publish", CategoryPackage, RiskHigh},
		{"pip install requests", CategoryPackage, RiskMedium},
		{"pip3 list", CategoryPackage, RiskLow},
		{"uv pip list", CategoryPackage, RiskLow},
		{"uv publish", CategoryPackage, RiskHigh},
		{"poetry publish --build", CategoryPackage, RiskHigh},
		{"cargo +nightly publish", CategoryPackage, RiskHigh},
		{"cargo build", CategoryPackage, RiskMedium},
		{"cargo tree", CategoryPackage, RiskLow},
		{"gem push x.gem", CategoryPackage, RiskHigh},
		{"bundle", CategoryPackage, RiskMedium},
		{"composer -d web require x/y", CategoryPackage, RiskMedium},
		{"go test ./...", CategoryPackage, RiskLow},
		{"go get example.com/x", CategoryPackage, RiskMedium},
		{"go mod tidy", CategoryPackage, RiskMedium},
		{"go env -w GOPROXY=direct", CategoryPackage, RiskMedium},
		{"go env GOPATH", CategoryPackage, RiskLow},
		{"brew install jq", CategoryPackage, RiskMedium},
		{"apt-get -y install jq", CategoryPackage, RiskMedium},
		{"apt-get -o Dpkg::Options::=x purge nginx", CategoryPackage, RiskHigh},
		{"apt list --installed", CategoryPackage, RiskLow},
		{"psql -h db -c 'select 1'", CategoryDatabase, RiskMedium},
		{"psql -h db -c 'DROP TABLE users'", CategoryDatabase, RiskHigh},
		{"mysql -e 'truncate t' app", CategoryDatabase, RiskHigh},
		{"mongosh --eval db.dropDatabase()", CategoryDatabase, RiskHigh},
		{"redis-cli -h cache FLUSHALL", CategoryDatabase, RiskHigh},
		{"redis-cli get k", CategoryDatabase, RiskMedium},
		{"sqlite3 app.db", CategoryDatabase, RiskNone},
		{"sqlite3 :memory:", CategoryDatabase, RiskNone},
		{"sqlite3", CategoryDatabase, RiskNone},
		{"sqlite3 " + filepath.Join(outside, "x.db"), CategoryDatabase, RiskMedium},
		{"sqlite3 " + filepath.Join(outside, "x.db") + " 'drop table t'", CategoryDatabase, RiskHigh},
		{"sqlite3 ../" + filepath.Base(outside) + "/x.db", CategoryDatabase, RiskMedium},
		{"sqlite3 -cmd .tables sub/app.db", CategoryDatabase, RiskNone},
		{"docker ps", CategoryInfrastructure, RiskLow},
		{"docker --context prod rm web", CategoryInfrastructure, RiskHigh},
		{"docker -H ssh://x system prune -af", CategoryInfrastructure, RiskHigh},
		{"docker run -p 80:80 nginx", CategoryInfrastructure, RiskMedium},
		{"docker build .", CategoryInfrastructure, RiskMedium},
		{"docker buildx build --push .", CategoryInfrastructure, RiskHigh},
		{"docker compose -f c.yml down", CategoryInfrastructure, RiskHigh},
		{"docker image ls", CategoryInfrastructure, RiskLow},
		{"podman push img", CategoryInfrastructure, RiskHigh},
		{"aws s3 ls", CategoryInfrastructure, RiskLow},
		{"aws --profile prod ec2 describe-instances", CategoryInfrastructure, RiskLow},
		{"aws ec2 terminate-instances --instance-ids i-1", CategoryInfrastructure, RiskHigh},
		{"aws s3 rm s3://b/k", CategoryInfrastructure, RiskHigh},
		{"aws s3 sync . s3://b --delete", CategoryInfrastructure, RiskHigh},
		{"aws s3 cp a s3://b/a", CategoryInfrastructure, RiskMedium},
		{"gcloud compute instances list", CategoryInfrastructure, RiskLow},
		{"gcloud --project p compute instances delete vm1", CategoryInfrastructure, RiskHigh},
		{"gcloud run deploy web", CategoryInfrastructure, RiskHigh},
		{"az group delete -n rg", CategoryInfrastructure, RiskHigh},
		{"az vm list", CategoryInfrastructure, RiskLow},
		{"az login", CategoryInfrastructure, RiskMedium},
		{"vercel", CategoryInfrastructure, RiskHigh},
		{"vercel --prod", CategoryInfrastructure, RiskCritical},
		{"vercel --help", CategoryInfrastructure, RiskLow},
		{"vercel ls", CategoryInfrastructure, RiskLow},
		{"netlify deploy --prod", CategoryInfrastructure, RiskCritical},
		{"netlify deploy", CategoryInfrastructure, RiskHigh},
		{"flyctl apps destroy x", CategoryInfrastructure, RiskCritical},
		{"fly deploy", CategoryInfrastructure, RiskHigh},
		{"heroku apps:destroy -a x", CategoryInfrastructure, RiskCritical},
		{"heroku config:set A=b", CategoryInfrastructure, RiskMedium},
		{"heroku logs --tail", CategoryInfrastructure, RiskLow},
		{"wrangler deploy", CategoryInfrastructure, RiskHigh},
		{"wrangler dev", CategoryInfrastructure, RiskLow},
		{"firebase deploy --only hosting", CategoryInfrastructure, RiskHigh},
		{"pulumi up --yes", CategoryInfrastructure, RiskCritical},
		{"pulumi -C infra preview", CategoryInfrastructure, RiskLow},
		{"ansible-playbook site.yml", CategoryInfrastructure, RiskHigh},
		{"ansible-playbook --check site.yml", CategoryInfrastructure, RiskLow},
		{"ssh host uptime", CategoryInfrastructure, RiskMedium},
		{"scp a host:b", CategoryInfrastructure, RiskMedium},
		{"rsync -a src/ host:dst/", CategoryInfrastructure, RiskMedium},
		{"rsync -a --delete src/ host:dst/", CategoryInfrastructure, RiskHigh},
		{"rsync -an --delete src/ host:dst/", CategoryInfrastructure, RiskLow},
		{"rsync --dry-run --delete src/ host:dst/", CategoryInfrastructure, RiskLow},
		{"git push", CategoryGit, RiskMedium},
		{"git push origin main", CategoryGit, RiskMedium},
		{"git push --force", CategoryGit, RiskHigh},
		{"git push -f origin main", CategoryGit, RiskHigh},
		{"git push -uf origin main", CategoryGit, RiskHigh},
		{"git push --force-with-lease", CategoryGit, RiskHigh},
		{"git push --force-with-lease=main:abc", CategoryGit, RiskHigh},
		{"git push --mirror", CategoryGit, RiskHigh},
		{"git push --delete origin old", CategoryGit, RiskHigh},
		{"git push origin +main", CategoryGit, RiskHigh},
		{"git push origin :old", CategoryGit, RiskHigh},
		{"git push --dry-run --force", CategoryGit, RiskLow},
		{"git -C sub push", CategoryGit, RiskMedium},
		{"git -C sub push --force", CategoryGit, RiskHigh},
		{"git -c user.name=x push -f", CategoryGit, RiskHigh},
		{"git remote add origin url", CategoryGit, RiskMedium},
		{"git remote set-url origin url", CategoryGit, RiskMedium},
		{"git remote remove origin", CategoryGit, RiskMedium},
		{"git remote -v", CategoryGit, RiskNone},
		{"git fetch", CategoryGit, RiskLow},
		{"git status", CategoryGit, RiskNone},
		{"git commit -m x", CategoryGit, RiskNone},
		{"git diff", CategoryGit, RiskNone},
		{"git", CategoryGit, RiskNone},
		{"git --version", CategoryGit, RiskNone},
		{"git config --global user.name X", CategoryGit, RiskMedium},
		{"git config --global user.name", CategoryGit, RiskNone},
		{"git config --global --list", CategoryGit, RiskNone},
		{"git config user.name X", CategoryGit, RiskNone},
		{"git send-email x.patch", CategoryGit, RiskHigh},
		{"ls -la", "", RiskNone},
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		argv := splitTestCmd(tc.cmd)
		cat, risk := ClassifyAt(argv[0], argv[1:], root, root)
		if cat != tc.category || risk != tc.risk {
			t.Errorf("%s: got (%s, %s), want (%s, %s)", tc.cmd, cat, risk, tc.category, tc.risk)
		}
	}
}

// splitTestCmd splits on spaces, keeping single-quoted words together.
func splitTestCmd(s string) []string {
	var out []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, "'") {
			end := strings.Index(s[1:], "'") + 1
			out = append(out, s[1:end])
			s = s[end+1:]
			continue
		}
		w, rest, _ := strings.Cut(s, " ")
		if w != "" {
			out = append(out, w)
		}
		s = rest
	}
	return out
}

func TestClassifyUsesEnvRoot(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	t.Setenv(EnvRoot, root)
	if _, risk := Classify("sqlite3", []string{"a.db"}); risk != RiskNone {
		t.Errorf("sqlite3 inside root: %s", risk)
	}
	t.Setenv(EnvRoot, t.TempDir())
	if _, risk := Classify("sqlite3", []string{"a.db"}); risk != RiskMedium {
		t.Errorf("sqlite3 outside root: %s", risk)
	}
}

func TestToolsCoverIssueList(t *testing.T) {
	want := strings.Fields(`npm pnpm yarn pip pip3 uv poetry cargo gem bundle composer go brew apt apt-get
		psql mysql mongosh redis-cli sqlite3 terraform tofu pulumi kubectl helm docker podman aws gcloud az
		vercel netlify flyctl heroku wrangler firebase ansible-playbook ssh scp rsync git`)
	tools := Tools()
	if !sort.StringsAreSorted(tools) {
		t.Errorf("Tools not sorted: %v", tools)
	}
	for _, w := range want {
		if !IsTool(w) {
			t.Errorf("%s is not proxied", w)
		}
	}
	doc := RuleDoc()
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("RuleDoc does not mention %s", w)
		}
	}
	for _, tr := range allRules {
		for _, r := range tr.rules {
			if _, ok := riskOrder[r.risk]; !ok {
				t.Errorf("%v: rule %q has unknown risk %q", tr.tools, r.cmd, r.risk)
			}
		}
		if _, ok := riskOrder[tr.dflt]; !ok {
			t.Errorf("%v: default risk %q", tr.tools, tr.dflt)
		}
	}
	if n := strings.Count(doc, "\n| ") - 1; n != len(allRules) {
		t.Errorf("RuleDoc has %d rows, want %d", n, len(allRules))
	}
}

func TestUnknownSubcommandDefaultsMedium(t *testing.T) {
	for _, tool := range Tools() {
		if tool == "git" || tool == "sqlite3" || tool == "ansible-playbook" {
			continue // documented exceptions
		}
		if _, risk := ClassifyAt(tool, []string{"zzz-unknown-subcommand"}, "/", "/nonexistent"); risk != RiskMedium {
			t.Errorf("%s zzz-unknown-subcommand: %s, want medium", tool, risk)
		}
	}
}
