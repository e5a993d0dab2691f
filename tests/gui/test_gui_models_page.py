"""Issue #33 item 10: the Models page's Sites table names every column and shows a site's note whole; the Results
tab gives each plot its room (as tall as the visible panel, a legend beside the curves never on them, a title
wrapped rather than cut, one plot per row when two would be narrow)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtCore import QRect, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QTableWidget  # noqa: E402

from core.methods.views import Curve, Table, Text  # noqa: E402
from gui.analyst.models import NOTE_WIDTH, fill_sites_table  # noqa: E402
from gui.screen import fully_visible, reveal  # noqa: E402
from gui.views_panel import PLOT_HEIGHT, PLOT_WIDTH, ViewsPanel  # noqa: E402
from gui.widgets import plain_tip  # noqa: E402

NOTE = ("its cluster's model did not beat the site's own model (cross-validated at the site) by more than 1.645 "
        "standard errors (one-sided 5 %); the site keeps its own model")


def _sites():
    interval = {"accuracy": 0.8, "low": 0.7, "high": 0.88, "rows": 120, "weak": False}
    return [{"site": "North", "fingerprint": "AAAA", "rows": 120, "cluster": 1, "model": "cluster",
             "expected": interval, "own_model": interval, "expected_gain": 0.01, "expected_auc": 0.81,
             "own_kind": "linear", "shared_kind": "mlp", "weight": 0.5, "note": NOTE},
            {"site": "South", "fingerprint": "BBBB", "rows": 80, "cluster": 2, "model": "cluster",
             "update": {"by": "site", "estimate": "blend", "weight": 0.8, "sentence": "a blend did best"},
             "expected": interval, "own_model": interval, "expected_gain": -0.02, "expected_auc": 0.7}]


def test_every_column_has_a_header_and_the_note_is_last_and_whole(qtbot):
    t = QTableWidget()
    qtbot.addWidget(t)
    t.resize(1100, 400)
    t.show()
    fill_sites_table(t, _sites(), {"weight": ("Gradient weight", "w")})
    heads = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert all(heads) and heads[-1] == "Note" and "Gradient weight" in heads
    assert "Own kind" not in heads and "Shared kind" not in heads  # the package's internals stay out
    model = t.item(1, heads.index("Model the site uses"))
    assert "site decides" in model.text() and "80% shared" in model.text() and "a blend did best" in model.toolTip()
    note = t.item(0, len(heads) - 1)
    assert note.text() == NOTE and note.toolTip() == plain_tip(NOTE)  # the whole note, also in its tooltip
    rect = t.visualItemRect(note)
    assert t.columnWidth(len(heads) - 1) >= NOTE_WIDTH  # readable, not a sliver
    needed = t.fontMetrics().boundingRect(QRect(0, 0, rect.width() - 12, 10_000), Qt.TextWordWrap, NOTE).height()
    assert needed <= rect.height(), (needed, rect)  # wrapped within its row, not cut at the cell's end


def _settle() -> None:
    """Deliver the posted layout and resize events (no waiting on the clock)."""
    for _ in range(3):
        QApplication.processEvents()


def _views():
    long = "Calibration per site, out-of-fold (observed event rate per tenth of the risk scale; largest sites)"
    x = [i / 10 for i in range(11)]
    series = {f"Site number {k} with a long name (240 rows, 40 events)": [v ** (1 + k / 5) for v in x]
              for k in range(5)}
    return [Text("Some words first."), Table("Sites", ["site", "rows"], [["North", 1], ["South", 2]]),
            *[Curve(f"{long} {i}", x, dict(series), xlabel="predicted risk", ylabel="observed rate") for i in range(3)]]


@pytest.mark.parametrize("size,columns", [((980, 440), 2), ((800, 300), 1)])
def test_each_plot_has_its_room(qtbot, size, columns):
    panel = ViewsPanel()
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    with qtbot.waitSignal(panel.drawn):  # drawn a view per event-loop turn
        panel.show_views(_views())
    _settle()
    assert panel.plot_columns() == columns
    view_h = panel.viewport().height()
    for plot in panel.plots:
        reveal(plot)
        _settle()
        assert fully_visible(plot)  # whole once scrolled to
        assert plot.height() <= view_h or plot.height() == PLOT_HEIGHT[0]
        assert plot.height() >= min(PLOT_HEIGHT[0], view_h) and plot.width() >= min(PLOT_WIDTH, size[0] // 2) - 40
        item = plot.getPlotItem()
        title = item.titleLabel
        assert "…" not in title.text and title.item.boundingRect().width() <= plot.width()  # wrapped, not cut
        legend, box = item.legend, item.vb
        assert legend is not None and len(legend.items) == 5
        assert not legend.sceneBoundingRect().intersects(box.sceneBoundingRect())  # beside the curves, not on them
    panel.resize(size[0] + (-300 if columns == 2 else 300), size[1])  # a resize lays the plots out again
    _settle()
    assert panel.plot_columns() == 3 - columns
