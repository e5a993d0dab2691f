"""Models page: train the method's models (``AnalystRound.run`` in a job), watch the loss curves live,
then read each site's hold-out accuracy.

The core trainer calls ``on_epoch(epoch, losses_per_group)`` on the worker thread; :class:`EpochRelay`
queues those values and wakes the UI thread with one signal at a time (a burst of fast epochs coalesces
into one redraw, at most ~6 a second), so the window never waits for the trainer and the trainer never
waits for the window.

Test hooks: ``train() -> Job``, ``train_button``, ``job_panel`` (``job_panel.cancel()``), ``run_form`` (the
method's run-time settings, e.g. ``run_form.set_value("epochs", 4)``),
``t_label``, ``loss_plot``, ``loss_curves`` (group → PlotDataItem), ``accuracy_plot``, ``metrics_table``
(columns from ``metric_columns``), ``result_tabs`` (Training | Sites | Results), ``views`` (the run's method views:
per-site figures, ROC and calibration curves, confusion matrix), ``minority_warning`` (shown when a model never
predicts the minority class), ``result_label``, ``message``, ``last_outcome``
("succeeded" | "failed" | "cancelled" | None), ``torch_threads`` (kernel threads used for training).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.api.analyst import minority_flags
from core.api.common import METHODS, Curve, PageTexts
from core.api.common import describe_estimate as describe

from ..jobs import Job
from ..plots import cluster_color, make_plot, set_title
from ..settings_form import SettingsForm
from ..views_panel import ViewsPanel, for_display
from ..widgets import EmptyNote, JobPanel, MessageLabel, esc, plain
from .common import TERMS, ThrottledJob, hide_when_done
from .state import QtAnalystState, training_threads

SITE_ROWS_PER_TURN = 200  # the Sites table is filled this many rows per event-loop turn


def _thread_limits(n: int):
    """Cap numpy's BLAS and sklearn's OpenMP pools (threadpoolctl ships with scikit-learn)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


class EpochRelay(QObject):
    """Thread-safe hand-over of per-epoch losses from the training thread to the UI thread."""

    ready = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[tuple[int, np.ndarray]] = []
        self._signalled = False

    def __call__(self, epoch: int, losses) -> None:  # called on the worker thread
        with self._lock:
            self._pending.append((int(epoch), np.asarray(losses, dtype=float).copy()))
            if self._signalled:
                return
            self._signalled = True
        self.ready.emit()

    def drain(self) -> list[tuple[int, np.ndarray]]:  # called on the UI thread
        with self._lock:
            out, self._pending, self._signalled = self._pending, [], False
        return out


