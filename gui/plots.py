"""The look every plot of the app shares: one palette for clusters, white plots with dark axes (as the report)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor

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
    if title:
        item.setTitle(title, color="#111827", size="10pt")
    if x:
        item.setLabel("bottom", x)
    if y:
        item.setLabel("left", y)
    item.showGrid(x=False, y=True, alpha=0.15)
    w.setMinimumHeight(180)
    return w
