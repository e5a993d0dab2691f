"""Clients page: how the sites' label distributions differ, and where to cut them into clusters.

A view over the method's :class:`core.methods.ClientDistances` for the imported bundles (DC-CFL: the
sites' label distributions): the distance heatmap, the complete-linkage dendrogram with a draggable
threshold line that re-cuts the clusters live (``cut(t)``), each cluster's pooled label distribution,
and — after training — the automatically chosen t with its hold-out validation curve. A method that groups
sites otherwise (``ClientDistances.chosen``, e.g. k-means on another matrix) gets its further matrices
(``companions``) drawn beside the heatmap and its chosen groups instead of the cut (no threshold line).

Test hooks: ``threshold_line`` (pyqtgraph InfiniteLine; ``setValue(t)`` emits ``sigPositionChanged`` like
a drag), ``t_spin``, ``auto_t_check``, ``clusters_label``, ``n_clusters``, ``labels`` (cluster of each
site), ``clustering`` (the core object), ``heatmap_plot``/``heatmap_image``, ``dendrogram_plot``,
``bars_plot``, ``validation_plot``, ``auto_t_label``, ``message``, ``companion_plots`` (one PlotWidget per
companion matrix), ``chosen_label``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QVBoxLayout,
    QWidget,
)
from scipy.cluster.hierarchy import dendrogram

from core.api import DCError
from core.api.common import METHODS, ClientDistances, PageTexts, get_method, method_class

from ..plots import GREY, category_ticks, cluster_color, make_plot, set_title
from ..views_panel import render_view
from ..widgets import MessageLabel, esc, plain, plain_tip
from .common import label_counts
from .state import QtAnalystState

DEFAULT_T = 0.2  # where the line starts before a threshold is chosen


def _box(title: str, *widgets: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(6, 6, 6, 6)
    for k, w in enumerate(widgets):
        lay.addWidget(w, 1 if k == 0 else 0)
    return box


def _short(name: str, most: int = 16) -> str:
    """A site's name cut to ``most`` characters with "…" (the full names are in the axis's tooltip)."""
    return name if len(name) <= most else name[: most - 1] + "…"


def _keep_square(plot: pg.PlotWidget, n: int) -> None:
    """Show the whole n × n matrix now and whenever the plot is resized (an aspect-locked view would
    otherwise keep the range it had before the page was laid out and crop the matrix)."""
    vb = plot.getViewBox()

    def fit(*_):
        vb.setRange(xRange=(0, n), yRange=(0, n), padding=0.02)

    if getattr(vb, "_square_fit", None) is not None:
        vb.sigResized.disconnect(vb._square_fit)
    vb._square_fit = fit
    vb.sigResized.connect(fit)
    fit()


class ClientsPage(QWidget):
    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.clustering: ClientDistances | None = None
        self.labels = np.zeros(0, dtype=np.int64)
        self.names: list[str] = []
        self._links: list[tuple[pg.PlotCurveItem, float, float, float]] = []
        self._leaf_x: np.ndarray = np.zeros(0)
        self._leaves: list[int] = []
        self._quiet = False
        self._dirty = False
        self._result_dirty = False

        self.texts = PageTexts(models="")
        self.heading = heading = QLabel(self._heading_text(False))
        heading.setWordWrap(True)
        self.message = MessageLabel()

        # heatmap
        self.heatmap_plot = make_plot(self.tr("Difference between sites"))
        self.heatmap_plot.setMenuEnabled(False)
        self.heatmap_plot.setMouseEnabled(False, False)
        self.heatmap_plot.getPlotItem().showGrid(False, False)
        self.heatmap_plot.invertY(True)
        self.heatmap_plot.setAspectLocked(True)
        self.heatmap_image = pg.ImageItem()
        self.heatmap_plot.addItem(self.heatmap_image)
        self.cmap = pg.ColorMap([0.0, 0.5, 1.0], [(240, 244, 250), (96, 140, 220), (30, 58, 138)])
        self.heatmap_image.setLookupTable(self.cmap.getLookupTable(0.0, 1.0, 256))
        self.heatmap_image.setLevels((0.0, 1.0))
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=self.cmap, interactive=False, width=12)
        self.colorbar.setImageItem(self.heatmap_image, insert_in=self.heatmap_plot.getPlotItem())
        self._cell_texts: list[pg.TextItem] = []
        # the values in the cells only while a cell is wide enough for them (else the colours and the colour bar)
        self.heatmap_plot.getViewBox().sigResized.connect(self._cell_values_fit)

        # dendrogram + threshold
        self.dendrogram_plot = make_plot(self.tr("Which sites are closest (dendrogram)"), y="")
        self.dendrogram_plot.setMenuEnabled(False)
        self.dendrogram_plot.setMouseEnabled(False, False)
        self.dendrogram_plot.hideButtons()
        self.threshold_line = pg.InfiniteLine(pos=DEFAULT_T, angle=0, movable=True, bounds=(0.0, 1.0),
                                              pen=pg.mkPen("#dc2626", width=2, style=Qt.DashLine),
                                              hoverPen=pg.mkPen("#dc2626", width=4),
                                              label="t = {value:.2f}",
                                              labelOpts={"position": 0.93, "color": "#dc2626",
                                                         "fill": (255, 255, 255, 200), "anchors": [(1, 1), (1, 1)]})
        self.threshold_line.setZValue(10)
        self.threshold_line.setToolTip(self.tr("Drag to change the threshold t"))
        self.threshold_line.sigPositionChanged.connect(self._line_moved)
        self.leaf_dots = pg.ScatterPlotItem(size=11, pen=pg.mkPen("w"))
        self.leaf_dots.setZValue(5)
        self.clusters_label = QLabel()
        f = QFont(self.clusters_label.font())
        f.setPointSize(f.pointSize() + 3)
        f.setBold(True)
        self.clusters_label.setFont(f)
        self.t_spin = QDoubleSpinBox()
        self.t_spin.setRange(0.0, 1.0)
        self.t_spin.setSingleStep(0.05)
        self.t_spin.setDecimals(2)
        self.t_spin.setValue(DEFAULT_T)
        self.t_spin.setPrefix("t = ")
        self.t_spin.valueChanged.connect(self._spin_changed)
        self.auto_t_check = QCheckBox()
        self.auto_t_check.toggled.connect(self._auto_toggled)
        controls = QWidget()
        row = QHBoxLayout(controls)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.clusters_label)
        row.addStretch(1)
        row.addWidget(self.t_spin)
        row.addWidget(self.auto_t_check)
        self.chosen_label = QLabel()
        self.chosen_label.setWordWrap(True)
        self.chosen_label.hide()
        self.method_note = QLabel()
        self.method_note.setStyleSheet("color:#6b7280;")
        self.method_note.setWordWrap(True)

        # per-cluster label distributions
        self.bars_plot = make_plot(self.tr("Label mix of each group"), y=self.tr("share of rows"))
        self.bars_plot.setMenuEnabled(False)
        self.bars_plot.setMouseEnabled(False, False)
        self.bars_legend = QLabel()
        self.bars_legend.setWordWrap(True)

        # validation curve (after training)
        self.validation_plot = make_plot("", x="t", y=self.tr("mean accuracy"))
        self.validation_plot.setMenuEnabled(False)
        self.auto_t_label = QLabel()
        self.auto_t_label.setWordWrap(True)

        top, bottom = QWidget(), QWidget()
        row = QHBoxLayout(top)
        row.setContentsMargins(0, 0, 0, 0)
        self.companion_plots: list[pg.PlotWidget] = []
        distances = QWidget()
        self.distances_row = QHBoxLayout(distances)
        self.distances_row.setContentsMargins(0, 0, 0, 0)
        self.distances_row.addWidget(self.heatmap_plot, 1)
        self.top_row = row
        row.addWidget(_box(self.tr("Distances"), distances), 1)
        row.addWidget(_box(self.tr("Clusters"), self.dendrogram_plot, self.chosen_label, self.method_note), 1)
        row = QHBoxLayout(bottom)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(_box(self.tr("Label mix per group"), self.bars_plot, self.bars_legend))
        self.auto_box = _box(self.tr("Automatic choice"), self.validation_plot, self.auto_t_label)
        row.addWidget(self.auto_box)
        self.splitter = QSplitter(Qt.Vertical)
        self.splitter.addWidget(top)
        self.splitter.addWidget(bottom)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addWidget(controls)
        lay.addWidget(self.message)
        lay.addWidget(self.splitter, 1)
        state.bundles_changed.connect(self._bundles_changed)
        state.session_changed.connect(self._session_changed)
        state.threshold_changed.connect(self._threshold_changed)
        state.result_changed.connect(self._result_changed)

    def _heading_text(self, chosen: bool) -> str:
        """The method's own explanation (:class:`core.methods.views.PageTexts`) under the heading."""
        text = self.texts.clients
        if chosen and not text:
            text = self.tr("How the sites differ, and the groups of sites this project's method will train together "
                           "(listed under the dendrogram).")
        return "<h2>" + self.tr("Clients") + "</h2>" + (f"<p>{esc(text)}</p>" if text else "")

    # ---- state → widgets ---------------------------------------------------------------------------------
    @property
    def n_clusters(self) -> int:
        self.ensure_fresh()
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    def _session_changed(self) -> None:
        kit = self.state.kit
        cls = METHODS.get(kit.method) if kit is not None else None
        texts = self.texts = cls.page_texts() if cls is not None else PageTexts(models="")
        self.heading.setText(self._heading_text(self.clustering is not None and self.clustering.chosen is not None))
        axis = self.dendrogram_plot.getPlotItem().getAxis("left")
        axis.setLabel(texts.distance)
        axis.setToolTip(texts.distance_tip)
        name = texts.threshold
        self.threshold_line.label.setFormat(name + " = {value:.2f}")
        self.threshold_line.setToolTip(self.tr("Drag to change the threshold {t}").format(t=name))
        self.t_spin.setPrefix(f"{name} = ")
        self.auto_t_check.setText(self.tr("Let training choose {t} &automatically (best hold-out accuracy)")
                                  .format(t=name))
        set_title(self.validation_plot, self.tr("Hold-out accuracy for each {t} (after training)").format(t=name))
        self.validation_plot.getPlotItem().setLabel("bottom", name)
        self.auto_t_label.setText(self.tr("Train on the Models page to see which {t} the data prefers.")
                                  .format(t=name))
        self.auto_box.setTitle(self.tr("Automatic {t}").format(t=name))
        self.auto_box.setVisible(texts.auto_panel)  # only methods that choose their cut on held-out rows
        self._session_changed_note()
        self._threshold_changed()

    def _session_changed_note(self) -> None:
        kit = self.state.kit
        cls = METHODS.get(kit.method) if kit is not None else None
        if cls is not None and cls.threshold_setting() is None:
            self.method_note.setText(self.tr("This project's method does not group sites by a threshold; the cut "
                                             "is shown for exploring only."))
        else:
            self.method_note.setText("")

    def _threshold_changed(self) -> None:
        t = self.state.t_choice
        self._quiet = True
        self.auto_t_check.setChecked(t == "auto")
        if t != "auto":
            self._set_line(float(t))
        self._quiet = False
        self.recut()

    def _set_line(self, t: float) -> None:
        was = self._quiet
        self._quiet = True
        self.threshold_line.setValue(t)
        self.t_spin.setValue(t)
        self._quiet = was

    def _bundles_changed(self) -> None:
        """Redraw now if visible; otherwise when the page is next shown (keeps imports snappy)."""
        if self.isVisible():
            self.refresh()
        else:
            self._dirty = True

    def showEvent(self, event) -> None:  # noqa: N802
        self.ensure_fresh()
        super().showEvent(event)

    def ensure_fresh(self) -> None:
        """Bring plots up to date now (they are redrawn lazily while the page is hidden)."""
        if self._dirty:
            self.refresh()
        if self._result_dirty:
            self._draw_result()

    def refresh(self) -> None:
        """Refit on the imported bundles' label counts and redraw everything."""
        self._dirty = False
        bundles = self.state.bundles
        K = len(self.state.classes)
        self.names = [b.site for b in bundles]
        self.clustering = None
        self.labels = np.zeros(len(bundles), dtype=np.int64)
        kit = self.state.kit
        try:
            view = None if kit is None else get_method(kit.method, kit.settings).client_distances(
                bundles, list(self.state.classes))
        except DCError as exc:
            self._clear_plots()
            self.message.show_message("error", str(exc))
            return
        if view is None:
            self._clear_plots()
            if kit is not None and method_class(kit.method).threshold_setting() is None and K < 2:
                self.message.show_message("info", self.tr("This project's method does not group sites."))
            elif self.state.session is not None:
                self.message.show_message("info", self.tr("Import at least two bundles to compare sites."))
            self._update_label()
            return
        self.clustering = view
        self.message.clear_message()
        chosen = view.chosen is not None
        self.heading.setText(self._heading_text(chosen))
        for w in (self.threshold_line, self.t_spin, self.auto_t_check):
            w.setVisible(not chosen)
        if chosen:
            self.method_note.setText(self.tr("The dendrogram is for exploring; training groups the sites by {how}.")
                                     .format(how=view.chosen_how or self.tr("the method's own rule")))
        else:
            self._session_changed_note()
        set_title(self.heatmap_plot, view.what[:1].upper() + view.what[1:])
        self._draw_heatmap()
        self._draw_companions()
        self._draw_dendrogram()
        self.recut()

    def current_t(self) -> float:
        return float(self.threshold_line.value())

    def _clear_plots(self) -> None:
        self.heatmap_image.clear()
        for t in self._cell_texts:
            self.heatmap_plot.removeItem(t)
        self._cell_texts = []
        self.dendrogram_plot.clear()
        self._links = []
        self.bars_plot.clear()
        self.bars_legend.clear()
        self.chosen_label.hide()
        self._clear_companions()
        self.heading.setText(self._heading_text(False))
        for w in (self.threshold_line, self.t_spin, self.auto_t_check):
            w.setVisible(True)

    def _clear_companions(self) -> None:
        for w in self.companion_plots:
            self.distances_row.removeWidget(w)
            w.deleteLater()
        self.companion_plots = []
        self.top_row.setStretch(0, 1)
        self.top_row.setStretch(1, 1)

    def _draw_companions(self) -> None:
        """The method's further site × site matrices, beside the distance heatmap, in the dendrogram's order."""
        self._clear_companions()
        order = self._order()
        # two or more matrices side by side take two thirds of the row (each stays square and readable)
        wide = bool(self.clustering.companions)
        self.top_row.setStretch(0, 3 if wide else 1)
        self.top_row.setStretch(1, 2 if wide else 1)
        self.distances_row.setStretch(0, 3 if wide else 1)  # the first matrix also carries names and colour bar
        for v in self.clustering.companions:
            M = np.asarray(v.matrix)
            # numbered like the heatmap beside it (which names the sites): room for the matrix itself
            ordered = replace(v, matrix=M[np.ix_(order, order)],
                              row_labels=[str(k + 1) for k in range(len(order))],
                              col_labels=[str(k + 1) for k in range(len(order))])
            w = render_view(ordered)
            w.setMinimumHeight(200)
            w.setAspectLocked(True)
            _keep_square(w, len(order))
            self.companion_plots.append(w)
            self.distances_row.addWidget(w, 2)

    def _draw_heatmap(self) -> None:
        c = self.clustering
        order = self._order()
        D = c.distances[np.ix_(order, order)]
        self.heatmap_image.setImage(D.T, levels=(0.0, 1.0), autoLevels=False)  # ImageItem is [x, y]
        self.heatmap_image.setRect(0, 0, len(order), len(order))
        names = [self.names[i] for i in order]
        item = self.heatmap_plot.getPlotItem()
        item.getAxis("bottom").setTicks([[(i + 0.5, str(i + 1)) for i in range(len(names))]])
        item.getAxis("left").setTicks([[(i + 0.5, f"{_short(plain(n), 14)}  {i + 1}") for i, n in enumerate(names)]])
        item.getAxis("left").setToolTip(plain_tip("\n".join(f"{i + 1}: {n}" for i, n in enumerate(names))))
        for t in self._cell_texts:
            self.heatmap_plot.removeItem(t)
        self._cell_texts = []
        if len(order) <= 10:
            for i in range(len(order)):
                for j in range(len(order)):
                    v = D[i, j]
                    text = pg.TextItem(f"{v:.2f}", color="w" if v > 0.55 else "#1f2937", anchor=(0.5, 0.5))
                    text.setPos(j + 0.5, i + 0.5)
                    self.heatmap_plot.addItem(text)
                    self._cell_texts.append(text)
        _keep_square(self.heatmap_plot, len(order))
        self._cell_values_fit()

    def _cell_values_fit(self, *_) -> None:
        n = max(1, len(self.names))
        vb = self.heatmap_plot.getViewBox()
        (x0, x1), _ = vb.viewRange()
        cell = vb.width() / max(x1 - x0, 1e-9)
        wide = cell >= self.heatmap_plot.fontMetrics().horizontalAdvance("0.00") + 6 or n == 0
        for t in self._cell_texts:
            t.setVisible(wide)

    def _order(self) -> list[int]:
        c = self.clustering
        if c is None or len(c.linkage) == 0:
            return list(range(len(self.names)))
        return list(dendrogram(c.linkage, no_plot=True)["leaves"])

    def _draw_dendrogram(self) -> None:
        c = self.clustering
        plot = self.dendrogram_plot
        plot.clear()
        d = dendrogram(c.linkage, no_plot=True, labels=self.names)
        self._leaves = list(d["leaves"])
        self._leaf_x = 5.0 + 10.0 * np.arange(len(self._leaves))
        self._links = []
        for xs, ys in zip(d["icoord"], d["dcoord"], strict=True):
            curve = pg.PlotCurveItem(np.asarray(xs), np.asarray(ys), pen=pg.mkPen(GREY, width=2))
            plot.addItem(curve)
            self._links.append((curve, float(ys[1]), float(min(xs)), float(max(xs))))
        plot.addItem(self.leaf_dots)
        plot.addItem(self.threshold_line)
        axis = plot.getPlotItem().getAxis("bottom")
        axis.setTicks([self._leaf_ticks(d["ivl"])])
        axis.setHeight(44 if len(self._leaves) <= 10 else None)
        plot.setXRange(0, 10 * len(self._leaves), padding=0.02)
        plot.setYRange(-0.04, 1.0, padding=0.02)

    def _leaf_ticks(self, names: list[str]) -> list[tuple[float, str]]:
        """Site names under the leaves, alternately on two lines so neighbours do not collide; the heatmap's
        numbers instead when there are too many sites to name."""
        if len(names) > 10:
            return [(x, str(i + 1)) for i, x in enumerate(self._leaf_x)]
        return [(x, plain(n) if i % 2 == 0 else "\n" + plain(n))
                for i, (x, n) in enumerate(zip(self._leaf_x, names, strict=True))]

    def recut(self) -> None:
        """Cut at the line's t (or take the method's chosen groups) and recolour links, leaves, bars and the
        cluster count; a link is coloured when every site under it is in one group."""
        if self.clustering is not None:
            t = self.current_t()
            chosen = self.clustering.chosen
            self.labels = np.asarray(chosen, dtype=np.int64) if chosen is not None else self.clustering.cut(t)
            for curve, h, x0, x1 in self._links:
                color = GREY
                if h <= t or chosen is not None:
                    inside = np.flatnonzero((self._leaf_x >= x0 - 1e-9) & (self._leaf_x <= x1 + 1e-9))
                    groups = {int(self.labels[self._leaves[i]]) for i in inside}
                    if len(groups) == 1:
                        color = cluster_color(groups.pop())
                curve.setPen(pg.mkPen(color, width=2.5 if color != GREY else 1.5))
            self.leaf_dots.setData(x=self._leaf_x, y=np.zeros(len(self._leaves)),
                                   brush=[pg.mkBrush(cluster_color(self.labels[i])) for i in self._leaves])
            self._draw_bars()
        self._update_label()

    def _update_label(self) -> None:
        n = self.n_clusters
        t = self.current_t()
        if self.clustering is None:
            self.clusters_label.setText("")
            return
        if self.clustering.chosen is not None:
            self.clusters_label.setText(self.tr("{n} group(s) of sites for training").format(n=n))
            self.clusters_label.setToolTip(self.clustering.chosen_how)
            groups = [", ".join(self.names[i] for i in np.flatnonzero(self.labels == g)) for g in range(n)]
            self.chosen_label.setText("<br>".join(
                f'<span style="color:{cluster_color(g).name()};font-size:14pt">■</span> '
                + self.tr("group {g}: {sites}").format(g=g + 1, sites=esc(s)) for g, s in enumerate(groups)))
            self.chosen_label.show()
            return
        self.chosen_label.hide()
        name = self.texts.threshold
        text = self.tr("{n} groups at {name} = {t:.2f}").format(n=n, name=name, t=t) if n != 1 else \
            self.tr("1 group at {name} = {t:.2f}").format(name=name, t=t)
        self.clusters_label.setText(text)
        self.clusters_label.setToolTip(self.tr("Training will choose the cut automatically; this cut is for "
                                               "exploring.") if self.state.t_choice == "auto" else "")

    def _draw_bars(self) -> None:
        plot = self.bars_plot
        plot.clear()
        K = len(self.state.classes)
        L = self.n_clusters
        counts = np.stack([label_counts(b, K) for b in self.state.bundles]).astype(float)
        width = 0.8 / max(L, 1)
        legend = []
        for lab in range(L):
            members = np.flatnonzero(self.labels == lab)
            pooled = counts[members].sum(axis=0)
            share = pooled / max(pooled.sum(), 1.0)
            x = np.arange(K) + (lab - (L - 1) / 2) * width
            color = cluster_color(lab)
            plot.addItem(pg.BarGraphItem(x=x, height=share, width=width * 0.92, brush=color, pen=pg.mkPen(None)))
            sites = ", ".join(self.names[i] for i in members)
            legend.append(f'<span style="color:{color.name()};font-size:14pt">■</span> '
                          + self.tr("group {l}: {sites}").format(l=lab + 1, sites=sites))
        category_ticks(plot, "bottom", [(k, str(cl)) for k, cl in enumerate(self.state.classes)])
        plot.setXRange(-0.6, K - 0.4, padding=0)
        plot.setYRange(0, 1.0, padding=0.02)
        self.bars_legend.setText("<br>".join(legend))

    # ---- widgets → state ---------------------------------------------------------------------------------
    def _line_moved(self, line=None) -> None:
        t = round(float(self.threshold_line.value()), 4)
        was = self._quiet
        self._quiet = True
        self.t_spin.setValue(t)
        self._quiet = was
        if not self._quiet:
            self.auto_t_check.setChecked(False)  # dragging is an explicit choice
            self.state.set_threshold(t)
        self.recut()

    def _spin_changed(self, value: float) -> None:
        if self._quiet:
            return
        self.threshold_line.setValue(value)  # → _line_moved

    def _auto_toggled(self, on: bool) -> None:
        if self._quiet:
            return
        self.state.set_threshold("auto" if on else self.current_t())
        self._update_label()

    def set_threshold(self, t: float) -> None:
        """Programmatic drag: move the line to ``t`` (manual t)."""
        self.ensure_fresh()
        self.threshold_line.setValue(t)

    # ---- after training ------------------------------------------------------------------------------
    def _result_changed(self) -> None:
        if not self.isVisible():  # drawn when the page is next shown
            self._result_dirty = True
            return
        self._draw_result()

    def _draw_result(self) -> None:
        self._result_dirty = False
        plot = self.validation_plot
        plot.clear()
        result = self.state.result
        if result is None or "validation_curve" not in result.summary:
            self.auto_t_label.setText(self.tr("Train on the Models page to see which {t} the data prefers.")
                                      .format(t=self.texts.threshold))
            return
        s = result.summary
        curve = {float(k): float(v) for k, v in (s.get("validation_curve") or {}).items()}
        chosen = s.get("t")
        if curve:
            xs = np.array(sorted(curve))
            ys = np.array([curve[x] for x in xs])
            plot.plot(xs, ys, pen=pg.mkPen("#2563eb", width=2), symbol="o", symbolSize=7,
                      symbolBrush="#2563eb", symbolPen="w")
            if chosen is not None:
                plot.addItem(pg.InfiniteLine(pos=float(chosen), angle=90,
                                             pen=pg.mkPen("#dc2626", width=1.5, style=Qt.DashLine)))
            plot.setXRange(0, 1, padding=0.02)
        if s.get("t_auto"):
            best = curve.get(float(chosen), float("nan")) if chosen is not None else float("nan")
            self.auto_t_label.setText(self.tr("Automatic {name} = <b>{t:g}</b> ({n} group(s)): best mean hold-out "
                                              "accuracy {acc:.3f} over the grid.").format(
                name=self.texts.threshold, t=float(chosen), n=s.get("n_clusters", "?"), acc=best))
            self._set_line(float(chosen))  # show the trained cut; t stays automatic
            self.recut()
        elif chosen is not None:
            self.auto_t_label.setText(self.tr("Trained with {name} = {t:g} (chosen by you); hold-out accuracy "
                                              "{acc:.3f}.").format(name=self.texts.threshold, t=float(chosen),
                                                                   acc=curve.get(float(chosen), float("nan"))))
