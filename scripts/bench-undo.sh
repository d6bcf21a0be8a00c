#!/usr/bin/env bash
# Undo of 1,000 changed files in a 100k-file repository, through the CLI
# (process start included), against cp -a of the same 1,000 files in the
# same run. Reuses make bench's generated tree (BENCH_WORK).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
go build -o bin/timeagent-bench ./cmd/timeagent-bench
work=${BENCH_WORK:-/var/tmp/timeagent-bench}
tree=$work/tree-100000
mkdir -p "$work"
if [ ! -d "$tree/.git" ]; then
  bin/timeagent-bench gen -n 100000 -dir "$tree"
  git -C "$tree" add -A >/dev/null && git -C "$tree" -c user.email=b@b -c user.name=b commit -qm gen
fi
if [ ! -s "$work/modified.list" ]; then
  awk 'NR % 100 == 1' "$tree.files" | head -1000 > "$work/modified.list"
fi
T=$PWD/bin/timeagent
export TIMEAGENT_HOME=$work/undo-home
rm -rf "$TIMEAGENT_HOME" "$work/undo-copy"
cd "$tree"
"$T" run -m modify -- sh -c 'while read f; do echo "// changed" >> "$f"; done < ../modified.list' 2>/dev/null
mkdir -p "$work/undo-copy"
ms() { local s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
sleep 3
for i in 1 2 3; do
  sync; u=$(ms "$T" undo --yes); sync; r=$(ms "$T" redo --yes)
  c=$(ms sh -c "tar -cf - -T ../modified.list | (cd '$work/undo-copy' && tar -xpf -)")
  sync
  echo "round $i: undo ${u} ms, redo ${r} ms, cp of the same 1000 files ${c} ms"
done
"$T" undo --yes >/dev/null 2>&1
test -z "$(git status --porcelain)" && echo "tree restored: git status clean"
