"""The look every plot of the app shares: one palette for clusters, white plots with dark axes (as the report)."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QSizePolicy

# Okabe–Ito-like qualitative palette (readable for colour-blind users), then tab10 for more clusters.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
           "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
GREY = "#9ca3af"


def cluster_color(index: int) -> QColor:
    return QColor(PALETTE[int(index) % len(PALETTE)])


def make_plot(title: str = "", x: str = "", y: str = "") -> pg.PlotWidget:
    """A white plot with dark axes and labels (the look of the HTML report)."""
    w = pg.PlotWidget(background="w")
    item = w.getPlotItem()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen("#374151"))
        axis.setTextPen(pg.mkPen("#374151"))
        axis.enableAutoSIPrefix(False)
    set_title(w, title)
    if x:
        item.setLabel("bottom", x)
    if y:
        item.setLabel("left", y)
    item.showGrid(x=False, y=True, alpha=0.15)
    w.setMinimumHeight(180)
    return w


class _LegendInLayout(pg.LegendItem):
    """A legend that lives in a layout cell: it asks its layout for room instead of placing itself."""

    def updateSize(self) -> None:  # noqa: N802 (pyqtgraph name)
        self.updateGeometry()


def legend_below(w: pg.PlotWidget, names: list[str]) -> pg.LegendItem:
    """A legend under the plot's x axis, in the plot's own layout (row 4, the plot area's column): it never covers a
    curve, and the plot area shrinks to make room for it. Entries run in two columns when there are more than
    three short ``names`` (side by side when fewer), else one under the other. Add entries with
    ``legend.addItem(line, name)``."""
    columns = min(len(names), 2 if len(names) > 3 else 3) if max(len(n) for n in names) <= 22 else 1
    item = w.getPlotItem()
    legend = _LegendInLayout(colCount=columns, labelTextColor="#111827", labelTextSize="9pt", frame=False,
                             horSpacing=16)
    # a legend wider than the plot area is cut at its right end rather than pushing the plot area aside
    legend.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
    item.layout.addItem(legend, 4, 1)
    item.layout.setRowStretchFactor(4, 0)
    item.legend = legend  # where pyqtgraph (and the tests reading a plot's legend) look for it
    return legend


TITLE_LINES = 3  # a long title wraps onto up to this many lines before it is shortened with "…" (the screens
# check at DPR 2 once found an 80-character title shortened on two)


def wrap_title(text: str, metrics: QFontMetrics, room: int, lines: int = TITLE_LINES) -> list[str]:
    """``text`` broken at spaces into at most ``lines`` lines of at most ``room`` pixels each; the last line is
    shortened with "…" only when the words do not fit in ``lines`` lines."""
    out: list[str] = []
    words = text.split(" ")
    while words and len(out) < lines - 1:
        line = words.pop(0)
        while words and metrics.horizontalAdvance(line + " " + words[0]) <= room:
            line += " " + words.pop(0)
        out.append(line)
    if words:
        out.append(" ".join(words))
    return [metrics.elidedText(x, Qt.ElideRight, room) for x in out]


def set_title(w: pg.PlotWidget, title: str) -> None:
    """Give a plot ``title`` in the shared look, wrapped onto up to three lines (``TITLE_LINES``) when the plot is
    too narrow for it and shortened with "…" only beyond that (the whole title is the plot's tooltip), so that no
    title is cropped at either end."""
    w._full_title = title
    w.setToolTip(title)
    item = w.getPlotItem()
    if not title:
        item.setTitle(None)
        return

    def fit(*_):
        font = QFont()
        font.setPointSizeF(10)
        metrics = QFontMetrics(font)
        # the title spans the plot area's column only: the plot's width less the axes and colour bar beside it
        beside = max(0.0, item.boundingRect().width() - item.vb.width()) if item.vb.width() > 0 else 60.0
        room = max(40, int(w.width() - beside) - 16)
        lines = wrap_title(w._full_title, metrics, room)
        item.setTitle("<br>".join(html.escape(x, quote=False) for x in lines), color="#111827", size="10pt")
        height = metrics.lineSpacing() * len(lines) + 12
        item.titleLabel.setMaximumHeight(height)
        item.layout.setRowFixedHeight(0, height)

    if getattr(w, "_title_fit", None) is None:
        w._title_fit = fit
        w._title_watch = _OnResize(w, lambda: w._title_fit())  # the widget, not its view box: a long title
        w.getViewBox().sigResized.connect(lambda *_: w._title_fit())  # can hold the view box at its width
    w._title_fit = fit
    fit()


class _OnResize(QObject):
    """Calls ``then()`` after every resize of ``widget``."""

    def __init__(self, widget, then):
        super().__init__(widget)
        self._then = then
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QEvent.Resize:
            self._then()
            # once more after the resize's layout has settled: the plot item's axes and view box take their new
            # sizes a turn later, and a title fitted to the old ones stays shortened until the next resize
            QTimer.singleShot(0, self, self._then)
        return False


def category_ticks(w: pg.PlotWidget, axis: str, ticks: list[tuple[float, str]]) -> None:
    """Name categories along ``axis`` ("bottom" or "left") and shorten each name with "…" to the room between
    neighbouring ticks whenever the plot is resized (pyqtgraph would otherwise drop or overlap crowded labels);
    the axis's tooltip lists every full name."""
    item = w.getPlotItem()
    ax = item.getAxis(axis)
    ax.setToolTip("\n".join(label for _, label in ticks))

    def fit(*_):
        vb = w.getViewBox()
        if len(ticks) < 1 or vb.width() <= 0:
            ax.setTicks([ticks])
            return
        positions = sorted(p for p, _ in ticks)
        step = min((b - a for a, b in zip(positions, positions[1:], strict=False)), default=1.0) or 1.0
        span = vb.viewRange()[0 if axis == "bottom" else 1]
        pixels = (vb.width() if axis == "bottom" else vb.height()) * step / max(span[1] - span[0], 1e-9)
        metrics = QFontMetrics(ax.style.get("tickFont") or QFont())
        room = int(pixels) - 6 if axis == "bottom" else max(40, int(ax.width()) - 8)
        ax.setTicks([[(p, metrics.elidedText(label, Qt.ElideRight, max(room, 12))) for p, label in ticks]])

    vb = w.getViewBox()
    old = getattr(w, "_ticks_fit", {}).get(axis)
    if old is not None:
        vb.sigResized.disconnect(old)
        vb.sigRangeChanged.disconnect(old)
    w._ticks_fit = {**getattr(w, "_ticks_fit", {}), axis: fit}
    vb.sigResized.connect(fit)
    vb.sigRangeChanged.connect(fit)
    fit()
