"""Draws a method's result views (:mod:`core.methods.views`) with pyqtgraph and Qt tables.

The panel knows the six view kinds, never a method: a new method's tables and plots appear here (and in
the report) by returning them from ``Method.views``.

The window keeps responding while a result is drawn (issue #36): :meth:`ViewsPanel.show_views` draws one view per
event-loop turn (a long table a block of rows per turn), and :func:`for_display` — run off the UI thread, where the
views are computed — bins a heatmap of many sites to at most :data:`HEATMAP_DRAWN_MAX` rows and columns, so no
drawing step grows with the number of sites.

Test hooks: ``show_views(views)``, ``drawn`` (emitted when every view is drawn; ``done``), ``finish()`` (draw the
rest now), ``widgets`` (one per view drawn, in order), ``plots`` (the pyqtgraph PlotWidgets), ``kinds`` (the view
class names drawn).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor
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

from core.api.common import Bars, Curve, Heatmap, Scatter, Table, Text, View

from .plots import category_ticks, cluster_color, legend_below, make_plot
from .widgets import esc, plain, plain_tip

MAX_POINTS = 20000  # drawn; the projection itself uses every row
HEATMAP_DRAWN_MAX = 300  # a heatmap of more rows or columns is drawn binned (for_display)
TABLE_ROWS_PER_TURN = 200  # a long table is filled this many rows per event-loop turn


def for_display(views: list[View]) -> list[View]:
    """The views as the panel draws them: a heatmap of more than :data:`HEATMAP_DRAWN_MAX` rows or columns becomes
    the means of blocks of them (:func:`core.report.block_means`), labelled by the range of sites each block holds.
    Call it where the views are computed (a job's thread): binning 10,000 × 10,000 takes seconds."""
    from core.api.analyst import block_means

    out = []
    for v in views:
        M = np.asarray(v.matrix) if isinstance(v, Heatmap) else None
        if M is None or max(M.shape) <= HEATMAP_DRAWN_MAX:
            out.append(v)
            continue
        binned, fy, fx = block_means(M, HEATMAP_DRAWN_MAX)

        def ranges(labels: list[str], f: int, n: int) -> list[str]:
            return [str(labels[a]) if f == 1 else f"{labels[a]} … {labels[min(a + f, n) - 1]}" for a in range(0, n, f)]

        out.append(replace(v, title=f"{v.title} (each cell the mean of {fy} × {fx})", matrix=binned,
                           row_labels=ranges(list(v.row_labels), fy, M.shape[0]),
                           col_labels=ranges(list(v.col_labels), fx, M.shape[1])))
    return out


class CellValues(pg.GraphicsObject):
    """Every cell's value written in a small heatmap, painted by one item (a TextItem per cell cost ~0.6 ms each)."""

    def __init__(self, M: np.ndarray):
        super().__init__()
        self.M = np.asarray(M, dtype=np.float64)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF(0, 0, self.M.shape[1], self.M.shape[0])

    def paint(self, painter, *args) -> None:
        painter.save()
        scale = painter.transform().m11() or 1.0  # pixels per cell: text is drawn at its own size, not the data's
        painter.setPen(QColor("#111827"))
        for i in range(self.M.shape[0]):
            for j in range(self.M.shape[1]):
                painter.save()
                painter.translate(j + 0.5, i + 0.5)
                painter.scale(1 / scale, 1 / abs(painter.transform().m22() or 1.0))
                painter.drawText(QRectF(-40, -10, 80, 20), Qt.AlignCenter, f"{self.M[i, j]:.2f}")
                painter.restore()
        painter.restore()


def _text(v: Text) -> QWidget:
    label = QLabel(plain(v.text))
    label.setWordWrap(True)
    label.setTextFormat(Qt.PlainText)
    if v.tip:
        label.setToolTip(plain_tip(v.tip))  # the method's terms and exact figures behind the plain words
    if v.tone == "warning":
        label.setStyleSheet("color:#92400e;")
    return label


def _table(v: Table, rows: int | None = None) -> QWidget:
    """The table's widget with its first ``rows`` rows filled (all by default); :func:`_fill_rows` fills more."""
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
    box.table = t
    _fill_rows(v, t, 0, len(v.rows) if rows is None else rows)
    t.horizontalHeader().setSectionResizeMode(len(v.columns) - 1, QHeaderView.Stretch)
    t.setMinimumHeight(min(260, 40 + 28 * len(v.rows)))
    lay.addWidget(t)
    return box


def _fill_rows(v: Table, t: QTableWidget, start: int, stop: int) -> None:
    """Rows ``start`` … ``stop`` − 1 of the table; its columns are sized to the rows of the first block."""
    bar_cols = {v.columns.index(c) for c in v.bars if c in v.columns}
    for r in range(start, min(stop, len(v.rows))):
        for c, cell in enumerate(v.rows[r]):
            if c in bar_cols:
                names = v.bar_labels or [str(k + 1) for k in range(len(cell))]
                text = ", ".join(f"{n}: {x}" for n, x in zip(names, cell, strict=False))
            else:
                text = str(cell)
            item = QTableWidgetItem(plain(text))  # site names and notes: text the sites' files carried
            item.setToolTip(plain_tip(text))
            t.setItem(r, c, item)
    if start == 0:
        t.resizeColumnsToContents()
        t.horizontalHeader().setSectionResizeMode(len(v.columns) - 1, QHeaderView.Stretch)


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
    if n <= 12 and M.shape[1] <= 12:
        w.addItem(CellValues(M))
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
    """Texts and tables across the full width, then plots, in a scroll area; drawn a view per event-loop turn (module
    docstring), each plot given its room (issue #33 item 10): as tall as the visible part of the panel (so a plot,
    its title and its legend are whole once scrolled to), two side by side only when each is still
    :data:`PLOT_WIDTH` wide, one per row otherwise. Resizing the panel lays the plots out again."""

    drawn = Signal()  # every view of the last show_views is drawn

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
        self._todo: list = []  # steps still to draw: (view,) or (view, widget, next row) for a table's rows
        self._at = (0, 0)  # the grid cell the next widget goes to
        self._step = QTimer(self)
        self._step.setSingleShot(True)
        self._step.setInterval(0)
        self._step.timeout.connect(self._draw_next)

    @property
    def done(self) -> bool:
        return not self._todo

    def clear(self) -> None:
        self._todo = []
        self._step.stop()
        for w in self.widgets:
            self._grid.removeWidget(w)
            w.deleteLater()
        self.widgets, self.plots, self.kinds = [], [], []
        self._at = (0, 0)
        self._columns = 0

    def show_views(self, views: list[View]) -> None:
        """Draw ``views``, one per event-loop turn, from now on (``drawn`` when all are)."""
        self.clear()
        self._columns = self.plot_columns()
        self._todo = [(v,) for v in views]
        self._step.start()

    def finish(self) -> None:
        """Draw every view still waiting, now."""
        while self._todo:
            self._draw_next(schedule=False)

    def _draw_next(self, schedule: bool = True) -> None:
        if not self._todo:
            return
        step = self._todo.pop(0)
        if len(step) == 3:  # more rows of a long table
            v, box, start = step
            _fill_rows(v, box.table, start, start + TABLE_ROWS_PER_TURN)
            if start + TABLE_ROWS_PER_TURN < len(v.rows):
                self._todo.insert(0, (v, box, start + TABLE_ROWS_PER_TURN))
        else:
            self._place(step[0])
        if self._todo:
            if schedule:
                self._step.start()
        else:
            self._lay_out()
            self.drawn.emit()

    def _place(self, v: View) -> None:
        if isinstance(v, Table):
            w = _table(v, TABLE_ROWS_PER_TURN)
            if len(v.rows) > TABLE_ROWS_PER_TURN:
                self._todo.insert(0, (v, w, TABLE_ROWS_PER_TURN))
        else:
            w = render_view(v)
        self.widgets.append(w)
        self.kinds.append(type(v).__name__)
        if not isinstance(v, Text | Table):
            self.plots.append(w)
            w.setFixedHeight(self.plot_height())
        self._add(w, plot=not isinstance(v, Text | Table))

    def _add(self, w: QWidget, plot: bool) -> None:
        """Put ``w`` at the next grid cell: a text or table (or a plot, one per row) across the width."""
        row, col = self._at
        if plot and self._columns == 2:
            self._grid.addWidget(w, row, col)
            row, col = (row, 1) if col == 0 else (row + 1, 0)
        else:
            if col:
                row, col = row + 1, 0
            self._grid.addWidget(w, row, 0, 1, 2)
            row += 1
        self._at = (row, col)

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
        self._at = (0, 0)
        for w in self.widgets:
            self._add(w, plot=id(w) in plots)
        if self._stretch_row >= 0:
            self._grid.setRowStretch(self._stretch_row, 0)
        row, col = self._at
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
        if not self.plots or self._todo:  # still drawing: laid out once the last view is drawn
            return
        if self.plot_columns() != self._columns:
            self._lay_out()
        else:
            self._fit_heights()
