#!/bin/sh
# The Windows build's control channel (a named pipe) under Debian's wine 8:
# builds the session package's tests for Windows and runs TestControlChannel
# in a fresh wine prefix. Go 1.24+ needs bcryptprimitives.ProcessPrng, which
# wine 8 lacks: scripts/wine/bcryptprimitives.c provides it.
set -eu
GO=${GO:-go}
WINE=$(command -v wine64 || echo /usr/lib/wine/wine64)
CC=${MINGW_CC:-x86_64-w64-mingw32-gcc}
if [ ! -x "$WINE" ] || ! command -v "$CC" >/dev/null; then
	echo "wine-test: needs wine64 and $CC (apt-get install wine64 gcc-mingw-w64-x86-64-win32)" >&2
	exit 1
fi
work=$(mktemp -d /tmp/timeagent-wine-XXXXXX)
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() {
	"$(dirname "$WINE")/wineserver" -k 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
"$WINE" wineboot -i >"$work/wineboot.log" 2>&1 || { cat "$work/wineboot.log" >&2; exit 1; }
"$CC" -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
	scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
GOOS=windows GOARCH=amd64 $GO test -c -o "$work/session.test.exe" ./session/
"$WINE" "$work/session.test.exe" -test.run '^TestControlChannel$' -test.count=1 -test.v

# A whole copy-mode session of the Windows build: the control channel
# starts, the agent runs, the session ends with its actions ingested.
# (undo is not run: wine 8 lacks the call os.Root's Remove makes.)
GOOS=windows GOARCH=amd64 $GO build -o "$WINEPREFIX/drive_c/ta.exe" ./cmd/timeagent
mkdir -p "$WINEPREFIX/drive_c/r"
echo base > "$WINEPREFIX/drive_c/r/a.txt"
(cd "$WINEPREFIX/drive_c/r" && TIMEAGENT_HOME='C:\home' "$WINE" 'C:\ta.exe' --root 'C:\r' run --mode copy -- \
	cmd /c "echo agent> a.txt & echo new> b.txt")
grep -q agent "$WINEPREFIX/drive_c/r/a.txt" && grep -q new "$WINEPREFIX/drive_c/r/b.txt" || {
	echo "wine-test: the session's agent did not run" >&2
	exit 1
}
(cd "$WINEPREFIX/drive_c/r" && TIMEAGENT_HOME='C:\home' "$WINE" 'C:\ta.exe' --root 'C:\r' log) | grep -q 'echo agent' || {
	echo "wine-test: the session was not recorded" >&2
	exit 1
}
echo "wine-test: a copy-mode session ran and was recorded"
