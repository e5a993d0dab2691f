"""The participant's last step: apply the analyst's package to this site's rows and look at the results."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.api import KEPT_OWN_WORDS, ConfigError, DCError, Identity
from core.api.common import (
    LEGACY_MEAN,
    UPDATE_WORDS,
    CsvOptions,
    Kit,
    SiteWorkspace,
    UntrustedPin,
    calibration_points,
    default_workspace,
    figure_rows,
    inspect,
    natural_sorted,
    preview,
    rates_at,
    roc_points,
    threshold_for,
)
from core.api.common import describe_estimate as describe
from core.api.participant import ALREADY_APPLIED, ApplyResult, apply_package

from ..audit_restart import AuditRestartButton, refusal_text, restarted_text
from ..plots import GREY, PALETTE, make_plot
from ..screen import fit_window
from ..widgets import EmptyNote, JobPanel, MessageLabel, esc, passphrase_edit, plain
from .common import PathField, TextFrameModel, identity_file_field, run_job

RESULT_ROWS = 200
# how RESULT.csv may be written: like the input (the default), or one of two common spreadsheet settings
OUT_FORMATS = (
    ("Like my input file", None),
    ("UTF-8, commas, decimal point", CsvOptions(encoding="utf-8-sig", delimiter=",", decimal=".")),
    ("Windows (Western Europe), semicolons, decimal comma", CsvOptions(encoding="cp1252", delimiter=";",
                                                                      decimal=",")),
)


# how the decision threshold is chosen in the window: the threshold itself, or a rate to reach on labelled rows
THRESHOLD_MODES = (("threshold", "Threshold"), ("sensitivity", "Reach sensitivity ≥"),
                   ("specificity", "Reach specificity ≥"))


def _apply_and_read(package: Path, identity: Identity, csv: Path, out: Path, workspace: Path, impute: bool,
                    control, out_options: CsvOptions | None = None, validate: bool = False,
                    threshold: float | None = None, threshold_target: tuple[str, float] | None = None,
                    allow_older: bool = False, analyst_fingerprint: str | None = None) -> dict:
    """The job: apply the package (core), then read the first rows and the result column's counts back."""
    result: ApplyResult = apply_package(package, identity, csv, out, workspace=SiteWorkspace(workspace),
                                        options=CsvOptions(impute="mean" if impute else None),
                                        control=control.sub(0.0, 0.9), out_options=out_options, validate=validate,
                                        threshold=threshold, threshold_target=threshold_target,
                                        allow_older=allow_older, analyst_fingerprint=analyst_fingerprint)
    control.step(0.92, "reading the results")
    fmt = result.output_format
    written = CsvOptions(encoding=fmt.encoding, delimiter=fmt.delimiter, decimal=fmt.decimal)
    frame, _ = preview(out, written, RESULT_ROWS)
    column = "cluster" if "cluster" in result.columns else "prediction"
    values = pd.read_csv(out, usecols=[column], dtype=str, keep_default_na=False, sep=fmt.delimiter,
                         encoding=fmt.encoding)[column]
    counts = values.value_counts()
    order = [str(c) for c in result.summary.get("classes", [])] if column == "prediction" else []
    order += natural_sorted(set(counts.index) - set(order))  # every class, even one no row was given
    control.step(1.0, "done")
    return {"result": result, "frame": frame, "column": column,
            "counts": [(name, int(counts.get(name, 0))) for name in order]}


