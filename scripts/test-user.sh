#!/bin/sh
# test-user.sh — the unprivileged lane of "make test": the CLI scenarios
# (both modes, undo/redo/switch byte for byte, kill -9 recovery) run as a
# normal user, with /dev/fuse 0666 as stock systems have it, fuse3's
# fusermount3 and an untouched /etc/fuse.conf (no user_allow_other).
#
# Run as root (CI is root): it creates the user TEST_USER (default
# timeagent-test) with useradd, builds the binaries as root, and runs them
# as that user with runuser, with HOME, TMPDIR, TIMEAGENT_HOME (per test)
# and GOCACHE in places the user owns. Environment:
#   TEST_USER      the user (created when missing)
#   USER_CLI_RUN   -test.run pattern of cmd/timeagent tests
#   USER_CRASH_RUN -test.run pattern of internal/crashtest tests
set -eu
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "test-user: run as root (it creates a user and sets /dev/fuse 0666)" >&2
	exit 1
fi
user=${TEST_USER:-timeagent-test}
cli_run=${USER_CLI_RUN:-'^(TestUndoRedoDestroyedWork|TestTaskTree|TestDrift|TestManyTasks|TestControlSocketFromChild|TestRunExitStatus|TestAutoFallsBackWhenMountFails|TestFuseAsNormalUser|TestIsolate.*)$'}
crash_run=${USER_CRASH_RUN:-'^(TestKillSession|TestKillChild|TestSecondRun|TestFirstCommandAfterKill|TestSignalToTimeagent|TestKillIsolated|TestStaleMount)$'}

command -v fusermount3 >/dev/null || {
	echo "test-user: fusermount3 missing: install fuse3 (make test-user does)" >&2
	exit 1
}
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
uhome=$(getent passwd "$user" | cut -d: -f6)

# /dev/fuse as a stock system has it; restored on exit.
fusemode=$(stat -c %a /dev/fuse)
work=$(mktemp -d /tmp/timeagent-test-user.XXXXXX)
cleanup() {
	chmod "$fusemode" /dev/fuse
	# Never leave a mount of the test user behind.
	grep " fuse.timeagent " /proc/self/mountinfo | awk '{print $5}' | while read -r mp; do
		case "$mp" in "$work"/*) umount -l "$mp" 2>/dev/null || true ;; esac
	done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
chmod 0666 /dev/fuse

echo "test-user: building the binaries"
${GO:-go} build -o "$work/bin/timeagent" ./cmd/timeagent
${GO:-go} test -c -o "$work/bin/cli.test" ./cmd/timeagent
${GO:-go} test -c -o "$work/bin/crash.test" ./internal/crashtest
mkdir -p "$work/tmp" "$work/cache"
chown -R "$user:" "$work"
chmod 0755 "$work" "$work/bin"

as_user() {
	runuser -u "$user" -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME="$uhome" TMPDIR="$work/tmp" GOCACHE="$work/cache" TIMEAGENT_HOME="$work/home" \
		TIMEAGENT_TEST_BINARY="$work/bin/timeagent" "$@"
}

cd "$work"
echo "test-user: CLI scenarios as $user (uid $(id -u "$user"))"
as_user "$work/bin/cli.test" -test.count=1 -test.timeout 15m -test.run "$cli_run"
echo "test-user: crash suite as $user"
as_user "$work/bin/crash.test" -test.count=1 -test.timeout 15m -test.run "$crash_run"
echo "test-user: /dev/fuse 0600 (no access): what the user is told"
chmod 0600 /dev/fuse
as_user "$work/bin/cli.test" -test.count=1 -test.run '^TestNoFuseDevice$'
chmod 0666 /dev/fuse
echo "test-user: ok"
