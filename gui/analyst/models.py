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
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.api.analyst import minority_flags, update_words
from core.api.common import METHODS, Curve, PageTexts
from core.api.common import describe_estimate as describe

from ..jobs import Job
from ..plots import cluster_color, make_plot, set_title
from ..settings_form import SettingsForm
from ..ui_post import ensure_bridge, post
from ..views_panel import ViewsPanel, for_display
from ..widgets import EmptyNote, JobPanel, MessageLabel, esc, plain, plain_tip
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
        ensure_bridge()

    def __call__(self, epoch: int, losses) -> None:  # called on the worker thread
        with self._lock:
            self._pending.append((int(epoch), np.asarray(losses, dtype=float).copy()))
            if self._signalled:
                return
            self._signalled = True
        post(self, lambda relay: relay.ready.emit())  # never an emit on this object from the worker (gui/ui_post.py)

    def drain(self) -> list[tuple[int, np.ndarray]]:  # called on the UI thread
        with self._lock:
            out, self._pending, self._signalled = self._pending, [], False
        return out


# The Sites table (issue #15, #33 item 10): per site, the model it will use and its expected accuracy beside its
# own-rows model, each with n and a 95 % interval, and the analysis's note last, whole.
NOTE_WIDTH = 360  # the Sites table's note column is never narrower (logical pixels): it wraps, and rows grow
SITE_COLUMNS = ["site", "cluster", "rows", "rows_kept_at_site", "model", "expected", "own_model", "expected_gain",
                "expected_auc"]
HIDDEN_KEYS = ("fingerprint", "label_counts", "bundle_digest", "holdout_accuracy", "cluster_model", "own_kind",
               "shared_kind")
SITE_TITLES = {  # key: (header, tooltip)
    "site": ("Site", ""), "cluster": ("Group", "the group of sites whose shared model this site is sent"),
    "rows": ("Rows", "rows the site sent (or, for a method that sends no rows, fitted its estimate on)"),
    "holdout_accuracy": ("Hold-out accuracy", TERMS["holdout"]),
    "model": ("Model the site uses", "what the package makes the site use: the shared model, its own model, or — "
                                     "when it decides on its own labelled rows — the analyst's estimate of its choice"),
    "expected": ("Expected accuracy", "accuracy of the model the site uses, on rows no model saw in training "
                                      "(out-of-fold), with n and a 95 % interval"),
    "own_model": ("Own rows alone", "the site's own model on its own rows, with n and a 95 % interval"),
    "expected_gain": ("Expected gain", "expected accuracy minus the own-rows model's, in percentage points"),
    "expected_auc": ("Expected AUC", "area under the ROC curve of the model the site uses, out-of-fold (0.5: no "
                                     "better than chance, 1: perfect)"),
    "rows_kept_at_site": ("Rows kept to check", "rows the site set aside at export to check the package against its "
                                                "own model: not in Rows, counted in its own model's n"),
    "note": ("Note", "what the analysis says about this site"),
}


def _model_words(x: dict, tr) -> str:
    """The model a site uses, in a few words: its choice on its own rows (issue #37; the analyst's estimate, in full
    in the cell's tooltip) or what the package tells it to use."""
    update = x.get("update")
    if isinstance(update, dict):
        est = update.get("estimate")
        short = {"own": tr("own model"), "shared": tr("shared as sent"), "intercept": tr("shared, own baseline"),
                 "recalibrated": tr("shared, recalibrated"), "blend": tr("blend")}.get(est, "")
        if est == "blend" and isinstance(update.get("weight"), int | float):
            short += f" ({float(update['weight']):.0%} shared)"
        return tr("site decides; est. {what}").format(what=short) if short else tr("site decides")
    v = x.get("model")
    return {"own": tr("its own model"), "cluster": tr("its group's shared model"),
            "global": tr("the model of all sites")}.get(v, str(v or ""))


