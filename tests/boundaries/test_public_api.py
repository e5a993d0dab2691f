"""The public API (core.api, issue #34): every name it declares is there, the front ends' modules load only what
their audience needs, and the analyst's side of it never holds the anchor."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("core.api", "core.api.common", "core.api.participant", "core.api.analyst", "core.api.research")


@pytest.mark.parametrize("name", MODULES)
def test_every_declared_name_is_there_once(name):
    module = importlib.import_module(name)
    names = list(module.__all__)
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(module, n)] == []


def test_no_name_is_declared_by_two_api_modules():
    """Each name has one home, so a front end's import line says where it comes from."""
    seen: dict[str, str] = {}
    for name in MODULES:
        for n in importlib.import_module(name).__all__:
            assert n not in seen, f"{n} is in both {seen[n]} and {name}"
            seen[n] = name


def _loaded(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out.stdout.strip() + out.stderr


def test_the_basics_load_no_numerical_library():
    """``core.api`` is light: the app's first screen and the CLI's start import it."""
    code = ("import sys, core.api; print([m for m in ('numpy', 'pandas', 'sklearn', 'scipy', 'torch') "
            "if m in sys.modules])")
    assert _loaded(code) == "[]"


def test_a_sites_and_the_analysts_api_load_no_scipy_sklearn_or_torch():
    """What the export and the analysis call: numpy and pandas, not the heavy libraries (the research API may)."""
    code = ("import sys, core.api.common, core.api.participant, core.api.analyst; "
            "print([m for m in ('scipy', 'sklearn', 'torch') if m in sys.modules])")
    assert _loaded(code) == "[]"


def test_the_analysts_api_does_not_load_the_anchor_module():
    code = "import sys, core.api.analyst; print('core.formats.anchor' in sys.modules)"
    assert _loaded(code) == "False"
