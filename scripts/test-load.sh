#!/bin/sh
# test-load.sh — the crash suite on a loaded machine: two CPU hogs run beside
# it ("make test-load", part of "make test"). A kill -9 under load leaves the
# kernel's teardown of the dead overlay's connection slow, which the first
# command after it must handle. Extra arguments go to go test.
set -eu
cd "$(dirname "$0")/.."
sh -c 'while :; do :; done' &
hog1=$!
sh -c 'while :; do :; done' &
hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null || true' EXIT INT TERM
${GO:-go} test -count=1 -timeout 25m "$@" ./internal/crashtest/
