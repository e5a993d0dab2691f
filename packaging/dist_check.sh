#!/usr/bin/env bash
# Release check of the archive (slow; not part of `make test` or CI). Run from the repository root:
#
#   bash packaging/dist_check.sh [ARCHIVE.tar.gz]     (or: make dist-check)
#
# Without an argument it checks the archive in dist/, building it first if there is none. It verifies the SHA-256,
# unpacks the archive into a fresh temporary folder outside the source tree, and there, with no network
# (`unshare -n` when available): runs `dcstudio --version`, the whole `dcstudio demo`, and opens the desktop app on
# an Xvfb display for a few seconds (it must still be running, with a window mapped, and print nothing alarming).
# Needs: Xvfb (Debian: apt-get install xvfb); xwininfo (x11-utils) is used when present.
set -euo pipefail
cd "$(dirname "$0")/.."
GUI_SECONDS=${GUI_SECONDS:-8}

archive=${1:-}
if [ -z "$archive" ]; then
    archive=$(ls dist/dcstudio-*-linux-x86_64.tar.gz 2>/dev/null | head -1 || true)
    if [ -z "$archive" ]; then bash packaging/build.sh; archive=$(ls dist/dcstudio-*-linux-x86_64.tar.gz | head -1); fi
fi
archive=$(realpath "$archive")
fail=0
ok()  { echo "  ok    $*"; }
bad() { echo "  FAIL  $*"; fail=1; }

echo "checking $archive"
(cd "$(dirname "$archive")" && sha256sum -c --quiet "$(basename "$archive").sha256") && ok "sha256" || bad "sha256"

work=$(mktemp -d /tmp/dcstudio-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s.%N)
tar -xzf "$archive" -C "$work"
t1=$(date +%s.%N)
app=$(ls -d "$work"/dcstudio-*/)
app=${app%/}
ok "unpacked in $(printf %.1f "$(echo "$t1 - $t0" | bc)") s: $(du -sm "$app" | cut -f1) MB, $(find "$app" -type f | wc -l) files"
for f in INSTALL.txt BUILDINFO.txt LICENSES/README.txt; do [ -s "$app/$f" ] && ok "$f present" || bad "$f missing"; done
ok "licence files: $(find "$app/LICENSES" -type f | wc -l)"

# no network: a private network namespace with no interface but loopback (down)
NONET=""
if unshare -n true 2>/dev/null; then NONET="unshare -n"; ok "no network: unshare -n"; else echo "  note  unshare -n not allowed here: running with the network"; fi

cd "$work"  # nothing of the source tree is reachable from here
export HOME="$work/home"; mkdir -p "$HOME"   # fresh settings, fresh recent-projects list
unset PYTHONPATH VIRTUAL_ENV

v=$($NONET "$app/dcstudio" --version 2>&1) || true
[[ "$v" =~ \(commit\ [0-9a-f]{7} ]] && ok "--version: $v" || bad "--version printed: $v"

t0=$(date +%s.%N)
if $NONET "$app/dcstudio" demo > "$work/demo.log" 2>&1; then
    ok "demo in $(printf %.1f "$(echo "$(date +%s.%N) - $t0" | bc)") s: $(grep -c . "$work/demo.log") lines of output"
else
    bad "demo failed:"; tail -20 "$work/demo.log"
fi

if command -v Xvfb >/dev/null; then
    disp=":$((90 + RANDOM % 100))"
    Xvfb "$disp" -screen 0 1280x800x24 -nolisten tcp > "$work/xvfb.log" 2>&1 &
    xpid=$!
    sleep 1.5
    DISPLAY=$disp QT_QPA_PLATFORM=xcb $NONET "$app/dcstudio" > "$work/gui.log" 2>&1 &
    gpid=$!
    sleep "$GUI_SECONDS"
    if kill -0 "$gpid" 2>/dev/null; then
        windows=""
        if command -v xwininfo >/dev/null; then
            windows=$(DISPLAY=$disp xwininfo -root -tree | grep -c '"DC Studio' || true)
        fi
        ok "GUI still running after ${GUI_SECONDS} s on Xvfb${windows:+ ($windows window(s) titled DC Studio)}"
        [ -z "$windows" ] || [ "$windows" -gt 0 ] || bad "no DC Studio window mapped"
        kill "$gpid"; wait "$gpid" 2>/dev/null || true
    else
        wait "$gpid" && rc=0 || rc=$?
        bad "GUI exited with $rc:"; tail -20 "$work/gui.log"
    fi
    if grep -qiE "cannot open shared object|could not load the Qt platform plugin|Traceback|Aborted" "$work/gui.log"; then
        bad "GUI log:"; cat "$work/gui.log"
    fi
    kill "$xpid" 2>/dev/null || true
else
    bad "Xvfb not installed (apt-get install xvfb): GUI not checked"
fi

[ "$fail" = 0 ] && echo "dist-check: all passed" || echo "dist-check: FAILED"
exit "$fail"
