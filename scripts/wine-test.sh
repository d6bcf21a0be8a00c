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
