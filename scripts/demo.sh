#!/usr/bin/env bash
# A demonstration session end to end: a repository with uncommitted, untracked
# and ignored work; a scripted "agent" that destroys it the way agents do
# (git checkout ., git clean -fdx, rm -rf); then diff, undo, redo.
set -euo pipefail
bin=$(cd "$(dirname "${1:-bin/timeagent}")" && pwd)/$(basename "${1:-bin/timeagent}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TIMEAGENT_HOME="$work/state"
repo="$work/repo"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

mkdir -p "$repo" && cd "$repo"
git init -q && git config user.email demo@example.com && git config user.name demo
printf 'package main\n\nfunc main() { println("hello") }\n' > main.go
printf '.env\n' > .gitignore
git add . && git commit -qm "first commit"
printf 'package main\n\nfunc main() { println("hello, uncommitted work") }\n' > main.go   # uncommitted edit
printf 'my notes, never committed\n' > NOTES.md                                             # untracked
printf 'API_KEY=secret-local-value\n' > .env                                               # ignored
mkdir -p docs && printf 'draft\n' > docs/draft.md
# path, type, mode, link target of everything (.git/ included), plus every file's hash
manifest() { { find . -printf '%p %y %m %l\n' | sort; find . -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16; }
before=$(manifest)

step "timeagent run -m 'scripted agent' -- sh -c '…git checkout . && git clean -fdx && rm -rf docs…'"
"$bin" run -m "scripted agent" -- sh -c '
  git checkout -q . && git clean -qfdx && rm -rf docs
  printf "package main\n\nfunc main() { println(\"rewritten by the agent\") }\n" > main.go
  echo "generated" > GENERATED.txt'
step "ls -A   # the uncommitted edit, NOTES.md, .env and docs/ are gone"
ls -A
step "timeagent diff"
"$bin" diff
step "timeagent diff --patch"
"$bin" diff --patch | head -30
step "timeagent log"
"$bin" log
step "timeagent undo"
"$bin" undo
step "ls -A && cat main.go .env NOTES.md"
ls -A && cat main.go .env NOTES.md
after_undo=$(manifest)
step "timeagent redo"
"$bin" redo
step "timeagent status"
"$bin" status
"$bin" undo >/dev/null
if [ "$before" = "$after_undo" ] && [ "$before" = "$(manifest)" ]; then
  printf '\n\033[1mdemo: undo restored the tree byte for byte (manifest %s)\033[0m\n' "$before"
else
  echo "demo: the tree after undo differs from before the session" >&2
  exit 1
fi
