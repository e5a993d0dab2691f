"""The results window's plots, one tab each: rows per predicted class (or cluster); with validated labelled
rows, the ROC and calibration curves of the package beside the site's own model (and the shared model as
sent); and the figures table."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QWidget,
)

from core.api.common import UPDATE_WORDS, calibration_points, figure_rows, roc_points
from core.api.participant import ApplyResult

from ..plots import GREY, PALETTE, make_plot
from ..widgets import EmptyNote, plain


class ResultCharts(QTabWidget):
    """Tabs ``plot`` (``bars``, ``plot_note`` until a result), ``check_tab`` (``roc_plot`` / ``roc_curves``,
    ``calibration_plot`` / ``calibration_curves`` / ``risk_bars``, the ``operating_point``) and
    ``figures_table``; the last two only with scored labelled rows."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setLabel("left", self.tr("rows"))
        self.plot.setMinimumHeight(200)
        self.plot_note = EmptyNote(self.plot, self.tr("After you apply the package, a bar chart here shows how many "
                                                      "of your rows got each predicted class (or cluster)."))
        self.bars: pg.BarGraphItem | None = None

        # -- the check on labelled rows: ROC, calibration, figures
        self.roc_plot = make_plot(self.tr("ROC curve on your labelled rows"), self.tr("1 − specificity"),
                                  self.tr("sensitivity"))
        self.calibration_plot = make_plot(self.tr("Calibration: observed against predicted risk"),
                                          self.tr("predicted risk"), self.tr("observed rate"))
        for plot in (self.roc_plot, self.calibration_plot):
            plot.setMouseEnabled(x=False, y=False)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.setXRange(0, 1, padding=0.02)
            plot.setYRange(0, 1, padding=0.02)
            plot.setAspectLocked(False)
        self.roc_curves: dict[str, pg.PlotDataItem] = {}
        self.calibration_curves: dict[str, pg.PlotDataItem] = {}
        self.risk_bars: pg.BarGraphItem | None = None
        self.operating_point: pg.ScatterPlotItem | None = None
        self.check_tab = QWidget()
        cl = QHBoxLayout(self.check_tab)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.roc_plot)
        cl.addWidget(self.calibration_plot)
        self.figures_table = QTableWidget(0, 4)
        self.figures_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.figures_table.verticalHeader().setVisible(False)
        self.figures_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.figures_table.horizontalHeader().setStretchLastSection(True)
        self.addTab(self.plot, self.tr("Predicted classes"))
        self.addTab(self.check_tab, self.tr("ROC and calibration"))
        self.addTab(self.figures_table, self.tr("Figures"))
        for i in (1, 2):
            self.setTabEnabled(i, False)

    def show_counts(self, column: str, counts: list[tuple[str, int]]) -> None:
        """A bar per predicted class (or cluster), its count above it."""
        self.plot.clear()
        self.plot_note.hide_note()
        names = [n for n, _ in counts]
        heights = np.array([k for _, k in counts], dtype=float)
        self.bars = pg.BarGraphItem(x=np.arange(len(names)), height=heights, width=0.6, brush="#2563eb")
        self.plot.addItem(self.bars)
        for i, h in enumerate(heights):
            label = pg.TextItem(f"{int(h):,}", color="#111827", anchor=(0.5, 1.0))
            label.setPos(i, h)
            self.plot.addItem(label)
        self.plot.getAxis("bottom").setTicks([[(i, plain(n)) for i, n in enumerate(names)]])
        what = self.tr("cluster") if column == "cluster" else self.tr("predicted class")
        self.plot.setTitle(self.tr("Rows per {what}").format(what=what), color="#111827")
        self.plot.setLabel("bottom", what)
        self.plot.setXRange(-0.6, max(len(names) - 0.4, 0.6), padding=0)
        self.plot.setYRange(0, max(float(heights.max()) if heights.size else 1.0, 1.0) * 1.15, padding=0)

    def show_check(self, result: ApplyResult) -> None:
        """ROC and calibration of the package and the site's own model, and the figures (the check tabs are
        enabled only with scored labelled rows; curves only with two classes)."""
        scored = result.scored
        for i in (1, 2):
            self.setTabEnabled(i, scored is not None)
        self.roc_plot.clear()
        self.calibration_plot.clear()
        self.roc_curves, self.calibration_curves, self.risk_bars, self.operating_point = {}, {}, None, None
        self.figures_table.setRowCount(0)
        if scored is None:
            self.setCurrentIndex(0)
            return
        v = result.validation
        own = bool(v.get("own_model_package"))
        models = [("package", self.tr("your own model") if own else self.tr("the package"), v["package_metrics"],
                   scored["package"])]
        if not own and result.choice and result.choice.get("kind") in UPDATE_WORDS:
            models[0] = ("package", self.tr("in use"), v["package_metrics"], scored["package"])
        if v.get("local_metrics"):
            models.append(("local", self.tr("your own model"), v["local_metrics"], scored["local"]))
        if v.get("sent_metrics") and scored.get("sent") is not None:
            models.append(("sent", self.tr("shared, as sent"), v["sent_metrics"], scored["sent"]))
        self._fill_figures(models, scored["classes"])
        if result.threshold is not None:
            self._draw_curves(scored["y"], models)
            self.setCurrentIndex(1)
        else:
            self.setCurrentIndex(2)

    def mark_operating_point(self, fpr: float, tpr: float) -> None:
        """The chosen threshold's point on the ROC curve."""
        if self.operating_point is not None:
            self.operating_point.setData([fpr], [tpr])

    def _fill_figures(self, models: list, classes: list[str]) -> None:
        rows = figure_rows([m for _, _, m, _ in models], classes)
        heads = [self.tr("figure")] + [label for _, label, _, _ in models] + [self.tr("counted on")]
        self.figures_table.setColumnCount(len(heads))
        self.figures_table.setHorizontalHeaderLabels(heads)
        self.figures_table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                self.figures_table.setItem(i, j, QTableWidgetItem(text))

    def _draw_curves(self, y: np.ndarray, models: list) -> None:
        self.roc_plot.addLegend(offset=(-8, -8), labelTextColor="#111827")
        self.calibration_plot.addLegend(offset=(8, 8), labelTextColor="#111827")
        diagonal = pg.mkPen(GREY, width=1, style=Qt.DashLine)
        self.roc_plot.plot([0, 1], [0, 1], pen=diagonal)
        self.calibration_plot.plot([0, 1], [0, 1], pen=diagonal)
        hist = calibration_points(y, models[0][3][:, 1])["histogram"]
        tallest = max(max(hist), 1)
        width = 1.0 / len(hist)
        self.risk_bars = pg.BarGraphItem(x0=np.arange(len(hist)) * width, height=0.25 * np.asarray(hist) / tallest,
                                         width=width * 0.9, brush=pg.mkBrush(156, 163, 175, 90), pen=None,
                                         name=self.tr("risks of the package (histogram)"))
        self.calibration_plot.addItem(self.risk_bars)
        for k, (key, label, m, P) in enumerate(models):
            pen = pg.mkPen(PALETTE[k], width=2)
            fpr, tpr = roc_points(y, P[:, 1])
            self.roc_curves[key] = self.roc_plot.plot(fpr, tpr, pen=pen, name=f"{label} (AUC {m['auc']:.3f})")
            cal = calibration_points(y, P[:, 1])
            self.calibration_curves[key] = self.calibration_plot.plot(
                cal["predicted"], cal["observed"], pen=pen, symbol="o", symbolSize=6, symbolBrush=PALETTE[k],
                name=f"{label} (slope {m['calibration_slope']:.2f})")
        self.operating_point = pg.ScatterPlotItem(size=11, brush=pg.mkBrush(PALETTE[0]), pen=pg.mkPen("#111827"))
        self.roc_plot.addItem(self.operating_point)
        self.roc_plot.setXRange(0, 1, padding=0.02)
        self.roc_plot.setYRange(0, 1, padding=0.02)
        self.calibration_plot.setXRange(0, 1, padding=0.02)
        self.calibration_plot.setYRange(0, 1, padding=0.02)
