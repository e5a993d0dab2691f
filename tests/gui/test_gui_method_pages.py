"""Every method's pages in its own words (issue #27 point 3): after a real round on tiny data, no page of the
analyst window shows a word or a control that belongs to DC-CFL only (its threshold t, the automatic-t panel, its
hold-out fifth, total variation) or a method's jargon without plain words (guard, micro-clusters, MCPL, NN ratio,
bundle bytes, collaborative dimension, hashed ids, equation numbers)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

import pyqtgraph as pg  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractButton,
    QGroupBox,
    QLabel,
    QTableWidget,
    QTabWidget,
    QWidget,
)

from benchmarks.simulation.projects import build_clustering_project, build_project  # noqa: E402
from core.methods import method_class  # noqa: E402
from tests.support.gui import HANG, analyst_window_with_bundles, train_models, until  # noqa: E402

# Shown words that belong to DC-CFL alone, or are a method's terms that a data manager cannot read (they may
# stay in tooltips and docstrings).
DCCFL_ONLY = ("a fifth", "choose t", "threshold t", "automatic t", "t = ", "tv distance", "total-variation",
              "total variation", "not used by method", "cluster model", "one model per cluster", "similar patients")
JARGON = ("eqs.", "eq. ", "nn ratio", "nn distance", "bundle bytes", "guard", "micro-cluster", "micro cluster",
          "mcpl", "remc", "collaborative dimension", "hashed ids", "kl divergence", "distilled sets",
          # issue #33 item 14: terms shown without their explanation (they stay in tooltips)
          "cochran", " df (", "df, p", "closeness to real rows", "heterogeneity i²", "silhouette for")

CLASSIFICATION = {
    "hfldd": ({"min_steps": 20, "local_epochs": 3, "anchor_rows": 40}, {"kip_steps": 10, "init": "means"}),
    "feddag": ({"warmup_rounds": 1, "warmup_epochs": 1, "cv_folds": 2, "alpha_grid": [0.3, 0.6]}, {}),
    "meta-lr": ({}, {}),
}
CLUSTERING = {"gold": {"k": "auto"}, "dcclustering": {"k": "auto", "k_range": [2, 4]}}


def shown_texts(window) -> list[str]:
    """Every text a person sees in the window's visible widgets: labels, buttons, group titles, tab titles, table
    headers and cells, and plots' titles, axis names and legends (tags stripped, tooltips excluded). The Project
    page's form for a new kit is left out: it shows the method the analyst picks for a new kit (DC-CFL first)."""
    out: list[str] = []
    new_kit = window.project_page.settings_form
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w is new_kit or new_kit.isAncestorOf(w):
            continue
        if isinstance(w, QLabel):
            out.append(w.text())
        elif isinstance(w, QAbstractButton):
            out.append(w.text())
        elif isinstance(w, QGroupBox):
            out.append(w.title())
        elif isinstance(w, QTabWidget):
            out += [w.tabText(i) for i in range(w.count()) if w.isTabVisible(i)]
        elif isinstance(w, QTableWidget):
            for c in range(w.columnCount()):
                head = w.horizontalHeaderItem(c)
                out.append(head.text() if head is not None else "")
                out += [w.item(r, c).text() for r in range(w.rowCount()) if w.item(r, c) is not None]
        elif isinstance(w, pg.PlotWidget):
            item = w.getPlotItem()
            out.append(item.titleLabel.text)
            for name in ("left", "bottom"):
                axis = item.getAxis(name)
                if axis.isVisible():
                    out.append(axis.labelText)
            legend = item.legend
            if legend is not None and legend.isVisible():
                out += [label.text for _, label in legend.items]
    return [re.sub(r"<[^>]+>", " ", t) for t in out if t]


def offending(texts: list[str], words) -> list[tuple[str, str]]:
    """(word, text) for each listed word a text holds as whole words ("choose t" is not in "choose the")."""
    found = []
    for word in words:
        pattern = re.compile(r"(?<!\w)" + re.escape(word) + (r"(?!\w)" if word[-1].isalnum() else ""))
        found += [(word, t[:200]) for t in texts if pattern.search(t.lower())]
    return found


def walk_pages(qtbot, aw) -> dict[str, list[str]]:
    """The shown texts of every page the window lets the analyst open."""
    seen = {}
    for key in aw.PAGE_KEYS:
        if aw.show_page(key):
            if key == "models":  # its explanation and settings too, folded away once a result is shown
                aw.models_page.setup_toggle.setChecked(True)
            qtbot.wait(30)
            page = aw.pages[key]
            if hasattr(page, "ensure_fresh"):
                page.ensure_fresh()
            seen[key] = shown_texts(aw)
    return seen


def check_round(qtbot, aw, method: str) -> None:
    train_models(qtbot, aw)
    qtbot.waitUntil(lambda: aw.state.result is not None, timeout=HANG)
    views = aw.models_page.views  # the result is drawn on later event-loop turns, a view per turn
    until(qtbot, views.drawn, lambda: views.done and bool(views.widgets))
    seen = walk_pages(qtbot, aw)
    assert "models" in seen
    cls = method_class(method)
    words = JARGON + (DCCFL_ONLY if method != "dccfl" else ())
    for key, texts in seen.items():
        assert not offending(texts, words), (method, key, offending(texts, words))
    mp, cp = aw.models_page, aw.clients_page
    assert aw.show_page("models")
    qtbot.wait(30)
    assert not mp.t_row.isVisible() or cls.threshold_setting() is not None
    if aw.show_page("clients"):
        qtbot.wait(30)
        assert cp.auto_box.isVisible() == cls.page_texts().auto_panel
        if cls.threshold_setting() is None:
            assert not cp.t_spin.isVisible() and not cp.auto_t_check.isVisible()


@pytest.mark.parametrize("method", sorted(CLASSIFICATION))
def test_classification_methods_pages_speak_their_own_words(qtbot, tmp_path, method):
    settings, site = CLASSIFICATION[method]
    p = build_project(tmp_path / "p", n_sites=3, rows=90, epochs=2, method=method, settings=settings,
                      site_settings=site)
    aw = analyst_window_with_bundles(qtbot, p.kit, p.identity, p.passphrase, p.bundles)
    check_round(qtbot, aw, method)
    if method == "feddag":  # its cut is α, named as such on both pages
        assert "α" in aw.clients_page.t_spin.prefix() and "α" in aw.models_page.t_caption.text()
    if method == "meta-lr":  # nothing to compare between sites: no Clients step, no loss to watch
        assert not aw.show_page("clients") and not aw.models_page.loss_plot.isVisible()


@pytest.mark.parametrize("method", sorted(CLUSTERING))
def test_clustering_methods_pages_speak_their_own_words(qtbot, tmp_path, method):
    p = build_clustering_project(tmp_path / "p", n_sites=3, rows=80, method=method, settings=CLUSTERING[method])
    aw = analyst_window_with_bundles(qtbot, p.kit, p.identity, p.passphrase, p.bundles)
    check_round(qtbot, aw, method)
    assert aw.show_page("clustering")


def test_every_method_declares_its_page_texts():
    """Each registered method's pages name a threshold only when it has one, and DC-CFL's words stay its own."""
    from core.methods import METHODS

    for name, cls in METHODS.items():
        texts = cls.page_texts()
        assert texts.models, name
        if name not in ("dccfl",):
            assert not offending([texts.models, texts.clients, texts.loss, texts.accuracy, texts.distance],
                                 DCCFL_ONLY + JARGON), name
        if cls.threshold_setting() is None:
            assert not texts.auto_panel, name
