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


DPRS = (1, 2)


@pytest.fixture(scope="module")
def screen_runs(tmp_path_factory):
    """One child run of ``screens_check.py`` per device-pixel ratio, all started at once (each is mostly
    start-up and waiting on its own window, so together they take little more than one)."""
    runs = {}
    for dpr in DPRS:
        folder = tmp_path_factory.mktemp(f"screen-dpr{dpr}")
        config = folder / "screen.json"
        config.write_text(json.dumps({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768,
                                                   "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": dpr}]}))
        env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "PYTHONPATH": str(ROOT)}
        runs[dpr] = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                                      f"--basetemp={folder / 'tmp'}", str(ROOT / "tests" / "gui" / "screens_check.py")],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield runs
    for proc in runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("dpr", DPRS)
def test_key_widgets_fully_visible_on_a_laptop(screen_runs, dpr):
    proc = screen_runs[dpr]
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout[-4000:] + stderr[-2000:]
