"""The look every plot of the app shares: one palette for clusters, white plots with dark axes (as the report)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics

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


def set_title(w: pg.PlotWidget, title: str) -> None:
    """Give a plot ``title`` in the shared look, shortened with "…" whenever the plot is too narrow for it (the
    whole title is the plot's tooltip), so that no title is cropped at either end."""
    w._full_title = title
    w.setToolTip(title)
    item = w.getPlotItem()
    if not title:
        item.setTitle(None)
        return

    def fit(*_):
        font = QFont()
        font.setPointSizeF(10)
        # the title spans the plot area's column only: the plot's width less the axes and colour bar beside it
        beside = max(0.0, item.boundingRect().width() - item.vb.width()) if item.vb.width() > 0 else 60.0
        room = max(40, int(w.width() - beside) - 16)
        text = QFontMetrics(font).elidedText(w._full_title, Qt.ElideRight, room)
        item.setTitle(text, color="#111827", size="10pt")

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
