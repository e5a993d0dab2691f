"""Laptop screens (issue #11 point 2, issue #27 point 1): the wizard and the analyst window, opened on a 1366×768
panel at 100 %, 125 % and 150 % scaling (logical DPI 96, 120, 144) and at device-pixel ratio 2, show their key
widgets whole, on every method's pages. Each screen runs ``tests/gui/screens_check.py`` in a child process,
because a Qt application's screen is fixed when it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import HANG_S

ROOT = Path(__file__).resolve().parents[2]


SCREENS = {"100%": (96, 1), "dpr2": (96, 2), "125%": (120, 1), "150%": (144, 1)}  # name: (logical DPI, DPR)


@pytest.fixture(scope="module")
def method_projects(tmp_path_factory) -> Path:
    """The tiny projects of every other method that every screen's run opens (built once, here; each run copies
    them)."""
    from tests.gui.screens_check import OTHER_METHODS, build_method_project

    root = tmp_path_factory.mktemp("screen-projects")
    listed = {}
    for method in OTHER_METHODS:
        p = build_method_project(root / method, method)
        listed[method] = {"root": str(p.root), "kit": str(p.kit.relative_to(p.root)),
                          "identity": str(p.identity.relative_to(p.root)), "passphrase": p.passphrase,
                          "bundles": [str(b.relative_to(p.root)) for b in p.bundles]}
    path = root / "projects.json"
    path.write_text(json.dumps(listed))
    return path


@pytest.fixture(scope="module")
def screen_runs(tmp_path_factory, method_projects):
    """One child run of ``screens_check.py`` per screen, all started at once (each is mostly start-up and
    waiting on its own window, so together they take little more than one)."""
    runs = {}
    for name, (dpi, dpr) in SCREENS.items():
        folder = tmp_path_factory.mktemp(f"screen-{name.rstrip('%')}")
        config = folder / "screen.json"
        config.write_text(json.dumps({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768,
                                                   "logicalDpi": dpi, "logicalBaseDpi": 96, "dpr": dpr}]}))
        env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "PYTHONPATH": str(ROOT),
               "DCSTUDIO_TEST_PANEL_DPR": str(dpr), "DCSTUDIO_TEST_PROJECTS": str(method_projects)}
        runs[name] = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                                      f"--basetemp={folder / 'tmp'}", str(ROOT / "tests" / "gui" / "screens_check.py")],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield runs
    for proc in runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("screen", list(SCREENS))
def test_key_widgets_fully_visible_on_a_laptop(screen_runs, screen):
    proc = screen_runs[screen]
    stdout, stderr = proc.communicate(timeout=HANG_S)
    # a crash's stack comes before faulthandler's list of extension modules: keep the stack, not the list
    assert proc.returncode == 0, stdout[-4000:] + stderr.split("\nExtension modules:")[0][-6000:]
    assert " passed" in stdout and "skipped" not in stdout, stdout[-2000:]  # every check really ran
