"""Key widgets are fully visible on a 1366×768 laptop screen. Run by ``tests/gui/test_gui_screens.py`` in a child
process whose offscreen screen is a 1366×768 panel at 100 %, 125 % or 150 % scaling (a 1093×614 or 911×512
logical screen) or at device-pixel ratio 2 (a 2732×1536 panel), so the windows open exactly as they would there.
A widget counts as visible when it is whole once the page is scrolled to it (:func:`gui.screen.reveal`), as a
person would scroll. Not collected on its own (its name has no ``test_`` prefix).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtCore import QSize  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QApplication, QWizard  # noqa: E402

from benchmarks.simulation.projects import build_clustering_project, build_project  # noqa: E402
from gui.participant import ParticipantWizard  # noqa: E402
from gui.screen import fit_window, fully_visible, reveal, text_fits, visible_rows, window_fits  # noqa: E402
from gui.views_panel import PLOT_HEIGHT  # noqa: E402
from tests.gui.test_gui_analyst import built, import_all, open_window, project  # noqa: E402, F401
from tests.gui.test_gui_participant import drive_to_export  # noqa: E402
from tests.gui.test_gui_participant import project as site_project  # noqa: E402, F401
from tests.support.gui import analyst_window_with_bundles, train_models, wait_job, wait_page  # noqa: E402


def test_the_screen_is_a_laptop(qapp):
    screen = QGuiApplication.primaryScreen()
    panel = float(os.environ.get("DCSTUDIO_TEST_PANEL_DPR", "1"))  # device pixels per panel pixel
    ratio = screen.devicePixelRatio() / panel
    assert round(screen.geometry().width() * ratio) == 1366 and round(screen.geometry().height() * ratio) == 768


def _plots_whole(*plots) -> list[str]:
    """Plots whose title is cut (wider than the plot) or whose view misses part of the data range it was given."""
    bad = []
    for p in plots:
        label = p.getPlotItem().titleLabel
        if label.isVisible() and label.item.boundingRect().width() > p.width():
            bad.append(f"title of {p.getPlotItem().titleLabel.text!r}")
    return bad


def _legends_on_curves(*plots) -> list[str]:
    """Plots whose legend overlaps their plot area (a legend belongs beside the curves, never on them)."""
    bad = []
    for p in plots:
        item = p.getPlotItem()
        legend = item.legend
        if legend is not None and legend.isVisible() and legend.sceneBoundingRect().intersects(
                item.vb.sceneBoundingRect()):
            bad.append(p.getPlotItem().titleLabel.text)
    return bad


def _titles_cut(*plots) -> list[str]:
    """Plots whose title had to be shortened with "…" (a title wraps onto a second line first)."""
    return [p._full_title for p in plots if "…" in p.getPlotItem().titleLabel.text and "…" not in p._full_title]


def _clipped_by(widget) -> str:
    """The first ancestor that cuts ``widget`` (for the failure message)."""
    from PySide6.QtCore import QRect

    window = widget.window()
    rect = QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        clip = QRect(parent.mapTo(window, parent.rect().topLeft()), parent.size())
        if not clip.contains(rect):
            return f"{type(widget).__name__} {rect} cut by {type(parent).__name__} {clip}"
        parent = parent.parentWidget()
    return f"{type(widget).__name__} {rect} outside the window {window.rect()}"


def _visible(*widgets) -> list[str]:
    """The widgets not wholly shown even after scrolling to each (a person scrolls; nothing may be cut)."""
    bad = []
    for w in widgets:
        for _ in range(3):  # scrolled to again while a layout just changed settles (posted events on a busy machine)
            reveal(w)
            QApplication.processEvents()
            if fully_visible(w):
                break
        if not fully_visible(w):
            name = getattr(w, "_full_title", "") or w.objectName() or type(w).__name__
            bad.append((name, _clipped_by(w), w.minimumSizeHint()))
    return bad


def test_wizard_fits_a_laptop(qtbot, site_project, tmp_path):  # noqa: F811
    w = ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert window_fits(w), (w.width(), w.height())
    drive_to_export(qtbot, w, site_project, tmp_path, create=True)
    w.back()
    w.back()
    w.back()
    ip = w.identity_page
    assert w.page_name() == "identity"
    qtbot.wait(50)
    assert not _visible(ip.fingerprint_view.text, ip.fingerprint_view.qr, w.button(QWizard.NextButton))
    assert text_fits(ip.fingerprint_view.text)
    w.next()
    kp = w.kit_page
    qtbot.wait(50)
    assert not _visible(kp.analyst_view.text, kp.analyst_view.qr, kp.fingerprint_edit, w.button(QWizard.NextButton))
    assert text_fits(kp.analyst_view.text)
    w.resize(w.minimumSizeHint())  # even at its smallest the fingerprint is whole
    qtbot.wait(50)
    assert text_fits(kp.analyst_view.text), (kp.analyst_view.text.width(), w.size())
    fit_window(w, QSize(960, 720))
    w.next()
    w.next()
    dp = w.data_page
    dp.set_csv(site_project["sites"]["site0"][0])
    wait_page(qtbot, dp)
    qtbot.wait(50)
    assert window_fits(w)
    reveal(dp.preview_view)
    assert visible_rows(dp.preview_view) >= 6, visible_rows(dp.preview_view)
    reveal(dp.columns_table)
    assert visible_rows(dp.columns_table) >= 5, visible_rows(dp.columns_table)
    assert not _visible(dp.preview_view, dp.columns_table, dp.impute_check, w.button(QWizard.NextButton))
    w.next()
    pp = w.privacy_page
    wait_page(qtbot, pp)
    qtbot.wait(50)
    assert not _visible(pp.site_form.widget("reduction"), pp.site_form.widget("dimension"), pp.plain_label,
                        pp.leaves_label, pp.details_button, w.button(QWizard.NextButton))
    pp.details_button.click()  # the technical disclosure, opened, shows every array that leaves
    qtbot.wait(50)
    assert pp.disclosure_table.rowCount() >= 4
    assert visible_rows(pp.disclosure_table) == pp.disclosure_table.rowCount(), visible_rows(pp.disclosure_table)
    assert not _visible(pp.disclosure_table, w.button(QWizard.NextButton))


def _models_and_clients_whole(qtbot, w) -> None:
    """After a round: every key widget of the Models, Clients, Data clustering and Export pages is whole once
    scrolled to, and no plot title is cut."""
    assert window_fits(w), (w.width(), w.height())
    mp, cp = w.models_page, w.clients_page
    assert w.show_page("models")
    qtbot.wait(50)
    shown = [x for x in (mp.train_button, mp.result_label, mp.result_tabs) if x.isVisible()]
    assert not _visible(*shown)
    assert mp.result_tabs.isTabVisible(mp.result_tabs.currentIndex())  # a shown tab, never a hidden one's empty pane
    for k in range(mp.result_tabs.count()):
        if mp.result_tabs.isTabVisible(k):
            mp.result_tabs.setCurrentIndex(k)
            qtbot.wait(30)
            plots = [x for x in (mp.loss_plot, mp.accuracy_plot, mp.metrics_table) if x.isVisible()]
            assert not _visible(*plots), k
            assert not _plots_whole(*[x for x in plots if x is not mp.metrics_table])
    if mp.metrics_table.rowCount():
        mp.result_tabs.setCurrentWidget(mp.metrics_table)
        qtbot.wait(30)
        reveal(mp.metrics_table)
        assert visible_rows(mp.metrics_table) == mp.metrics_table.rowCount()
        t = mp.metrics_table  # every column named (issue #33 item 10)
        assert all(t.horizontalHeaderItem(c) is not None and t.horizontalHeaderItem(c).text()
                   for c in range(t.columnCount()))
    # issue #33 item 10: once a result is shown the explanation and settings fold away, and the Results tab gives
    # each plot its room: whole once scrolled to, its legend beside the curves, its title wrapped rather than cut
    assert not mp.setup.isVisible() and mp.train_button.isVisible()
    if mp.views.plots:
        mp.result_tabs.setCurrentWidget(mp.views)
        mp.views.finish()  # the views are drawn one per event-loop turn: every one now, laid out once
        try:  # a title is fitted to its plot's width when the plot's layout settles (posted events, a busy machine)
            qtbot.waitUntil(lambda: not _titles_cut(*mp.views.plots), timeout=10_000)
        except qtbot.TimeoutError:
            pass  # the assertion below names the titles still cut
        room = mp.views.viewport().height()
        # the page's height goes to the result, not to its settings, less what its warnings need (the last walk saw
        # 440 of 728 pixels at 100 %, 287 of 574 at 125 %)
        said = sum(x.height() for x in (mp.minority_warning, mp.message, mp.fingerprint_warning) if x.isVisible())
        assert room >= 0.58 * w.height() - said, (w.state.kit.method, room, w.height(), said)
        assert not _visible(*mp.views.plots)
        assert not _plots_whole(*mp.views.plots) and not _titles_cut(*mp.views.plots)
        assert not _legends_on_curves(*mp.views.plots)
        assert all(p.height() >= min(PLOT_HEIGHT[0], room - 20) for p in mp.views.plots)
    if w.show_page("clients"):
        qtbot.wait(50)
        cp.ensure_fresh()
        parts = [x for x in (cp.clusters_label, cp.heatmap_plot, cp.dendrogram_plot, cp.bars_plot, cp.bars_legend,
                             cp.validation_plot, cp.auto_t_label, cp.chosen_label, *cp.companion_plots)
                 if x.isVisible()]
        assert not _visible(*parts)
        assert not _plots_whole(*[x for x in parts if hasattr(x, "getPlotItem")])
        for plot in (cp.heatmap_plot, *cp.companion_plots):  # the whole matrix is in view
            (x0, x1), (y0, y1) = plot.getViewBox().viewRange()
            n = len(cp.names)
            assert x0 <= 0.01 and x1 >= n - 0.01 and y0 <= 0.01 and y1 >= n - 0.01, (plot, n, x0, x1)
    if w.show_page("clustering"):
        w.clustering_page.views.finish()  # (drawn a view per event-loop turn otherwise)
        qtbot.wait(50)
        assert not _visible(*w.clustering_page.views.plots[:1])
    if w.show_page("export"):
        qtbot.wait(50)


def test_analyst_window_fits_a_laptop(qtbot, project):  # noqa: F811
    w = open_window(qtbot, project)
    qtbot.waitExposed(w)
    assert window_fits(w), (w.width(), w.height())
    page = w.project_page
    qtbot.wait(50)
    fp = page.fingerprint_view
    assert not _visible(fp.text, fp.qr), (fp.qr.geometry(), page.size())
    assert text_fits(fp.text)
    # at 100 % and 125 % (a 1093-pixel-wide screen) the page needs no sideways scrolling: no button or check box is
    # cut at the right (issue #33 item 14)
    if QGuiApplication.primaryScreen().geometry().width() >= 1093:
        assert not page.parentWidget().parentWidget().horizontalScrollBar().isVisible(), page.minimumSizeHint()
    assert not _visible(page.kit_browse_button, page.open_kit_button, page.identity_browse_button)
    page.sample_edit.setText(str(project.sample))
    wait_job(qtbot, page.load_sample(str(project.sample)))
    assert not _visible(page.sample_browse_button, page.ranges_check, page.statistics_check, page.method_combo)
    if QGuiApplication.primaryScreen().geometry().width() >= 1093:
        assert not page.parentWidget().parentWidget().horizontalScrollBar().isVisible(), page.minimumSizeHint()
    import_all(qtbot, w, project)
    assert w.show_page("bundles")
    qtbot.wait(50)
    table = w.bundles_page.table
    reveal(table)
    assert visible_rows(table) >= 6
    train_models(qtbot, w)
    qtbot.waitUntil(lambda: w.models_page.metrics_table.rowCount() > 0)
    _models_and_clients_whole(qtbot, w)


def _method_project(tmp_path, method: str):
    """(kit, identity, passphrase, bundles) of a tiny ``method`` project: a private copy of the one the parent test
    built once for every screen (``DCSTUDIO_TEST_PROJECTS``), or built here when run alone."""
    listed = os.environ.get("DCSTUDIO_TEST_PROJECTS")
    if listed:
        entry = json.loads(Path(listed).read_text())[method]
        root = tmp_path / method
        shutil.copytree(entry["root"], root)
        return (root / entry["kit"], root / entry["identity"], entry["passphrase"],
                [root / b for b in entry["bundles"]])
    p = build_method_project(tmp_path / method, method)
    return p.kit, p.identity, p.passphrase, p.bundles


OTHER_METHODS = ("hfldd", "gold", "feddag", "meta-lr", "dcclustering", "dc")  # DC-CFL: the test above


def test_every_other_methods_pages_fit_a_laptop(qtbot, tmp_path):
    """Every other method's Models and Clients pages (hfldd's two heatmaps, feddag's fused matrix, meta-lr without
    a Clients step, the clustering methods' pages, dc's single group) on the same screen."""
    for method in OTHER_METHODS:
        kit, identity, passphrase, bundles = _method_project(tmp_path, method)
        w = analyst_window_with_bundles(qtbot, kit, identity, passphrase, bundles)
        train_models(qtbot, w)
        _models_and_clients_whole(qtbot, w)
        w.close()


def build_method_project(root: Path, method: str):
    """A tiny project of ``method`` for the screen checks (the small settings of the per-method page tests)."""
    from tests.gui.test_gui_method_pages import CLASSIFICATION, CLUSTERING

    if method in CLUSTERING:
        return build_clustering_project(root, n_sites=3, rows=60, method=method, settings=CLUSTERING[method])
    if method == "hfldd":
        return build_project(root, n_sites=3, rows=80, epochs=2, method="hfldd",
                             settings={"min_steps": 10, "local_epochs": 2, "anchor_rows": 40, "clusters": 2},
                             site_settings={"kip_steps": 10, "init": "means"})
    settings, site = CLASSIFICATION.get(method, ({}, {}))
    return build_project(root, n_sites=3, rows=80, epochs=2, method=method, settings=settings, site_settings=site)
