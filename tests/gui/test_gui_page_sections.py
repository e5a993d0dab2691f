"""The two largest windows are built from section widgets (issue #34): every test hook their docstrings name is
still the page's own attribute, and it is the very widget of the section that holds it, so a test reaches a
widget as before and a forgotten forward fails here rather than in a round."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtWidgets import QWidget  # noqa: E402

import gui.analyst.project as project_module  # noqa: E402
from gui.analyst.window import AnalystWindow  # noqa: E402
from gui.participant import ResultsWindow  # noqa: E402
from gui.sections import forward  # noqa: E402


def _hooks(doc: str) -> set[str]:
    """The names a docstring gives as ``name``, ``name(…)`` or ``name.attr`` (the first part only)."""
    return {m.group(1) for m in re.finditer(r"``([a-z_][a-z0-9_]*)", doc)}


def _check(page: QWidget, doc: str, sections: list[str]) -> None:
    hooks = _hooks(doc)
    assert len(hooks) > 30, hooks
    missing = [name for name in sorted(hooks) if not hasattr(page, name)]
    assert not missing, missing
    for name in sections:  # each section is a widget of its own, inside the page
        section = getattr(page, name)
        assert isinstance(section, QWidget) and type(section).__module__ != type(page).__module__
        assert page.isAncestorOf(section)
    forwarded = [n for n, v in vars(type(page)).items() if isinstance(v, property) and n in hooks]
    assert forwarded
    for name in forwarded:  # a forwarded widget is the section's own, not a copy
        value = getattr(page, name)
        if isinstance(value, QWidget):
            assert page.isAncestorOf(value), name


def test_project_page_keeps_its_hooks(qtbot):
    w = AnalystWindow()
    qtbot.addWidget(w)
    page = w.project_page
    _check(page, project_module.__doc__, ["identity_section", "kit_section", "sample_section", "method_section"])
    page.log_n = 14  # the objects a test sets reach the section that holds them
    assert page.identity_section.log_n == 14


def test_results_window_keeps_its_hooks(qtbot):
    r = ResultsWindow()
    qtbot.addWidget(r)
    _check(r, ResultsWindow.__doc__, ["identity_box", "package_box", "rows_box", "summary", "tabs",
                                      "threshold_box"])
    assert r.tabs.widget(0) is r.plot and r.chosen_threshold() == 0.5


def test_forward_is_read_only_unless_asked():
    class Section:
        a = 1

    class Page:
        section = Section()
        a = forward("section", "a")
        b = forward("section", "a", settable=True)

    page = Page()
    with pytest.raises(AttributeError):
        page.a = 2
    page.b = 3
    assert page.section.a == 3 and page.a == 3