class ModelsPage(QWidget):
    """The training step (see the module docstring). Its words, plots and controls are those the kit's method
    declares (:meth:`core.methods.Method.page_texts`); empty plots carry a sentence saying what will appear."""

    show_clients_requested = Signal()

    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._job: Job | None = None
        self.last_outcome: str | None = None
        self.relay = EpochRelay(self)
        self._redraw = QTimer(self)  # coalesces bursts of epochs into at most ~6 redraws a second
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(160)
        self._redraw.timeout.connect(self._epochs_arrived)
        self.relay.ready.connect(self._schedule_redraw)
        self.loss_curves: dict[int, pg.PlotDataItem] = {}  # this run's curves, by cluster
        self._curve_pool: dict[int, pg.PlotDataItem] = {}
        self._loss: dict[int, tuple[list[int], list[float]]] = {}
        self.metric_columns: list[str] = []
        self.torch_threads = training_threads()
        self._prepared: tuple | None = None  # (run, its views as drawn), made on the training job's thread

        self.heading = QLabel()
        self.heading.setWordWrap(True)
        settings = QGroupBox(self.tr("Training"))
        form = QFormLayout(settings)
        self._form = form
        self.t_label = QLabel()
        self.change_t_button = QPushButton(self.tr("Change on the &Clients page"))
        self.change_t_button.clicked.connect(self.show_clients_requested.emit)
        t_row = QWidget()
        row = QHBoxLayout(t_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.t_label, 1)
        row.addWidget(self.change_t_button)
        self.t_row = t_row
        self.t_caption = QLabel(self.tr("Threshold:"))
        form.addRow(self.t_caption, t_row)
        self.run_form = SettingsForm()  # the method's run-time settings (e.g. epochs), the kit's values first
        self.run_form.setToolTip(self.tr("The kit's values by default"))
        form.addRow(self.run_form)
        self.train_button = QPushButton(self.tr("&Train"))
        self.train_button.setDefault(True)
        self.train_button.clicked.connect(self.train)
        self.fingerprint_warning = MessageLabel()
        form.addRow("", self.train_button)
        self.job_panel = JobPanel()
        hide_when_done(self.job_panel)
        self.job_panel.finished.connect(self._job_finished)
        self.message = MessageLabel()

        self.texts = PageTexts(models="")
        self.loss_plot = make_plot("", x="", y="")
        self.loss_plot.addLegend(offset=(-10, 10), brush=(255, 255, 255, 210), labelTextColor="#111827")
        self.accuracy_plot = make_plot("", x=self.tr("accuracy"))
        self.accuracy_plot.getPlotItem().showGrid(x=True, y=False, alpha=0.15)
        self.accuracy_plot.setMouseEnabled(False, False)
        self.loss_note = EmptyNote(self.loss_plot, "")
        self.accuracy_note = EmptyNote(self.accuracy_plot, "")
        self.metrics_table = QTableWidget(0, 0)
        self.metrics_table.verticalHeader().setVisible(False)
        self.metrics_table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.metrics_table.setSortingEnabled(False)
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        f = self.result_label.font()
        f.setPointSize(f.pointSize() + 1)
        self.result_label.setFont(f)

        top = QHBoxLayout()
        top.addWidget(settings, 2)
        side = QVBoxLayout()
        side.addWidget(self.fingerprint_warning)
        side.addWidget(self.result_label)
        side.addStretch(1)
        top.addLayout(side, 3)
        self.minority_warning = MessageLabel()
        self.views = ViewsPanel()
        training = QWidget()
        plots = QHBoxLayout(training)
        plots.setContentsMargins(0, 0, 0, 0)
        plots.addWidget(self.loss_plot, 3)
        plots.addWidget(self.accuracy_plot, 2)
        self.result_tabs = QTabWidget()
        self.result_tabs.addTab(training, self.tr("Training"))
        self.result_tabs.addTab(self.metrics_table, self.tr("Sites"))
        self.result_tabs.addTab(self.views, self.tr("Results: discrimination, calibration, plots"))
        lay = QVBoxLayout(self)
        lay.addWidget(self.heading)
        lay.addLayout(top)
        lay.addWidget(self.job_panel)
        lay.addWidget(self.message)
        lay.addWidget(self.minority_warning)
        lay.addWidget(self.result_tabs, 1)
        state.session_changed.connect(self._session_changed)
        state.threshold_changed.connect(self._update_t_label)
        state.bundles_changed.connect(self._update_ready)
        # the result is drawn in small steps on later event-loop turns, so the window keeps responding
        state.result_changed.connect(lambda: QTimer.singleShot(0, self._show_result))
        self._session_changed()

    # ---- state → widgets -------------------------------------------------------------------------------
    def _method(self):
        kit = self.state.kit
        return None if kit is None else METHODS.get(kit.method)

    def _uses_t(self) -> bool:
        cls = self._method()
        return cls is not None and cls.threshold_setting() is not None

    def _session_changed(self) -> None:
        kit = self.state.kit
        cls = self._method()
        texts = self.texts = cls.page_texts() if cls is not None else PageTexts(models="")
        self.heading.setText("<h2>" + self.tr("Models") + "</h2>" + (f"<p>{esc(texts.models)}</p>"
                                                                     if texts.models else ""))
        self.train_button.setText(texts.train)
        # only the plots the method declares: no empty loss plot for a method that trains nothing
        set_title(self.loss_plot, texts.loss)
        axes = self.loss_plot.getPlotItem()
        axes.setLabel("bottom", texts.loss_x)
        axes.setLabel("left", texts.loss_y)
        axes.getAxis("left").setToolTip(texts.loss_tip)
        self.loss_note.show_note(texts.loss_before)
        set_title(self.accuracy_plot, texts.accuracy)
        self.accuracy_note.show_note(texts.accuracy_before)
        self.loss_plot.setVisible(bool(texts.loss))
        self.accuracy_plot.setVisible(bool(texts.accuracy))
        self.result_tabs.setTabVisible(0, bool(texts.loss or texts.accuracy))
        clustering = kit is not None and kit.task == "clustering"
        self.result_tabs.setTabText(2, self.tr("Results") if clustering else
                                    self.tr("Results: discrimination, calibration, plots"))
        specs = () if cls is None else tuple(s for s in cls.settings_spec
                                             if s.at_run and s.side == "analyst" and s.role != "threshold")
        self.run_form.set_specs(specs, {} if kit is None else kit.settings)
        threshold = None if cls is None else cls.threshold_setting()
        self.t_label.setToolTip("" if threshold is None else f"{threshold.help}; automatic: {threshold.auto_help}")
        self.run_form.setVisible(bool(specs))
        self.t_caption.setText(self.tr("Threshold {t}:").format(t=texts.threshold))
        self._update_t_label()
        self._update_ready()

    def _update_t_label(self) -> None:
        uses_t = self._uses_t()
        self.t_row.setVisible(uses_t)  # a method without a threshold shows no threshold row at all
        self.t_caption.setVisible(uses_t)
        name = self.texts.threshold
        if self.state.kit is None or not uses_t:
            self.t_label.setText("")
        elif self.state.t_choice == "auto":
            self.t_label.setText(self.tr("automatic (chosen on held-out rows)"))
        else:
            self.t_label.setText(self.tr("{n} = {t:.2f} (set on the Clients page)").format(
                n=name, t=float(self.state.t_choice)))

    def _update_ready(self) -> None:
        n = len(self.state.training_bundles)
        unconfirmed = self.state.unconfirmed_sites()
        self.train_button.setEnabled(n >= 1 and not self.job_panel.busy and not unconfirmed)
        if unconfirmed:
            self.fingerprint_warning.show_message(
                "warning", self.tr("Not yet confirmed with the site: {sites}. Compare fingerprints and confirm them on "
                                   "the Bundles page; training waits until then.").format(sites=", ".join(unconfirmed)))
        else:
            self.fingerprint_warning.clear_message()

    def showEvent(self, event) -> None:  # noqa: N802
        self._update_ready()
        super().showEvent(event)

    # ---- training --------------------------------------------------------------------------------------
    def run_settings(self) -> dict:
        """The run-time settings on this page, and the threshold chosen on the Clients page."""
        cls = self._method()
        settings = self.run_form.values()
        threshold = cls.threshold_setting() if cls is not None else None
        if threshold is not None:
            settings[threshold.name] = self.state.t_choice
        return settings

    def train(self) -> Job | None:
        session = self.state.session
        if session is None or not self.state.training_bundles or self.state.unconfirmed_sites():
            self.message.show_message("error", self.tr("Import the bundles first."))
            return None
        if self.job_panel.busy:
            return None
        bundles = list(self.state.training_bundles)
        excluded = [b for b in self.state.bundles if b not in bundles]
        settings = self.run_settings()
        on_epoch = self.relay if session.kit.task == "classification" else None
        self.relay.drain()
        self._reset_plots()
        self.message.clear_message()
        self.last_outcome = None
        self.train_button.setEnabled(False)

        threads = self.torch_threads

        def work(control):
            # leave a core for the window: torch's kernels, and the BLAS/OpenMP pools of numpy and sklearn
            if on_epoch is not None:
                import torch

                torch.set_num_threads(threads)
            with _thread_limits(threads):
                run = session.run(bundles, None, settings, control, on_epoch=on_epoch, excluded=excluded)
                control.step(1.0, "preparing the plots")
                self._prepared = (run, for_display(run.views()))  # off the window's thread (issue #36)
                return run

        job = ThrottledJob(work, self.tr("Training on {n} site(s)").format(n=len(bundles)))
        job.succeeded.connect(self.state.set_run)
        job.failed.connect(self._failed)
        self._job = job
        return self.job_panel.run(job)

    def _failed(self, message: str) -> None:
        self.message.show_message("error", message)

    def _job_finished(self, how: str) -> None:
        self.last_outcome = how
        self._epochs_arrived()
        self._update_ready()
        if how == "cancelled":
            self.message.show_message("info", self.tr("Training cancelled; no model was kept."))

    def _reset_plots(self) -> None:
        for curve in self._curve_pool.values():  # kept for the next run: making curves is the slow part
            curve.setData([], [])
        self.loss_curves, self._loss = {}, {}
        self.accuracy_plot.clear()
        self.metrics_table.setRowCount(0)
        self.views.clear()
        self.minority_warning.clear_message()
        self.result_tabs.setCurrentIndex(0)
        self.result_label.clear()
        self.loss_note.show_note(self.texts.loss_during)
        self.accuracy_note.show_note(self.texts.accuracy_before)

    def _schedule_redraw(self) -> None:
        if not self._redraw.isActive():
            self._redraw.start()

    def _curves_for(self, n_groups: int) -> None:
        legend = self.loss_plot.getPlotItem().legend
        for g in range(max(n_groups, len(self._curve_pool))):
            curve = self._curve_pool.get(g)
            if g >= n_groups:
                if curve is not None and curve.isVisible():
                    curve.setVisible(False)
                    legend.removeItem(curve)
                continue
            if curve is None:
                curve = self.loss_plot.plot([], [], pen=pg.mkPen(cluster_color(g), width=2),
                                            name=self.tr("group {g}").format(g=g + 1))
                self._curve_pool[g] = curve
            elif not curve.isVisible():
                curve.setVisible(True)
                legend.addItem(curve, self.tr("group {g}").format(g=g + 1))
            self.loss_curves[g] = curve

    def _epochs_arrived(self) -> None:
        batch = self.relay.drain()
        if not batch:
            return
        for epoch, losses in batch:
            for g, value in enumerate(losses):
                xs, ys = self._loss.setdefault(g, ([], []))
                xs.append(epoch + 1)
                ys.append(float(value))
        self.loss_note.hide_note()
        if len(self.loss_curves) != len(self._loss):
            self._curves_for(len(self._loss))
        for g, (xs, ys) in self._loss.items():
            self.loss_curves[g].setData(xs, ys)

    # ---- result ------------------------------------------------------------------------------------------
    def _show_result(self) -> None:
        result = self.state.result
        if result is None:
            if self.state.session is None or not self.job_panel.busy:
                self.metrics_table.setRowCount(0)
                self.accuracy_plot.clear()
                self.views.clear()
                self.minority_warning.clear_message()
                self.result_label.clear()
            return
        s = result.summary
        sites = s.get("sites", [])
        # Issue #15: per site, the model it will be sent and its expected accuracy beside its own-rows model,
        # each with n and a 95 % interval: the expected gain, from the bundles alone, before anything is sent.
        preferred = ["site", "cluster", "rows", "model", "expected", "own_model", "expected_gain", "note"]
        if not any("expected" in x for x in sites):
            preferred.insert(3, "holdout_accuracy")
        hidden = ("fingerprint", "label_counts", "bundle_digest", "holdout_accuracy", "cluster_model")
        extra = sorted({k for x in sites for k, v in x.items()
                        if k not in preferred and k not in hidden and isinstance(v, int | float | str)})
        cols = [c for c in preferred if any(c in x for x in sites)] + extra
        self.metric_columns = cols
        declared = self.texts.columns
        titles = {"site": self.tr("Site"), "cluster": self.tr("Group"), "rows": self.tr("Rows"),
                  "holdout_accuracy": self.tr("Hold-out accuracy"), "model": self.tr("Model sent"),
                  "expected": self.tr("Expected accuracy"),
                  "own_model": self.tr("Own rows alone"), "expected_gain": self.tr("Expected gain"),
                  "note": self.tr("Note")}
        t = self.metrics_table
        t.clear()
        t.setColumnCount(len(cols))
        for c, key in enumerate(cols):
            plain, term = declared.get(key, (titles.get(key, key.replace("_", " ").capitalize()), ""))
            head = QTableWidgetItem(plain)
            head.setToolTip(term)
            t.setHorizontalHeaderItem(c, head)
        t.setRowCount(len(sites))
        self._fill_sites(result, sites, cols, 0)
        header = t.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)  # headers and intervals stay whole
        header.setStretchLastSection(True)
        if len(sites) > SITE_ROWS_PER_TURN:  # many sites: the rest of the rows on later event-loop turns
            header.setSectionResizeMode(QHeaderView.Interactive)  # (sizing to every row is itself slow)
            t.resizeColumnsToContents()
            QTimer.singleShot(0, lambda: self._fill_sites(result, sites, cols, SITE_ROWS_PER_TURN))
        accs = [x["holdout_accuracy"] for x in sites if "holdout_accuracy" in x]
        QTimer.singleShot(0, lambda: self._draw_accuracy(result))
        QTimer.singleShot(0, lambda: self._draw_views(result))
        parts = [self.tr("Method <b>{m}</b>").format(m=result.method)]
        if "n_clusters" in s:
            parts.append((self.tr("{n} group(s) of sites") if s.get("task") == "classification" else
                          self.tr("{n} cluster(s)")).format(n=s["n_clusters"]))
        if s.get("t") is not None and self._uses_t():
            parts.append(self.tr("{n} = {t:g} ({how})").format(
                n=self.texts.threshold, t=float(s["t"]),
                how=self.tr("automatic") if s.get("t_auto") else self.tr("chosen")))
        if "expected_mean" in s:
            parts.append(self.tr("mean expected accuracy <b>{a:.3f}</b>").format(a=float(s["expected_mean"])))
            if "own_model_mean" in s:
                parts.append(self.tr("own-rows models {a:.3f}").format(a=float(s["own_model_mean"])))
            weak = [x["site"] for x in sites if (x.get("expected") or {}).get("weak")]
            if weak:
                parts.append(self.tr("<span style='color:#b45309'>too few rows for a firm estimate: {s}</span>")
                             .format(s=esc(", ".join(weak[:20]) + (" …" if len(weak) > 20 else ""))))
        elif accs:
            parts.append(self.tr("mean hold-out accuracy <b>{a:.3f}</b>").format(a=float(np.mean(accs))))
        self.result_label.setText(" · ".join(parts) + "<br>" + self.tr("Next: write the packages on the Export "
                                                                        "page."))

    def _fill_sites(self, result, sites: list, cols: list[str], start: int) -> None:
        """Rows ``start`` … of the Sites table, :data:`SITE_ROWS_PER_TURN` at a time (the rest on a later turn)."""
        if result is not self.state.result:
            return
        t = self.metrics_table
        stop = min(start + SITE_ROWS_PER_TURN, len(sites))
        for r in range(start, stop):
            x = sites[r]
            for c, key in enumerate(cols):
                v = x.get(key, "")
                if key == "cluster" and isinstance(v, int):
                    text = str(v)  # summary clusters are numbered from 1
                elif isinstance(v, dict):
                    text = describe(v)
                elif key == "expected_gain" and isinstance(v, float):
                    text = f"{100 * v:+.1f} pt"
                elif isinstance(v, float):
                    text = f"{v:.3f}"
                else:
                    text = str(v)
                item = QTableWidgetItem(text)
                if key == "holdout_accuracy":
                    item.setToolTip(self.tr(TERMS["holdout"]))
                if key == "note":
                    item.setToolTip(text)  # the whole reason, also where the table must be scrolled to read it
                if key == "cluster" and isinstance(v, int):
                    item.setForeground(cluster_color(v - 1))
                if isinstance(v, int | float):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                t.setItem(r, c, item)
        if start and stop < len(sites):
            QTimer.singleShot(0, lambda: self._fill_sites(result, sites, cols, stop))

    def _draw_views(self, result) -> None:
        """The method's views of this run (tables, ROC and calibration curves, confusion matrix) on the Results
        tab, shown first when it has curves; a warning above the tabs for a model that never predicts the
        minority class."""
        run = self.state.run
        if result is not self.state.result or run is None:
            return
        prepared = self._prepared
        views = prepared[1] if prepared is not None and prepared[0] is run else for_display(run.views())
        self.views.show_views(views)
        flags = minority_flags(result.summary)
        if flags:
            self.minority_warning.show_message(
                "error", self.tr("Never predicts the minority class (sensitivity 0), whatever its accuracy: {s}")
                .format(s=" ".join(flags)))
        else:
            self.minority_warning.clear_message()
        if any(isinstance(v, Curve) for v in views) or any("metrics" in x for x in result.summary.get("sites", [])):
            self.result_tabs.setCurrentWidget(self.views)

    def _draw_accuracy(self, result) -> None:
        if result is not self.state.result:
            return
        sites = result.summary.get("sites", [])
        accs = [x["holdout_accuracy"] for x in sites if "holdout_accuracy" in x]
        self.accuracy_plot.clear()
        if not accs:
            self.accuracy_note.show_note(self.texts.accuracy_none)
        if accs and len(accs) == len(sites):
            self.accuracy_note.hide_note()
            clusters = [int(x.get("cluster", 1)) - 1 for x in sites]
            y = np.arange(len(sites))[::-1]  # first site on top
            self.accuracy_plot.addItem(pg.BarGraphItem(
                x0=np.zeros(len(sites)), y=y, width=np.asarray(accs), height=0.7,
                brushes=[pg.mkBrush(cluster_color(c)) for c in clusters], pen=pg.mkPen(None)))
            mean = float(np.mean(accs))
            self.accuracy_plot.addItem(pg.InfiniteLine(pos=mean, angle=90, pen=pg.mkPen("#374151", style=Qt.DashLine),
                                                       label=self.tr("mean {m:.3f}").format(m=mean),
                                                       labelOpts={"position": 0.03, "color": "#374151",
                                                                  "fill": (255, 255, 255, 210)}))
            self.accuracy_plot.getPlotItem().getAxis("left").setTicks(  # names while they can be read
                [[(int(yy), plain(x["site"])) for yy, x in zip(y, sites, strict=True)] if len(sites) <= 60 else []])
            self.accuracy_plot.setXRange(0, 1.0, padding=0.02)
            self.accuracy_plot.setYRange(-0.6, len(sites) - 0.4, padding=0)
