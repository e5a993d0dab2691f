"""Data clustering page (kits whose task is clustering): where the rows fell, and why this many clusters.

Reads the details contract of the ``dcclustering`` method's :class:`core.methods.MethodResult`:
``representation`` (n × m̂ collaboration representation), ``labels`` (cluster of each row),
``group_of_row`` (the site/group each row came from), ``centroids`` (k × m̂; ``centroids_representation``
is preferred when present, since spectral clustering's centroids live in its embedding), ``k_curve``
({k: {"silhouette", "inertia"}}) and ``sizes`` (rows per cluster). Plots: a 2-D PCA projection (numpy
SVD) coloured by cluster with the centroids marked, silhouette and inertia against k, and cluster sizes.

Test hooks: ``show_result(result)``, ``has_result``, ``available`` (``"dcclustering" in METHODS``),
``projection_plot``, ``projection`` ((n, 2) array drawn), ``scatter``, ``silhouette_plot``,
``inertia_plot``, ``sizes_plot``, ``info_label``, ``message``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from core.methods import METHODS, MethodResult

from ..widgets import MessageLabel
from .common import cluster_color, make_plot
from .state import AnalystState

MAX_POINTS = 20000  # drawn; the projection itself uses every row


def pca_2d(X: np.ndarray, extra: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Project rows (and optional extra points, e.g. centroids) on the first two principal axes.

    Returns (projected rows, projected extra, explained-variance ratio of the two axes)."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    k = min(2, vt.shape[0])
    axes = vt[:k].T
    P = Xc @ axes
    E = None if extra is None else (np.asarray(extra, dtype=np.float64) - mean) @ axes
    if k < 2:  # a one-column representation: plot it against zero
        P = np.column_stack([P, np.zeros(len(P))])
        E = None if E is None else np.column_stack([E, np.zeros(len(E))])
    var = s**2
    ratio = var[:2] / var.sum() if var.sum() > 0 else np.zeros(2)
    return P, E, np.pad(ratio, (0, 2 - len(ratio)))


class DataClusteringPage(QWidget):
    def __init__(self, state: AnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.result: MethodResult | None = None
        self.projection = np.zeros((0, 2))
        self.available = "dcclustering" in METHODS
        heading = QLabel(self.tr("<h2>Data clustering</h2><p>The rows of every site, clustered together on the "
                                 "collaboration representation. No row left its site: these are the reduced, "
                                 "aligned rows.</p>"))
        heading.setWordWrap(True)
        self.message = MessageLabel()
        if not self.available:
            self.message.show_message("info", self.tr("This version has no data-clustering method yet "
                                                      "(dcclustering); results appear here once it does."))
        self.info_label = QLabel()
        self.info_label.setWordWrap(True)
        self.projection_plot = make_plot(self.tr("Rows on the first two principal axes"))
        self.scatter = pg.ScatterPlotItem(size=5, pen=pg.mkPen(None))
        self.projection_plot.addItem(self.scatter)
        self.centroid_dots = pg.ScatterPlotItem(size=16, symbol="x", pen=pg.mkPen("#111827", width=2),
                                                brush=pg.mkBrush("#111827"))
        self.centroid_dots.setZValue(10)
        self.projection_plot.addItem(self.centroid_dots)
        self.silhouette_plot = make_plot(self.tr("Silhouette (higher is better)"), x="k", y=self.tr("silhouette"))
        self.inertia_plot = make_plot(self.tr("Inertia (within-cluster spread)"), x="k", y=self.tr("inertia"))
        self.sizes_plot = make_plot(self.tr("Rows per cluster"), x=self.tr("cluster"), y=self.tr("rows"))
        for p in (self.silhouette_plot, self.inertia_plot, self.sizes_plot):
            p.setMouseEnabled(False, False)
        grid = QGridLayout()
        grid.addWidget(self.projection_plot, 0, 0, 2, 1)
        grid.addWidget(self.silhouette_plot, 0, 1)
        grid.addWidget(self.inertia_plot, 1, 1)
        grid.addWidget(self.sizes_plot, 2, 0, 1, 2)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        grid.setRowStretch(0, 2)
        grid.setRowStretch(1, 2)
        grid.setRowStretch(2, 1)
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addWidget(self.message)
        lay.addWidget(self.info_label)
        lay.addLayout(grid, 1)
        state.result_changed.connect(self._result_changed)

    @property
    def has_result(self) -> bool:
        return self.result is not None

    def _result_changed(self) -> None:
        r = self.state.result
        if r is not None and "representation" in r.details:
            self.show_result(r)
        elif r is None and self.result is not None:
            self.clear()

    def clear(self) -> None:
        self.result = None
        self.projection = np.zeros((0, 2))
        self.scatter.clear()
        self.centroid_dots.clear()
        for p in (self.silhouette_plot, self.inertia_plot, self.sizes_plot):
            p.clear()
        self.info_label.clear()

    def show_result(self, result: MethodResult) -> None:
        """Draw a data-clustering result (see the module docstring for the details it reads)."""
        self.clear()
        d = result.details
        if "representation" not in d or "labels" not in d:
            self.message.show_message("error", self.tr("This result holds no data clustering to show."))
            return
        self.result = result
        self.message.clear_message()
        R = np.asarray(d["representation"], dtype=np.float64)
        labels = np.asarray(d["labels"], dtype=np.int64).ravel()
        centroids = d.get("centroids_representation", d.get("centroids"))
        if centroids is not None and np.asarray(centroids).shape[-1] != R.shape[1]:
            centroids = None  # centroids of another space (e.g. a spectral embedding)
        elif centroids is not None:
            centroids = np.asarray(centroids, dtype=np.float64)
            centroids = centroids[np.all(np.isfinite(centroids), axis=1)]
        P, C, ratio = pca_2d(R, None if centroids is None else np.asarray(centroids))
        self.projection = P
        k = int(labels.max()) + 1 if len(labels) else 0
        show = np.arange(len(P))
        if len(P) > MAX_POINTS:
            show = np.sort(np.random.default_rng(0).choice(len(P), MAX_POINTS, replace=False))
        brushes = {c: pg.mkBrush(cluster_color(c).red(), cluster_color(c).green(), cluster_color(c).blue(), 170)
                   for c in range(k)}
        self.scatter.setData(x=P[show, 0], y=P[show, 1], brush=[brushes[c] for c in labels[show]])
        if C is not None:
            self.centroid_dots.setData(x=C[:, 0], y=C[:, 1])
        item = self.projection_plot.getPlotItem()
        item.setLabel("bottom", self.tr("PC 1 ({v:.0%} of the variance)").format(v=float(ratio[0])))
        item.setLabel("left", self.tr("PC 2 ({v:.0%})").format(v=float(ratio[1])))

        curve = d.get("k_curve") or {}
        ks = sorted(int(x) for x in curve)
        if ks:
            entries = {int(x): v for x, v in curve.items()}
            for plot, key, color in ((self.silhouette_plot, "silhouette", "#2563eb"),
                                     (self.inertia_plot, "inertia", "#d97706")):
                ys = [float(entries[x].get(key, np.nan)) for x in ks]
                plot.plot(ks, ys, pen=pg.mkPen(color, width=2), symbol="o", symbolSize=7, symbolBrush=color,
                          symbolPen="w")
                plot.addItem(pg.InfiniteLine(pos=k, angle=90, pen=pg.mkPen("#dc2626", style=Qt.DashLine)))
                plot.getPlotItem().getAxis("bottom").setTicks([[(x, str(x)) for x in ks]])

        sizes = np.asarray(d.get("sizes", np.bincount(labels, minlength=k)), dtype=float)
        self.sizes_plot.addItem(pg.BarGraphItem(x=np.arange(len(sizes)), height=sizes, width=0.7,
                                                brushes=[pg.mkBrush(cluster_color(c)) for c in range(len(sizes))],
                                                pen=pg.mkPen(None)))
        for c, v in enumerate(sizes):
            text = pg.TextItem(f"{int(v)}", color="#111827", anchor=(0.5, 1.0))
            text.setPos(c, v)
            self.sizes_plot.addItem(text)
        self.sizes_plot.getPlotItem().getAxis("bottom").setTicks([[(c, str(c + 1)) for c in range(len(sizes))]])
        self.sizes_plot.setYRange(0, max(1.0, float(sizes.max()) * 1.25) if len(sizes) else 1.0, padding=0)

        groups = d.get("group_of_row")
        n_groups = len(np.unique(np.asarray(groups))) if groups is not None else None
        sil = curve.get(k, curve.get(str(k), {})).get("silhouette") if curve else None
        parts = [self.tr("<b>{k}</b> clusters over <b>{n}</b> rows").format(k=k, n=len(labels))]
        if n_groups is not None:
            parts.append(self.tr("from {g} site(s)/block(s)").format(g=n_groups))
        if sil is not None:
            parts.append(self.tr("silhouette {s:.3f}").format(s=float(sil)))
        sizes_int = [int(v) for v in np.bincount(labels, minlength=k)]
        legend = "  ".join(f'<span style="color:{cluster_color(c).name()};font-size:14pt">■</span> '
                           + self.tr("cluster {c} ({n} rows)").format(c=c + 1, n=sizes_int[c]) for c in range(k))
        if C is not None:
            legend += "  <b>✖</b> " + self.tr("centroid")
        self.info_label.setText(", ".join(parts) + ".<br>" + legend)