def _model_tip(x: dict) -> str:
    """The analyst's estimate of a site's choice in full (its sentence), when the summary has one."""
    update = x.get("update")
    if not isinstance(update, dict):
        return ""
    return (update_words(update) + (": " + str(update["sentence"]) if update.get("sentence") else "")).strip()


def fill_sites_table(t: QTableWidget, sites: list[dict], declared: dict, tr=QObject.tr,
                     current=lambda: True) -> None:
    """Fill the Models page's Sites table from a summary's ``sites``: the known columns first (plain headers, the
    terms in tooltips; a method's own columns under the headers its PageTexts declare), other scalar members after
    them, and the note last, wrapped whole (every column has a header; every cell its whole text as tooltip). The
    keys shown are the table's ``keys`` property. Past :data:`SITE_ROWS_PER_TURN` sites the rest is filled on later
    event-loop turns while ``current()`` holds."""
    preferred = list(SITE_COLUMNS)
    if not any("expected" in x for x in sites):
        preferred.insert(preferred.index("model"), "holdout_accuracy")
    skip = {*preferred, *HIDDEN_KEYS, "note"}
    extra = sorted({k for x in sites for k, v in x.items() if k not in skip and isinstance(v, int | float | str)})
    cols = [c for c in preferred if any(c in x for x in sites)] + extra
    if any(x.get("note") for x in sites):
        cols.append("note")
    t.setProperty("keys", cols)
    t.clear()
    t.setColumnCount(len(cols))
    t.setWordWrap(True)
    for c, key in enumerate(cols):
        words, term = declared.get(key) or SITE_TITLES.get(key) or (key.replace("_", " ").capitalize(), "")
        head = QTableWidgetItem(tr(words) or key)
        head.setToolTip(tr(term))
        t.setHorizontalHeaderItem(c, head)
    t.setRowCount(len(sites))
    _fill_site_rows(t, sites, cols, 0, min(SITE_ROWS_PER_TURN, len(sites)), tr)
    header = t.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeToContents)  # headers and intervals stay whole
    header.setStretchLastSection(True)
    if cols and cols[-1] == "note":  # the note wraps in what is left of the width (at least NOTE_WIDTH), its row as
        c = len(cols) - 1  # tall as it needs
        header.setSectionResizeMode(c, QHeaderView.Interactive)
        others = sum(header.sectionSize(k) for k in range(c))
        t.setColumnWidth(c, max(NOTE_WIDTH, t.viewport().width() - others))
    if len(sites) <= SITE_ROWS_PER_TURN:
        t.resizeRowsToContents()
        return
    # Many sites: the rest of the rows on later event-loop turns, the columns sized once (sizing to every row of
    # 10,000 is itself slow), while the table still shows this result (``current``).
    header.setSectionResizeMode(QHeaderView.Interactive)
    t.resizeColumnsToContents()

    def more(start: int) -> None:
        if not current():
            return
        stop = min(start + SITE_ROWS_PER_TURN, len(sites))
        _fill_site_rows(t, sites, cols, start, stop, tr)
        if stop < len(sites):
            QTimer.singleShot(0, lambda: more(stop))

    QTimer.singleShot(0, lambda: more(SITE_ROWS_PER_TURN))


