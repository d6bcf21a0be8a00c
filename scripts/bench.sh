#!/bin/sh
# bench.sh — run the timeagent benchmark ("make bench" builds bin/timeagent first).
#
# Prints tables of ratios measured in one run and writes them as markdown to
# bench/RESULTS.md. Environment:
#   BENCH_QUICK=1   smaller trees (2k and 10k files) and files, for a quick look
#   BENCH_WORK=DIR  where trees, journals and scratch live (default /var/tmp/timeagent-bench;
#                   generated trees are kept there and reused by the next run)
#   BENCH_REPS=N    repetitions of each step, median taken (default 3)
#   BENCH_USER=NAME the normal user the fuse section runs as afterwards (as root;
#                   default timeagent-test, created when missing; "none" skips)
#   BENCH_NO_OVERLAYFS=1  no fuse-overlayfs comparison in the fuse section
#   BENCH_ONLY_FUSE=1  only the fuse section (as root, then as the normal user), written
#                   to bench/RESULTS-fuse.md
#
# Sections: copy-mode checkpoints (10k and 100k files) against cp -a and a git
# shadow repository; undo of 1,000 changed files against cp -a and git
# checkout; a file over 100 MiB (time, peak RSS, sha256 after undo); a file
# over 4 GiB in a fuse session (4.5 GiB even with BENCH_QUICK=1; changed past
# 4 GiB, appended to, a new one written, then undo and redo, checked by
# sha256; skipped with the reason when BENCH_WORK has under 7x that free); fuse:
# session start and the issue-3 workloads natively, in fuse-overlayfs and in
# "timeagent run --mode fuse" (reported as "fuse: not available: <reason>"
# while the FUSE mode is not wired into sessions).
set -eu
cd "$(dirname "$0")/.."

# Tools the benchmark runs for real.
need=""
command -v git >/dev/null || need="$need git"
command -v fuse-overlayfs >/dev/null || need="$need fuse-overlayfs"
command -v fusermount3 >/dev/null || command -v fusermount >/dev/null || need="$need fuse3"
[ -x /usr/bin/time ] || need="$need time"
command -v sha256sum >/dev/null || need="$need coreutils"
if [ -n "$need" ]; then
	echo "bench: installing$need" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
[ -x bin/timeagent ] || go build -o bin/timeagent ./cmd/timeagent
go build -o bin/timeagent-bench ./cmd/timeagent-bench

quick=""
[ "${BENCH_QUICK:-}" = 1 ] && quick="-quick"
if [ "${BENCH_ONLY_FUSE:-}" = 1 ]; then
	# Only the fuse section, as root (then as a normal user below).
	out=bench/RESULTS-fuse.md
	bin/timeagent-bench run $quick -only fuse -reps "${BENCH_REPS:-3}" -bin bin/timeagent -out "$out"
else
	out=bench/RESULTS.md
	bin/timeagent-bench run $quick -reps "${BENCH_REPS:-3}" -bin bin/timeagent -out "$out"
fi

# The fuse figures again as a normal user (BENCH_USER, created when missing;
# BENCH_USER=none skips): the overlay is mounted through fusermount3, without
# passthrough and FUSE over io_uring, which are root only. /dev/fuse is 0666
# while it runs, as on stock systems. Appended to the results file.
user=${BENCH_USER:-timeagent-test}
if [ "$(id -u)" = 0 ] && [ "$user" != none ]; then
	id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
	uwork=${BENCH_USER_WORK:-/var/tmp/timeagent-bench-user}
	mkdir -p "$uwork" && chown "$user:" "$uwork"
	ubin=$(mktemp -d /tmp/timeagent-bench-bin.XXXXXX)
	cp bin/timeagent bin/timeagent-bench "$ubin"/ && chmod 0755 "$ubin" && chown -R "$user:" "$ubin"
	fusemode=$(stat -c %a /dev/fuse)
	trap 'chmod "$fusemode" /dev/fuse; rm -rf "$ubin"' EXIT INT TERM
	chmod 0666 /dev/fuse
	echo "bench: the fuse section as $user (uid $(id -u "$user"))" >&2
	(cd "$uwork" && runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$uwork" \
		BENCH_NO_OVERLAYFS="${BENCH_NO_OVERLAYFS:-}" \
		"$ubin/timeagent-bench" run $quick -only fuse -reps "${BENCH_REPS:-3}" -work "$uwork" \
		-bin "$ubin/timeagent" -out "$ubin/user.md")
	{
		echo
		echo "## Fuse as a normal user ($user: fusermount3, no passthrough, no io_uring)"
		echo
		sed 's/^#/##/' "$ubin/user.md"
	} >> "$out"
	echo "bench: appended the normal user's fuse figures to $out" >&2
fi