class ResultsWindow(QWidget):
    """Pick identity (+ passphrase) → package → CSV; apply in a job; table of the first rows, a bar plot of
    the predicted classes (or clusters), and the written CSV.

    Test hooks: ``identity_field``, ``passphrase_edit``, ``unlock_button``, ``workspace_field``,
    ``package_field``, ``package_label``, ``csv_field``, ``impute_check``, ``validate_check``,
    ``validation_label``, ``out_field``, ``apply_button``,
    ``jobs``, ``message``, ``results_model`` (TextFrameModel), ``plot`` (pyqtgraph PlotWidget), ``bars``
    (the BarGraphItem), ``save_button`` / ``save_copy(path)``; ``identity``, ``outcome`` (dict: result,
    frame, column, counts) once done.

    With validated labelled rows: ``tabs`` (``check_tab``: ``roc_plot`` / ``roc_curves``, ``calibration_plot`` /
    ``calibration_curves`` / ``risk_bars``; ``figures_table``); two classes: ``threshold_mode`` (combo),
    ``threshold_spin``, ``threshold_label`` (rates at the chosen threshold), ``rewrite_button`` (writes the
    results again at it, through core's apply), ``chosen_threshold()``.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("DC Studio — apply the analyst's package"))
        self.identity: Identity | None = None
        self.identity_path: Path | None = None
        self.outcome: dict | None = None
        self._auto_out = ""
        self._busy = False
        self._package_problem: str | None = None  # why the chosen package cannot be applied here (Apply disabled)

        # -- 1. identity
        self.identity_field = identity_file_field(self.tr("Open this site's identity"))
        self.passphrase_edit = passphrase_edit(self.unlock)
        self.unlock_button = QPushButton(self.tr("&Unlock"))
        self.unlock_button.clicked.connect(self.unlock)
        self.who_label = QLabel()
        self.who_label.setWordWrap(True)
        self.workspace_field = PathField("workspaces", "dir", title=self.tr("Workspace folder"))
        id_box = QGroupBox(self.tr("1. This site's identity"))
        f = QFormLayout(id_box)
        f.addRow(self.tr("Identity &file:"), self.identity_field)
        pw = QHBoxLayout()
        pw.addWidget(self.passphrase_edit, 1)
        pw.addWidget(self.unlock_button)
        pw_label = QLabel(self.tr("&Passphrase:"))
        pw_label.setBuddy(self.passphrase_edit)
        f.addRow(pw_label, pw)
        f.addRow("", self.who_label)
        f.addRow(self.tr("&Workspace:"), self.workspace_field)

        # -- 2. package
        self.package_field = PathField("packages", "open", self.tr("DC Studio package (*.dcpkg)"),
                                       self.tr("Open the analyst's package"))
        self.package_label = QLabel()
        self.package_label.setWordWrap(True)
        pkg_box = QGroupBox(self.tr("2. The analyst's package"))
        f = QFormLayout(pkg_box)
        f.addRow(self.tr("Pac&kage:"), self.package_field)
        f.addRow("", self.package_label)
        self.older_check = QCheckBox(self.tr("Apply an older package on purpose"))
        self.older_check.setToolTip(self.tr("A package from an earlier analyst run than one already applied to the "
                                            "same bundle is refused unless you tick this (going back on purpose)."))
        f.addRow("", self.older_check)
        # shown only when the workspace's analyst pin cannot be trusted (an earlier version's, or edited): the
        # fingerprint the analyst reads out by phone confirms the key again (core: apply's analyst_fingerprint)
        self.fingerprint_edit = QLineEdit()
        self.fingerprint_edit.setPlaceholderText(self.tr("as the analyst reads it to you by phone"))
        self.fingerprint_label = QLabel(self.tr("Analyst's &fingerprint:"))
        self.fingerprint_label.setBuddy(self.fingerprint_edit)
        f.addRow(self.fingerprint_label, self.fingerprint_edit)
        self.fingerprint_label.setVisible(False)
        self.fingerprint_edit.setVisible(False)

        # -- 3. rows
        self.csv_field = PathField("csv", "open", self.tr("CSV files (*.csv *.txt *.tsv);;All files (*)"),
                                   self.tr("Choose the CSV to apply the package to"))
        self.impute_check = QCheckBox(self.tr(LEGACY_MEAN))
        self.validate_check = QCheckBox(self.tr("These rows carry labels I trust: check the package against my "
                                                "own model first"))
        self.out_field = PathField("results", "save", self.tr("CSV files (*.csv)"), self.tr("Save the results as"))
        csv_box = QGroupBox(self.tr("3. Your rows"))
        f = QFormLayout(csv_box)
        f.addRow(self.tr("&CSV:"), self.csv_field)
        f.addRow("", self.impute_check)
        f.addRow("", self.validate_check)
        f.addRow(self.tr("&Results file:"), self.out_field)
        self.out_format_combo = QComboBox()
        for text, options in OUT_FORMATS:
            self.out_format_combo.addItem(self.tr(text), options)
        self.out_format_combo.setToolTip(self.tr("By default the results are written with the same text encoding, "
                                                 "column separator and decimal mark as your input file, so your "
                                                 "spreadsheet opens them the same way."))
        f.addRow(self.tr("Write &as:"), self.out_format_combo)

        self.apply_button = QPushButton(self.tr("&Apply the package"))
        self.apply_button.setDefault(True)
        self.apply_button.clicked.connect(self.apply)
        self.message = MessageLabel()
        self.audit_restart_button = AuditRestartButton()  # offered when the workspace's audit log is refused
        self.audit_restart_button.restarted.connect(
            lambda result: self.message.show_message("ok", restarted_text(result)))
        self.audit_restart_button.failed.connect(lambda text: self.message.show_message("error", text))
        self.jobs = JobPanel()

        left = QVBoxLayout()
        left.addWidget(id_box)
        left.addWidget(pkg_box)
        left.addWidget(csv_box)
        left.addWidget(self.apply_button, 0, Qt.AlignRight)
        left.addWidget(self.message)
        left.addWidget(self.audit_restart_button, 0, Qt.AlignLeft)
        left.addWidget(self.jobs)
        left.addStretch(1)
        left_w = QWidget()
        left_w.setLayout(left)
        left_w.setMinimumWidth(430)

        # -- results
        self.results_model = TextFrameModel(self)
        self.results_view = QTableView()
        self.results_view.setModel(self.results_model)
        self.results_view.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.results_view.verticalHeader().setDefaultSectionSize(22)
        self.results_label = QLabel(self.tr("<b>Results</b> — apply a package to see them here."))
        self.results_label.setWordWrap(True)
        self.validation_label = QLabel()
        self.validation_label.setWordWrap(True)
        self.validation_label.setTextFormat(Qt.RichText)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setLabel("left", self.tr("rows"))
        self.plot.setMinimumHeight(200)
        self.plot_note = EmptyNote(self.plot, self.tr("After you apply the package, a bar chart here shows how many "
                                                      "of your rows got each predicted class (or cluster)."))
        self.bars: pg.BarGraphItem | None = None
        self._last: dict | None = None  # the inputs of the last apply, for writing again at another threshold

        # -- the check on labelled rows: ROC, calibration, figures; the threshold
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
        self.tabs = QTabWidget()
        self.tabs.addTab(self.plot, self.tr("Predicted classes"))
        self.tabs.addTab(self.check_tab, self.tr("ROC and calibration"))
        self.tabs.addTab(self.figures_table, self.tr("Figures"))
        for i in (1, 2):
            self.tabs.setTabEnabled(i, False)
        self.threshold_mode = QComboBox()
        for key, text in THRESHOLD_MODES:
            self.threshold_mode.addItem(self.tr(text), key)
        self.threshold_spin = QDoubleSpinBox()
        self.threshold_spin.setRange(0.001, 0.999)
        self.threshold_spin.setDecimals(3)
        self.threshold_spin.setSingleStep(0.01)
        self.threshold_spin.setValue(0.5)
        self.threshold_label = QLabel()
        self.threshold_label.setWordWrap(True)
        self.rewrite_button = QPushButton(self.tr("&Write the results again at this threshold"))
        self.rewrite_button.clicked.connect(self.rewrite)
        self.threshold_box = QGroupBox(self.tr("Decision threshold"))
        tb = QVBoxLayout(self.threshold_box)
        row = QHBoxLayout()
        row.addWidget(self.threshold_mode)
        row.addWidget(self.threshold_spin)
        row.addStretch(1)
        row.addWidget(self.rewrite_button)
        tb.addLayout(row)
        tb.addWidget(self.threshold_label)
        self.threshold_box.setVisible(False)
        self.threshold_mode.currentIndexChanged.connect(self._threshold_mode_changed)
        self.threshold_spin.valueChanged.connect(lambda _: self._threshold_changed())
        self.save_button = QPushButton(self.tr("&Save a copy of the results as…"))
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._save_dialog)
        right_split = QSplitter(Qt.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.results_label)
        tl.addWidget(self.validation_label)
        tl.addWidget(self.results_view)
        right_split.addWidget(top)
        right_split.addWidget(self.tabs)
        right_split.setSizes([260, 330])
        right = QVBoxLayout()
        right.addWidget(right_split, 1)
        right.addWidget(self.threshold_box)
        right.addWidget(self.save_button, 0, Qt.AlignRight)
        right_w = QWidget()
        right_w.setLayout(right)

        split = QSplitter(Qt.Horizontal)
        split.addWidget(left_w)
        split.addWidget(right_w)
        split.setStretchFactor(1, 1)
        lay = QVBoxLayout(self)
        lay.addWidget(split)

        self.identity_field.changed.connect(self._identity_changed)
        self.package_field.changed.connect(lambda _: self._describe_package())
        self.csv_field.changed.connect(self._csv_changed)
        self.workspace_field.edit.textChanged.connect(lambda _: self._describe_package())
        self.out_field.edit.textChanged.connect(self._update_buttons)
        self.setTabOrder(self.identity_field, self.passphrase_edit)
        self.setTabOrder(self.passphrase_edit, self.unlock_button)
        self._update_buttons()
        fit_window(self, self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(1280, 720)

    # -- identity
    def _identity_changed(self, path: str) -> None:
        if self.identity is not None and Path(path) != self.identity_path:
            self.identity, self.identity_path = None, None
            self.who_label.setText("")
        self._update_buttons()

    def unlock(self) -> None:
        if self.busy:
            return
        text = self.identity_field.path()
        if not text:
            self.message.show_message("error", self.tr("Choose this site's identity file (.dcid)."))
            return
        path, passphrase = Path(text), self.passphrase_edit.text()

        def ok(ident: Identity) -> None:
            self.passphrase_edit.clear()
            self.identity, self.identity_path = ident, path
            self.identity_field.remember()
            self.who_label.setText(self.tr("Unlocked: <b>{name}</b> ({fp})").format(
                name=esc(ident.name), fp=ident.card.fingerprint))
            self.workspace_field.set_path(str(default_workspace(path)), emit=False)
            self.message.clear_message()
            self._describe_package()
            self._update_buttons()

        self._run(lambda control: Identity.load(path, passphrase), self.tr("Unlocking the identity…"), ok)

    # -- package
    def _describe_package(self) -> None:
        """Say who made the package and for which project; refuse early (Apply disabled, the reason shown) a file
        that is no package, is addressed to another site, or answers a bundle this workspace never exported."""
        path = self.package_field.path()
        self.package_label.setText("")
        self._package_problem = None
        self.message.clear_message()  # an error about the previous package no longer applies
        try:
            if not path:
                return
            try:
                binding = inspect(path)
            except DCError as exc:
                self._refuse_package(str(exc))
                return
            if binding.kind != "package":
                self._refuse_package(self.tr("This is a {kind}, not a package from the analyst.").format(
                    kind=binding.kind))
                return
            project, known = binding.project_id[:8] + "…", None
            ws = self.workspace_field.path()
            if ws:
                kit_path = Path(ws) / "projects" / binding.project_id / "kit.dckit"
                known = kit_path.exists()
                if known:
                    with contextlib.suppress(DCError):
                        project = Kit.load(kit_path).name
            text = self.tr("From the analyst <b>{name}</b> ({fp}), made {created}, for the project <b>{project}</b>.")\
                .format(name=esc(binding.sender.name), fp=binding.sender.fingerprint,
                        created=binding.created[:10], project=esc(project))
            self.package_label.setText(text)
            if self.identity is not None and binding.recipient != self.identity.card.key_id:
                self._refuse_package(self.tr("It is addressed to another site, not to {name}: choose the package "
                                             "the analyst made for {name}.").format(name=self.identity.name), text)
            elif known is False:
                self._refuse_package(self.tr("It is for a project this workspace has never exported to: choose the "
                                             "workspace your bundle was exported from, or this project's package."),
                                     text)
            elif known and binding.in_reply_to and not (
                    Path(ws) / "projects" / binding.project_id / "exports" / binding.in_reply_to[:16]).is_dir():
                self._refuse_package(self.tr("It answers a bundle this workspace did not export: choose the "
                                             "workspace that exported it."), text)
            else:
                self.package_field.remember()
        finally:
            self._update_buttons()

    def _refuse_package(self, reason: str, described: str = "") -> None:
        self._package_problem = reason
        self.package_label.setText((described + "<br>" if described else "")
                                   + f"<span style='color:#b91c1c'>{esc(reason)}</span>")

    # -- rows
    def _csv_changed(self, path: str) -> None:
        if path and (not self.out_field.path() or self.out_field.path() == self._auto_out):
            p = Path(path)
            self._auto_out = str(p.with_name(f"{p.stem}-results.csv"))
            self.out_field.set_path(self._auto_out, emit=False)
        self._update_buttons()

    def _update_buttons(self) -> None:
        ready = (self.identity is not None and all(f.path() for f in (
            self.workspace_field, self.package_field, self.csv_field, self.out_field)) and not self.busy)
        self.apply_button.setEnabled(ready and self._package_problem is None)
        self.apply_button.setToolTip(self._package_problem or "")
        self.unlock_button.setEnabled(not self.busy)
        self.rewrite_button.setEnabled(self._last is not None and not self.busy)

    # -- apply
    def _run(self, fn, title: str, ok) -> None:
        self.message.clear_message()
        self.audit_restart_button.offer(None, None)
        def hide_panel(*_) -> None:
            self.jobs.setVisible(False)

        def failed(text: str) -> None:
            error = self.job.exception if self.job is not None else None
            if isinstance(error, UntrustedPin):  # ask for the fingerprint, as the first export did
                self.fingerprint_label.setVisible(True)
                self.fingerprint_edit.setVisible(True)
                self.fingerprint_edit.setFocus()
            offered = self.audit_restart_button.offer(error, self.identity)
            self.message.show_message("error", refusal_text(error) if offered else text)

        self._busy = True
        job = run_job(self.jobs, fn, title, [ok, hide_panel], [failed, hide_panel], self._job_ended)
        self._update_buttons()
        self.job = job

    def _job_ended(self) -> None:
        self._busy = False
        self._update_buttons()

    @property
    def busy(self) -> bool:
        """True from the start of a job until its outcome has been shown."""
        return self._busy

    def apply(self) -> None:
        if self.busy or self.identity is None:
            return
        package, csv, out = Path(self.package_field.path()), Path(self.csv_field.path()), Path(self.out_field.path())
        if out.resolve() == csv.resolve():
            self.message.show_message("error", self.tr("Choose another results file: your CSV is never overwritten."))
            return
        ident, ws, impute = self.identity, Path(self.workspace_field.path()), self.impute_check.isChecked()
        validate, older = self.validate_check.isChecked(), self.older_check.isChecked()
        self.outcome = None
        self.save_button.setEnabled(False)

        def ok(outcome: dict) -> None:
            self.outcome = outcome
            self.csv_field.remember()
            self._show(outcome)

        out_options = self.out_format_combo.currentData()
        last = {"package": package, "identity": ident, "csv": csv, "out": out, "workspace": ws, "impute": impute,
                "out_options": out_options, "validate": validate, "allow_older": older}
        fingerprint = None if self.fingerprint_edit.isHidden() else (self.fingerprint_edit.text().strip() or None)
        self._run(lambda control: _apply_and_read(package, ident, csv, out, ws, impute, control, out_options,
                                                  validate, allow_older=older, analyst_fingerprint=fingerprint),
                  self.tr("Applying the package…"), lambda outcome: (self._remember(last), ok(outcome)))

    def _remember(self, last: dict) -> None:
        self._last = last

    def rewrite(self) -> None:
        """Write the results again (core's apply) at the threshold chosen here, said so in the file and the audit."""
        if self.busy or self._last is None:
            return
        a = self._last
        mode, value = self.threshold_mode.currentData(), float(self.threshold_spin.value())
        threshold, target = (value, None) if mode == "threshold" else (None, (mode, value))

        def ok(outcome: dict) -> None:
            self.outcome = outcome
            self._show(outcome, keep_threshold=True)

        self._run(lambda control: _apply_and_read(a["package"], a["identity"], a["csv"], a["out"], a["workspace"],
                                                  a["impute"], control, a["out_options"], a["validate"],
                                                  threshold, target, a["allow_older"]),
                  self.tr("Writing the results again at the new threshold…"), ok)

    def _show(self, outcome: dict, keep_threshold: bool = False) -> None:
        result: ApplyResult = outcome["result"]
        frame: pd.DataFrame = outcome["frame"]
        self.results_model.set_frame(frame)
        added = [frame.columns.get_loc(c) for c in result.columns if c in frame.columns]
        self.results_model.set_roles(set(), set(added))
        if added:
            self.results_view.scrollTo(self.results_model.index(0, added[0]))
        shown = min(len(frame), result.rows)
        self.results_label.setText(self.tr(
            "<b>Results</b>: {rows:,} rows written to <b>{file}</b> with the new column(s) {cols}. "
            "The first {shown} are shown.").format(rows=result.rows, file=esc(result.out_path.name),
                                                   cols=esc(", ".join(result.columns[:4]) + (
                                                       ", …" if len(result.columns) > 4 else "")),
                                                   shown=shown))
        note = self.tr(KEPT_OWN_WORDS) if result.model_note == KEPT_OWN_WORDS else result.model_note
        kept = ("<p>" + esc(note[:1].upper() + note[1:]) + ".</p>") if note else ""
        self.validation_label.setText(kept + self._validation_text(result.validation, result.choice))
        # the same package again is what a rewrite the person asked for is: said plainly, not as a warning (issue #33
        # item 14); another note (an older package applied on purpose) stays a warning
        notes = [w for w in result.warnings if not (keep_threshold and w.startswith(ALREADY_APPLIED))]
        if notes:  # the same package again, or one superseded by a newer run
            self.message.show_message("warning", self.tr("Done: {path}. Note: {warnings}").format(
                path=result.out_path, warnings=" ".join(notes)))
        elif keep_threshold:
            self.message.show_message("ok", self.tr("Written again at the threshold you chose: {path}").format(
                path=result.out_path))
        else:
            self.message.show_message("ok", self.tr("Done: {path}").format(path=result.out_path))
        self._plot(outcome["column"], outcome["counts"])
        self._show_check(result, keep_threshold)
        self.save_button.setEnabled(True)

    def _in_use(self, choice: dict | None) -> str:
        """The model the results come from, in words (issue #37: own, the package as sent, or an update)."""
        kind = (choice or {}).get("kind")
        if kind in UPDATE_WORDS:
            return self.tr("the model you use ({what})").format(what=self.tr(UPDATE_WORDS[kind]))
        return self.tr("the analyst's package")

    def _validation_text(self, v: dict | None, choice: dict | None = None) -> str:
        """The model in use beside the site's own-rows model (and the shared model as sent) on its labelled rows,
        each with n and a 95 % interval."""
        if not v:
            return ""
        if v.get("own_model_package"):  # the package is the site's own model: no self-comparison
            return "<br>".join([
                self.tr("<b>Checked on {n} labelled row(s) of yours</b> (95 % Wilson interval):").format(n=v["rows"]),
                self.tr("your own model (what the package told this site to keep): <b>{a}</b>").format(
                    a=esc(describe(v["package"])))])
        lines = [self.tr("<b>Checked on {n} labelled row(s) of yours</b> (95 % Wilson intervals):").format(
            n=v["rows"]), self.tr("{what}: <b>{a}</b>").format(what=esc(self._in_use(choice)),
                                                                 a=esc(describe(v["package"])))]
        if v.get("analyst_expected"):
            lines.append(self.tr("the analyst expected: {a}").format(a=esc(describe(v["analyst_expected"]))))
        if v.get("local"):
            lines.append(self.tr("your own-rows model: <b>{a}</b>").format(a=esc(describe(v["local"]))))
        which = self.tr("the package") if v["recommend"] == "package" else self.tr("your own model")
        lines.append(self.tr("Recommended: <b>{w}</b> — {why}").format(w=which, why=esc(v["reason"])) + (
            self.tr(" (column <i>recommended</i>)") if v.get("local") else ""))
        if v.get("weak"):
            lines.append(self.tr("<span style='color:#b45309'>Too few labelled rows for these numbers to mean "
                                 "much.</span>"))
        return "<br>".join(lines)

    # -- the check on labelled rows
    def _show_check(self, result: ApplyResult, keep_threshold: bool) -> None:
        """ROC and calibration of the package and the site's own model, the figures and the threshold control."""
        scored = result.scored
        binary = result.threshold is not None
        self.threshold_box.setVisible(binary)
        self.threshold_box.setTitle(self.tr("Decision threshold: '{pos}' (the kit's second class) when its risk ≥ "
                                            "the threshold").format(pos=result.threshold["positive"]) if binary
                                    else "")
        if binary and not keep_threshold:
            self.threshold_mode.blockSignals(True)
            self.threshold_mode.setCurrentIndex(0)
            self.threshold_mode.blockSignals(False)
            self.threshold_spin.blockSignals(True)
            self.threshold_spin.setValue(result.threshold["value"])
            self.threshold_spin.blockSignals(False)
        for key in ("sensitivity", "specificity"):  # choosing by a rate needs labelled rows of both classes
            index = self.threshold_mode.findData(key)
            self.threshold_mode.model().item(index).setEnabled(scored is not None)
        for i in (1, 2):
            self.tabs.setTabEnabled(i, scored is not None)
        self.roc_plot.clear()
        self.calibration_plot.clear()
        self.roc_curves, self.calibration_curves, self.risk_bars, self.operating_point = {}, {}, None, None
        self.figures_table.setRowCount(0)
        if scored is None:
            self.tabs.setCurrentIndex(0)
            self._threshold_changed()
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
        if binary:
            self._draw_curves(scored["y"], models)
            self.tabs.setCurrentIndex(1)
        else:
            self.tabs.setCurrentIndex(2)
        self._threshold_changed()

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

    def _threshold_mode_changed(self) -> None:
        mode = self.threshold_mode.currentData()
        self.threshold_spin.blockSignals(True)
        if mode == "threshold":
            self.threshold_spin.setValue(self.chosen_threshold() or 0.5)
        else:  # a rate to reach: start from the rate at the current threshold
            self.threshold_spin.setValue(0.9)
        self.threshold_spin.blockSignals(False)
        self._threshold_changed()

    def chosen_threshold(self) -> float | None:
        """The threshold the control gives now (None when a rate cannot be reached on these rows)."""
        mode, value = self.threshold_mode.currentData(), float(self.threshold_spin.value())
        if mode == "threshold":
            return value
        scored = self.outcome["result"].scored if self.outcome else None
        if scored is None:
            return None
        try:
            return threshold_for(scored["y"], scored["package"][:, 1], **{mode: value})
        except ConfigError:
            return None

    def _threshold_changed(self) -> None:
        """Sensitivity and specificity of the package at the chosen threshold, on the labelled rows."""
        result = self.outcome["result"] if self.outcome else None
        if result is None or result.threshold is None:
            return
        t = self.chosen_threshold()
        written = self.tr("Written at {w:.3f}.").format(w=result.threshold["value"])
        scored = result.scored
        if t is None or scored is None:
            self.threshold_label.setText(written + (" " + self.tr("This choice needs labelled rows of both classes.")
                                                    if t is None else ""))
            return
        y = scored["y"]
        sens, spec = (float(r[0]) for r in rates_at(y, scored["package"][:, 1], [t]))
        called = scored["package"][:, 1] >= t
        self.threshold_label.setText(self.tr(
            "At {t:.3f}, the package: sensitivity <b>{se:.2f}</b> ({tp}/{p}), specificity <b>{sp:.2f}</b> "
            "({tn}/{n}) on your labelled rows. {written}").format(
            t=t, se=sens, sp=spec, tp=int(np.sum(called & (y == 1))), p=int(np.sum(y == 1)),
            tn=int(np.sum(~called & (y == 0))), n=int(np.sum(y == 0)), written=written))
        if self.operating_point is not None:
            self.operating_point.setData([1.0 - spec], [sens])

    def _plot(self, column: str, counts: list[tuple[str, int]]) -> None:
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

    def save_copy(self, path: str | Path) -> Path:
        """Copy the written results CSV to ``path``."""
        if self.outcome is None:
            raise RuntimeError("no results yet")
        src = self.outcome["result"].out_path
        dst = Path(path)
        if dst.resolve() != src.resolve():
            shutil.copyfile(src, dst)
        return dst

    def _save_dialog(self) -> None:
        if self.outcome is None:
            return
        src = self.outcome["result"].out_path
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save a copy of the results"), str(src),
                                              self.tr("CSV files (*.csv)"))
        if path:
            try:
                self.save_copy(path)
            except OSError as exc:
                self.message.show_message("error", f"{path}: {exc.strerror or exc}")
                return
            self.message.show_message("ok", self.tr("Saved a copy to {path}").format(path=path))