def _fill_site_rows(t: QTableWidget, sites: list[dict], cols: list[str], start: int, stop: int, tr) -> None:
    """Rows ``start`` … ``stop`` − 1 of the Sites table."""
    for r in range(start, stop):
        x = sites[r]
        for c, key in enumerate(cols):
            v = x.get(key, "")
            if key == "model":
                text = _model_words(x, tr)
            elif key == "cluster" and isinstance(v, int):
                text = str(v)  # summary clusters are numbered from 1
            elif isinstance(v, dict):
                text = describe(v)
            elif key == "expected_gain" and isinstance(v, float):
                text = f"{100 * v:+.1f} pt"
            elif isinstance(v, bool):
                text = tr("yes") if v else tr("no")
            elif isinstance(v, float):
                text = f"{v:.3f}"
            else:
                text = str(v)
            item = QTableWidgetItem(plain(text))  # site names and notes: text the sites' files carried
            tip = _model_tip(x) if key == "model" else text
            item.setToolTip(plain_tip(tip or text))  # the whole text, also where the table must be scrolled to read it
            if key == "cluster" and isinstance(v, int):
                item.setForeground(cluster_color(v - 1))
            if isinstance(v, int | float) and not isinstance(v, bool):
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
            t.setItem(r, c, item)


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
        self.explanation = QLabel()  # the method's words (PageTexts.models): what is trained and how it is judged
        self.explanation.setWordWrap(True)
        # The explanation and the settings fold away once a result is shown, so its tables and plots get the
        # window's height (issue #33 item 10); the Train button stays beside the result line.
        self.setup_toggle = QToolButton()
        self.setup_toggle.setText(self.tr("Explanation and settings"))
        self.setup_toggle.setCheckable(True)
        self.setup_toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.setup_toggle.setAutoRaise(True)
        self.setup_toggle.toggled.connect(self._toggle_setup)
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

        head = QHBoxLayout()
        head.addWidget(self.heading, 1)
        head.addWidget(self.setup_toggle, 0, Qt.AlignBottom)
        self.setup = QWidget()
        sl = QVBoxLayout(self.setup)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.addWidget(self.explanation)
        top = QHBoxLayout()
        top.addWidget(settings, 2)
        top.addStretch(3)
        sl.addLayout(top)
        # the button, and beside it the job's progress (its room is kept while hidden: hide_when_done); the result
        # line below them (a wrapped label beside a button would keep room for its narrowest wrapping)
        action = QHBoxLayout()
        action.addWidget(self.train_button, 0, Qt.AlignTop)
        action.addWidget(self.job_panel, 1)
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
        lay.addLayout(head)
        lay.addWidget(self.setup)
        lay.addLayout(action)
        lay.addWidget(self.result_label)
        lay.addWidget(self.fingerprint_warning)
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
        self.heading.setText("<h2>" + self.tr("Models") + "</h2>")
        self.explanation.setText(esc(texts.models))
        self.explanation.setVisible(bool(texts.models))
        self.setup_toggle.setChecked(True)  # a new project: its explanation and settings first
        self._toggle_setup(True)
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

    def _toggle_setup(self, shown: bool) -> None:
        self.setup.setVisible(shown)
        self.setup_toggle.setArrowType(Qt.DownArrow if shown else Qt.RightArrow)
        self.setup_toggle.setToolTip(self.tr("Hide the method's explanation and the training settings") if shown
                                     else self.tr("Show the method's explanation and the training settings"))

    def _update_t_label(self) -> None:
        uses_t = self._uses_t()
        self.t_row.setVisible(uses_t)  # a method without a threshold shows no threshold row at all
        self.t_caption.setVisible(uses_t)
        name = self.texts.threshold
        if self.state.kit is None or not uses_t:
            self.t_label.setText("")
        elif self.state.t_choice == "auto":
            threshold = self._method().threshold_setting()
            self.t_label.setText(self.tr("automatic ({how})").format(
                how=threshold.auto_help or self.tr("chosen by the method")))
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
        # the first tab the method shows (a method without a Training tab would otherwise show an empty pane)
        self.result_tabs.setCurrentIndex(next((k for k in range(self.result_tabs.count())
                                               if self.result_tabs.isTabVisible(k)), 0))
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
        self.setup_toggle.setChecked(False)  # the result takes the page's height; the settings are one click away
        fill_sites_table(self.metrics_table, sites, self.texts.columns, self.tr,
                         current=lambda: result is self.state.result)
        self.metric_columns = self.metrics_table.property("keys") or []
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
        elif not self.result_tabs.isTabVisible(self.result_tabs.currentIndex()):  # never an empty, hidden tab's pane
            self.result_tabs.setCurrentWidget(self.views if views else self.metrics_table)

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
