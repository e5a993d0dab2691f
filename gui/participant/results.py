"""The participant's last step: apply the analyst's package to this site's rows and look at the results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFileDialog, QPushButton, QSplitter, QVBoxLayout, QWidget

from core.api import Identity
from core.api.common import CsvOptions, SiteWorkspace, UntrustedPin, default_workspace, natural_sorted, preview
from core.api.participant import ALREADY_APPLIED, ApplyResult, apply_package

from ..audit_restart import AuditRestartButton, refusal_text, restarted_text
from ..screen import fit_window
from ..sections import forward
from ..widgets import JobPanel, MessageLabel, esc
from .common import run_job
from .results_charts import ResultCharts
from .results_inputs import RowsBox, SiteIdentityBox
from .results_package import PackageBox
from .results_summary import ResultsSummary
from .results_threshold import ThresholdBox

RESULT_ROWS = 200


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

    The window composes its sections, each a widget in its own module: this site's identity and the rows
    (:mod:`gui.participant.results_inputs`), the package (:mod:`gui.participant.results_package`), what was
    written and the check (:mod:`gui.participant.results_summary`), the plots
    (:mod:`gui.participant.results_charts`) and the decision threshold (:mod:`gui.participant.results_threshold`).
    It runs the jobs (unlock, apply, write again) and keeps every section's test hooks as its own attributes.
    The sections: ``identity_box``, ``package_box``, ``rows_box``, ``summary``, ``tabs``, ``threshold_box``.
    """

    # the sections' widgets and objects, kept as the window's own test hooks
    identity_field = forward("identity_box", "identity_field")
    passphrase_edit = forward("identity_box", "passphrase_edit")
    unlock_button = forward("identity_box", "unlock_button")
    who_label = forward("identity_box", "who_label")
    workspace_field = forward("identity_box", "workspace_field")
    package_field = forward("package_box", "package_field")
    package_label = forward("package_box", "package_label")
    older_check = forward("package_box", "older_check")
    fingerprint_edit = forward("package_box", "fingerprint_edit")
    fingerprint_label = forward("package_box", "fingerprint_label")
    csv_field = forward("rows_box", "csv_field")
    impute_check = forward("rows_box", "impute_check")
    validate_check = forward("rows_box", "validate_check")
    out_field = forward("rows_box", "out_field")
    out_format_combo = forward("rows_box", "out_format_combo")
    results_model = forward("summary", "results_model")
    results_view = forward("summary", "results_view")
    results_label = forward("summary", "results_label")
    validation_label = forward("summary", "validation_label")
    plot = forward("tabs", "plot")
    plot_note = forward("tabs", "plot_note")
    bars = forward("tabs", "bars")
    check_tab = forward("tabs", "check_tab")
    roc_plot = forward("tabs", "roc_plot")
    roc_curves = forward("tabs", "roc_curves")
    calibration_plot = forward("tabs", "calibration_plot")
    calibration_curves = forward("tabs", "calibration_curves")
    risk_bars = forward("tabs", "risk_bars")
    operating_point = forward("tabs", "operating_point")
    figures_table = forward("tabs", "figures_table")
    threshold_mode = forward("threshold_box", "threshold_mode")
    threshold_spin = forward("threshold_box", "threshold_spin")
    threshold_label = forward("threshold_box", "threshold_label")
    rewrite_button = forward("threshold_box", "rewrite_button")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("DC Studio — apply the analyst's package"))
        self.identity: Identity | None = None
        self.identity_path: Path | None = None
        self.outcome: dict | None = None
        self._busy = False
        self._last: dict | None = None  # the inputs of the last apply, for writing again at another threshold

        self.identity_box = SiteIdentityBox(self.unlock)
        self.package_box = PackageBox()
        self.rows_box = RowsBox()
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
        left.addWidget(self.identity_box)
        left.addWidget(self.package_box)
        left.addWidget(self.rows_box)
        left.addWidget(self.apply_button, 0, Qt.AlignRight)
        left.addWidget(self.message)
        left.addWidget(self.audit_restart_button, 0, Qt.AlignLeft)
        left.addWidget(self.jobs)
        left.addStretch(1)
        left_w = QWidget()
        left_w.setLayout(left)
        left_w.setMinimumWidth(430)

        self.summary = ResultsSummary()
        self.tabs = ResultCharts()
        self.threshold_box = ThresholdBox(lambda: self.outcome["result"] if self.outcome else None)
        self.threshold_box.rewrite_button.clicked.connect(self.rewrite)
        self.threshold_box.point_moved.connect(self.tabs.mark_operating_point)
        self.save_button = QPushButton(self.tr("&Save a copy of the results as…"))
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._save_dialog)
        right_split = QSplitter(Qt.Vertical)
        right_split.addWidget(self.summary)
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
        self.csv_field.changed.connect(lambda _: self._update_buttons())  # after the rows box names the results
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
        """Describe the package, or refuse it early (Apply disabled, the reason shown)."""
        self.message.clear_message()  # an error about the previous package no longer applies
        try:
            self.package_box.describe(self.identity, self.workspace_field.path())
        finally:
            self._update_buttons()

    def _update_buttons(self) -> None:
        ready = (self.identity is not None and all(f.path() for f in (
            self.workspace_field, self.package_field, self.csv_field, self.out_field)) and not self.busy)
        self.apply_button.setEnabled(ready and self.package_box.problem is None)
        self.apply_button.setToolTip(self.package_box.problem or "")
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
                self.package_box.ask_fingerprint()
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
        fingerprint = self.package_box.fingerprint()
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
        threshold, target = self.threshold_box.chosen()

        def ok(outcome: dict) -> None:
            self.outcome = outcome
            self._show(outcome, keep_threshold=True)

        self._run(lambda control: _apply_and_read(a["package"], a["identity"], a["csv"], a["out"], a["workspace"],
                                                  a["impute"], control, a["out_options"], a["validate"],
                                                  threshold, target, a["allow_older"]),
                  self.tr("Writing the results again at the new threshold…"), ok)

    def _show(self, outcome: dict, keep_threshold: bool = False) -> None:
        result: ApplyResult = outcome["result"]
        self.summary.show_outcome(outcome)
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
        self.tabs.show_counts(outcome["column"], outcome["counts"])
        self.threshold_box.show_result(result, keep_threshold)
        self.tabs.show_check(result)
        self.threshold_box.threshold_changed()
        self.save_button.setEnabled(True)

    def chosen_threshold(self) -> float | None:
        """The threshold the control gives now (None when a rate cannot be reached on these rows)."""
        return self.threshold_box.chosen_threshold()

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
