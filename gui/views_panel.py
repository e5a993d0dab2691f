"""Draws a method's result views (:mod:`core.methods.views`) with pyqtgraph and Qt tables.

The panel knows the six view kinds, never a method: a new method's tables and plots appear here (and in
the report) by returning them from ``Method.views``.

Test hooks: ``show_views(views)``, ``widgets`` (one per view, in order), ``plots`` (the pyqtgraph
PlotWidgets), ``kinds`` (the view class names shown).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.methods.views import Bars, Curve, Heatmap, Scatter, Table, Text, View

from .plots import category_ticks, cluster_color, legend_below, make_plot
from .widgets import esc, plain, plain_tip

MAX_POINTS = 20000  # drawn; the projection itself uses every row


def _text(v: Text) -> QWidget:
    label = QLabel(plain(v.text))
    label.setWordWrap(True)
    label.setTextFormat(Qt.PlainText)
    if v.tip:
        label.setToolTip(plain_tip(v.tip))  # the method's terms and exact figures behind the plain words
    if v.tone == "warning":
        label.setStyleSheet("color:#92400e;")
    return label


def _table(v: Table) -> QWidget:
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    title = QLabel(f"<b>{esc(v.title)}</b>")
    title.setWordWrap(True)  # a long title wraps: it must not make the panel wider than its window
    lay.addWidget(title)
    t = QTableWidget(len(v.rows), len(v.columns))
    t.setHorizontalHeaderLabels([plain(c) for c in v.columns])
    for c, name in enumerate(v.columns):
        if v.tips.get(name):
            t.horizontalHeaderItem(c).setToolTip(plain_tip(v.tips[name]))
    t.setEditTriggers(QAbstractItemView.NoEditTriggers)
    t.verticalHeader().setVisible(False)
    bar_cols = {v.columns.index(c) for c in v.bars if c in v.columns}
    for r, row in enumerate(v.rows):
        for c, cell in enumerate(row):
            if c in bar_cols:
                names = v.bar_labels or [str(k + 1) for k in range(len(cell))]
                text = ", ".join(f"{n}: {x}" for n, x in zip(names, cell, strict=False))
            else:
                text = str(cell)
            item = QTableWidgetItem(plain(text))  # site names and notes: text the sites' files carried
            item.setToolTip(plain_tip(text))
            t.setItem(r, c, item)
    t.resizeColumnsToContents()
    t.horizontalHeader().setSectionResizeMode(len(v.columns) - 1, QHeaderView.Stretch)
    t.setMinimumHeight(min(260, 40 + 28 * len(v.rows)))
    lay.addWidget(t)
    return box


def _heatmap(v: Heatmap) -> pg.PlotWidget:
    w = make_plot(v.title)
    M = np.asarray(v.matrix, dtype=np.float64)
    img = pg.ImageItem(M.T)
    img.setLevels([v.low, v.high])
    img.setColorMap(pg.colormap.get("CET-L12"))
    w.addItem(img)
    n = len(M)
    item = w.getPlotItem()
    item.invertY(True)
    ticks = [[(i + 0.5, plain(name)) for i, name in enumerate(v.row_labels)]]
    item.getAxis("left").setTicks(ticks)
    category_ticks(w, "bottom", [(j + 0.5, plain(name)) for j, name in enumerate(v.col_labels)])
    if n <= 12:
        for i in range(n):
            for j in range(M.shape[1]):
                label = pg.TextItem(f"{M[i, j]:.2f}", color="#111827", anchor=(0.5, 0.5))
                label.setPos(j + 0.5, i + 0.5)
                w.addItem(label)
    w.setMouseEnabled(False, False)
    w.setRange(xRange=(0, M.shape[1]), yRange=(0, n), padding=0.02)  # every row and column whole
    return w


def _curve(v: Curve) -> pg.PlotWidget:
    w = make_plot(v.title, x=v.xlabel, y=v.ylabel)
    legend = legend_below(w, list(v.series)) if len(v.series) > 1 else None
    for k, (name, ys) in enumerate(v.series.items()):
        line = w.plot(list(v.x), list(ys), pen=pg.mkPen(cluster_color(k), width=2), symbol="o", symbolSize=6,
                      symbolBrush=cluster_color(k))
        if legend is not None:
            legend.addItem(line, plain(name))
    if v.mark is not None:
        w.addItem(pg.InfiniteLine(v.mark, angle=90, pen=pg.mkPen("#dc2626", style=Qt.DashLine)))
    if v.x and all(float(x).is_integer() for x in v.x):  # e.g. k: whole-number ticks only
        w.getPlotItem().getAxis("bottom").setTicks([[(float(x), f"{int(x)}") for x in v.x]])
    return w


def _scatter(v: Scatter) -> pg.PlotWidget:
    w = make_plot(v.title, x=v.xlabel, y=v.ylabel)
    P, labels = np.asarray(v.points), np.asarray(v.labels)
    idx = np.arange(len(P))
    if len(P) > MAX_POINTS:
        idx = np.sort(np.random.default_rng(0).choice(len(P), MAX_POINTS, replace=False))
    colours = {int(c): pg.mkBrush(cluster_color(int(c))) for c in np.unique(labels[idx])}
    dots = pg.ScatterPlotItem(size=5, pen=pg.mkPen(None))
    dots.setData(P[idx, 0], P[idx, 1], brush=[colours[int(c)] for c in labels[idx]])
    w.addItem(dots)
    if v.centres is not None and len(v.centres):
        C = np.asarray(v.centres)
        marks = pg.ScatterPlotItem(size=16, symbol="x", pen=pg.mkPen("#111827", width=2),
                                   brush=pg.mkBrush("#111827"))
        marks.setData(C[:, 0], C[:, 1])
        marks.setZValue(10)
        w.addItem(marks)
    return w


def _bars(v: Bars) -> pg.PlotWidget:
    w = make_plot(v.title, y=v.ylabel)
    xs = np.arange(len(v.values))
    w.addItem(pg.BarGraphItem(x=xs, height=list(v.values), width=0.7,
                              brushes=[cluster_color(k) for k in range(len(xs))]))
    category_ticks(w, "bottom", [(int(x), str(name)) for x, name in zip(xs, v.labels, strict=True)])
    w.setYRange(0, max([1.0, *v.values]) * 1.1, padding=0)  # bars start at zero, so their heights compare
    w.setMouseEnabled(False, False)
    return w


_RENDER = {Text: _text, Table: _table, Heatmap: _heatmap, Curve: _curve, Scatter: _scatter, Bars: _bars}


def render_view(v: View) -> QWidget:
    """One view as its widget (a PlotWidget for plots), as the panel draws it."""
    return _RENDER[type(v)](v)


PLOT_WIDTH = 440  # a plot narrower than this (logical pixels) puts its neighbour on the next row
PLOT_HEIGHT = (180, 620)  # the least and most height a plot takes; between them, the panel's visible height


class ViewsPanel(QScrollArea):
    """Texts and tables across the full width, then plots in a scroll area, each plot given its room (issue #33 item
    10): as tall as the visible part of the panel (so a plot, its title and its legend are whole once scrolled to),
    two side by side only when each is still :data:`PLOT_WIDTH` wide, one per row otherwise. Resizing the panel
    lays the plots out again."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.NoFrame)
        self.widgets: list[QWidget] = []
        self.plots: list[pg.PlotWidget] = []
        self.kinds: list[str] = []
        self._columns = 0
        self._stretch_row = -1
        self._inner = QWidget()
        self._grid = QGridLayout(self._inner)
        self.setWidget(self._inner)

    def clear(self) -> None:
        for w in self.widgets:
            self._grid.removeWidget(w)
            w.deleteLater()
        self.widgets, self.plots, self.kinds = [], [], []
        self._columns = 0

    def show_views(self, views: list[View]) -> None:
        self.clear()
        for v in views:
            w = render_view(v)
            self.widgets.append(w)
            self.kinds.append(type(v).__name__)
            if not isinstance(v, Text | Table):
                self.plots.append(w)
        self._lay_out()

    def plot_columns(self) -> int:
        """How many plots share a row at the panel's width: 2 when each keeps :data:`PLOT_WIDTH`, else 1."""
        spacing = self._grid.horizontalSpacing() if self._grid.horizontalSpacing() >= 0 else 6
        margins = self._grid.contentsMargins()
        room = self.viewport().width() - margins.left() - margins.right() - spacing
        return 2 if room >= 2 * PLOT_WIDTH else 1

    def plot_height(self) -> int:
        """The height every plot takes: the panel's visible height (less the grid's margins), within
        :data:`PLOT_HEIGHT`."""
        margins = self._grid.contentsMargins()
        room = self.viewport().height() - margins.top() - margins.bottom()
        return max(PLOT_HEIGHT[0], min(PLOT_HEIGHT[1], room))

    def _lay_out(self) -> None:
        self._columns = self.plot_columns()
        for w in self.widgets:
            self._grid.removeWidget(w)
        plots = {id(p) for p in self.plots}
        row = col = 0
        for w in self.widgets:
            if id(w) not in plots:
                if col:
                    row, col = row + 1, 0
                self._grid.addWidget(w, row, 0, 1, 2)
                row += 1
            elif self._columns == 2:
                self._grid.addWidget(w, row, col)
                row, col = (row, 1) if col == 0 else (row + 1, 0)
            else:
                self._grid.addWidget(w, row, 0, 1, 2)
                row += 1
        if self._stretch_row >= 0:
            self._grid.setRowStretch(self._stretch_row, 0)
        self._stretch_row = row + (1 if col else 0)
        self._grid.setRowStretch(self._stretch_row, 1)
        self._fit_heights()

    def _fit_heights(self) -> None:
        h = self.plot_height()
        for p in self.plots:
            if p.height() != h or p.minimumHeight() != h:
                p.setFixedHeight(h)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        if not self.plots:
            return
        if self.plot_columns() != self._columns:
            self._lay_out()
        else:
            self._fit_heights()
