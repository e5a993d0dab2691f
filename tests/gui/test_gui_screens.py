"""Laptop screens (issue #11 point 2): the wizard and the analyst window, opened on a 1366×768 screen at
device-pixel ratio 1 and 2, show their key widgets whole. Each ratio runs ``tests/gui/screens_check.py`` in a
child process, because a Qt application's screen is fixed when it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("dpr", [1, 2])
def test_key_widgets_fully_visible_on_a_laptop(tmp_path, dpr):
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": dpr}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "gui" / "screens_check.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
