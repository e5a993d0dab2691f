#!/usr/bin/env bash
# Build the desktop bundle (dist/dcstudio/) with the pinned stack. Run from the repository root.
set -euo pipefail
make install
.venv/bin/python -m pip install -q -c packaging/constraints.txt -e '.[build]'
.venv/bin/pyinstaller --noconfirm --clean --distpath dist --workpath build packaging/dcstudio.spec
echo "built: dist/dcstudio/dcstudio  (no arguments: desktop app; with arguments: the dcstudio CLI)"
