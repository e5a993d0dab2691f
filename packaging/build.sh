#!/usr/bin/env bash
# Build the release archive of the desktop bundle from the pinned stack. Run from the repository root:
#
#   bash packaging/build.sh        (or: make dist)
#
# Makes, in dist/:
#   dcstudio-<version>-linux-x86_64/              the unpacked folder (dcstudio, _internal/, LICENSES/, INSTALL.txt)
#   dcstudio-<version>-linux-x86_64.tar.gz        the archive to hand over
#   dcstudio-<version>-linux-x86_64.tar.gz.sha256
#   INSTALL.txt                                   the same notes as inside the archive, to read before unpacking
# and prints the figures (time, sizes, file count, SHA-256). Check the result with `make dist-check`.
#
# Environment: BUILD_VENV (default .venv-build, created here; never the development .venv), PYTHON (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
PYTHON=${PYTHON:-python3}
VENV=${BUILD_VENV:-.venv-build}
PIN="-c packaging/constraints.txt"

# 1. System libraries that Qt's X11 platform plugin loads. The build bundles whatever of them it finds, so they
#    must be installed on the build machine (Debian names); the target then needs none of them.
XCB_DEBS="libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-cursor0 libxcb-xkb1
          libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 libxcb-xinerama0 libxcb-sync1 libxcb-xfixes0"
if command -v dpkg-query >/dev/null; then
    missing=$(for p in $XCB_DEBS; do dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
    if [ -n "$missing" ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get install -y -q $missing
        else
            echo "build: install these first: sudo apt-get install $missing" >&2; exit 1
        fi
    fi
fi

# 2. The build environment: every package pinned, build tools included (no isolated build env pulling
#    an unpinned setuptools).
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q $PIN pip
"$VENV/bin/python" -m pip install -q $PIN setuptools
"$VENV/bin/python" -m pip install -q $PIN torch==2.13.0   # alone first, so that nothing can pull a CUDA build
"$VENV/bin/python" -m pip install -q $PIN --no-build-isolation -e '.[build]'
mkdir -p build
"$VENV/bin/python" -m pip freeze --exclude-editable | LC_ALL=C sort > build/freeze.txt
unpinned=$("$VENV/bin/python" - <<'EOF'
import re
pins = {re.split("[=<>!~ ]", l.strip())[0].lower().replace("_", "-")
        for l in open("packaging/constraints.txt") if l.strip() and not l.startswith("#")}
for line in open("build/freeze.txt"):
    name = re.split("[=@ ]", line.strip())[0].lower().replace("_", "-")
    if name and name not in pins:
        print(line.strip())
EOF
)
if [ -n "$unpinned" ]; then echo "build: not pinned in packaging/constraints.txt: $unpinned" >&2; exit 1; fi

# 3. Provenance: the version and the commit go into the frozen build; timestamps come from the commit.
VERSION=$("$VENV/bin/python" -c "import re; print(re.search(r'^version = \"(.+)\"', open('pyproject.toml').read(), re.M)[1])")
COMMIT=$(git rev-parse --short=7 HEAD)
git diff --quiet HEAD -- core gui packaging pyproject.toml || COMMIT="$COMMIT-dirty"
export SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export PYTHONHASHSEED=0
trap 'rm -f core/_build_info.py' EXIT
printf '__commit__ = "%s"\n' "$COMMIT" > core/_build_info.py

# 4. Freeze (what is left out, and why: packaging/trim.py).
NAME="dcstudio-$VERSION-linux-x86_64"
rm -rf "dist/dcstudio" "dist/$NAME" "dist/$NAME.tar.gz" "dist/$NAME.tar.gz.sha256"
nice -n 10 "$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN --distpath dist --workpath build \
    packaging/dcstudio.spec
rm -f core/_build_info.py
mv dist/dcstudio "dist/$NAME"
nice -n 10 "$VENV/bin/python" packaging/trim.py strip "dist/$NAME" build/dcstudio/stripped.tsv

# 5. Licences, install notes, build information.
"$VENV/bin/python" packaging/licenses.py --manifest build/dcstudio/manifest.json --out "dist/$NAME/LICENSES"
"$VENV/bin/python" packaging/finish.py --bundle "dist/$NAME" --version "$VERSION" --commit "$COMMIT" \
    --archive "$NAME.tar.gz" --freeze build/freeze.txt
cp "dist/$NAME/INSTALL.txt" dist/INSTALL.txt

# 6. The archive: sorted names, fixed owner and times, no gzip timestamp, so equal inputs give equal bytes.
find "dist/$NAME" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=gnu \
    -C dist -cf - "$NAME" | nice -n 10 gzip -n > "dist/$NAME.tar.gz"
(cd dist && sha256sum "$NAME.tar.gz" > "$NAME.tar.gz.sha256")

# 7. Figures.
secs=$(( $(date +%s) - start ))
files=$(find "dist/$NAME" -type f | wc -l)
unpacked=$(du -sb "dist/$NAME" | cut -f1)
archive=$(stat -c %s "dist/$NAME.tar.gz")
removed=$(awk -F'\t' '{s+=$2} END {print s+0}' build/dcstudio/removed.tsv)
stripped=$(awk -F'\t' '{s+=$2-$3} END {print s+0}' build/dcstudio/stripped.tsv)
cat <<EOF | tee build/figures.txt
version:        $("dist/$NAME/dcstudio" --version)
build time:     $((secs / 60)) min $((secs % 60)) s
unpacked:       $((unpacked / 1000000)) MB ($unpacked bytes) in $files files
archive:        $((archive / 1000000)) MB ($archive bytes)  dist/$NAME.tar.gz
sha256:         $(cut -d' ' -f1 "dist/$NAME.tar.gz.sha256")
removed:        $((removed / 1000000)) MB in $(wc -l < build/dcstudio/removed.tsv) files (build/dcstudio/removed.tsv)
stripped:       $((stripped / 1000000)) MB saved (build/dcstudio/stripped.tsv)
EOF
