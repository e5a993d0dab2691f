"""The project page's kit-making section, first half: the sample CSV and the project's columns — the task,
the label and row id columns, what the kit publishes of the sample, and the schema grid (each column's type,
levels, missing values and "other"), re-inferred by core in a job after every choice."""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QFileDialog, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.api import DCError
from core.api.common import Schema, infer_schema, preview

from ..jobs import Job
from ..widgets import JobPanel, MessageLabel
from .common import ThrottledJob
from .form_rows import form_layout, path_row, short_combo
from .schema_grid import SchemaGrid

LABEL_GUESSES = ("label", "class", "target", "y", "outcome", "diagnosis")


class SampleSection(QWidget):
    """The sample's form and the schema grid. ``schema`` (or ``schema_error``, core's sentence on the sample or
    on a choice in the grid) is the latest inference's; ``inferring`` is emitted when one starts and
    ``schema_changed`` when it ends."""

    inferring = Signal()
    schema_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.schema: Schema | None = None
        self.schema_error: str | None = None
        self.columns: list[str] = []
        self.notes: list[str] = []
        self._schema_job: Job | None = None
        form = self._create_form = form_layout()
        self.sample_edit = QLineEdit()
        self.sample_edit.setPlaceholderText(self.tr("a small CSV with the project's columns"))
        self.sample_edit.editingFinished.connect(lambda: self.load_sample(self.sample_edit.text()))
        self.sample_browse_button = QPushButton(self.tr("Bro&wse…"))
        self.sample_browse_button.clicked.connect(self._browse_sample)
        form.addRow(self.tr("&Sample CSV:"), path_row(self.sample_edit, self.sample_browse_button))
        self.project_name = QLineEdit()
        form.addRow(self.tr("Project &name:"), self.project_name)
        self.task_combo = short_combo()
        self.task_combo.addItem(self.tr("Classification (predict a label)"), "classification")
        self.task_combo.addItem(self.tr("Clustering (group the rows)"), "clustering")
        self.task_combo.setSizeAdjustPolicy(QComboBox.AdjustToContents)  # two short choices: never elided
        form.addRow(self.tr("&Task:"), self.task_combo)
        self.label_combo = short_combo()
        self.label_combo.activated.connect(lambda _: self.infer())
        form.addRow(self.tr("&Label column:"), self.label_combo)
        self.id_combo = short_combo()
        self.id_combo.activated.connect(lambda _: self.infer())
        form.addRow(self.tr("Row i&d column:"), self.id_combo)
        self.ranges_check = QCheckBox(self.tr("Publish the sample's min/max ranges in the kit"))
        self.ranges_check.setToolTip(self.tr("Public ranges let the lead site make a uniform or Gaussian anchor"))
        form.addRow("", self.ranges_check)
        self.statistics_check = QCheckBox(self.tr("Publish the sample's averages and spreads in the kit"))
        self.statistics_check.setToolTip(self.tr("Each site compares its columns with them before export, to catch a "
                                                 "column in another unit (inches for centimetres, 1/2 for 0/1)"))
        self.statistics_check.setChecked(True)
        form.addRow("", self.statistics_check)
        self.blocks_edit = QLineEdit()
        self.blocks_edit.setPlaceholderText(self.tr("optional, e.g. clinical=age,bmi;lab=crp,hb (sites holding "
                                                    "different columns of the same people)"))
        self.blocks_edit.setToolTip(self.tr("Feature blocks (vertical partition): NAME=col,col;NAME=col,…  "
                                            "Needs a row id column to link the blocks."))
        form.addRow(self.tr("Feature &blocks:"), self.blocks_edit)

        self.schema_table = SchemaGrid()
        self.schema_table.setMinimumHeight(230)  # eight rows
        self.schema_table.setMaximumHeight(320)
        self.schema_table.edited.connect(self.infer)
        self.schema_job_panel = JobPanel()
        self.classes_label = QLabel()
        self.classes_label.setWordWrap(True)
        self.schema_notes = MessageLabel()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(form)
        lay.addWidget(self.schema_job_panel)
        lay.addWidget(self.schema_table, 1)
        lay.addWidget(self.classes_label)
        lay.addWidget(self.schema_notes)

    def show_task_options(self, task: str) -> None:
        """Feature blocks only for clustering, whose default (uniform) anchor needs public ranges."""
        clustering = task == "clustering"
        self.blocks_edit.setVisible(clustering)
        self._create_form.labelForField(self.blocks_edit).setVisible(clustering)
        self.ranges_check.setChecked(clustering)

    def task_changed(self, task: str) -> None:
        """A clustering sample has no label column: choose the columns again and infer."""
        if self.columns:
            self._fill_column_combos(None if task == "clustering" else
                                     next((c for c in self.columns if c.lower() in LABEL_GUESSES), None))
            self.infer()

    def _browse_sample(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Sample CSV"), self.sample_edit.text(),
                                              self.tr("CSV files (*.csv *.txt *.tsv);;All files (*)"))
        if path:
            self.load_sample(path)

    def load_sample(self, path: str) -> Job | None:
        """Read the header (fast, on the UI thread), then infer the schema in a job."""
        path = path.strip()
        self.sample_edit.setText(path)
        if not path:
            return None
        try:
            frame, fmt = preview(path, nrows=20)
        except DCError as exc:
            self.schema_notes.show_message("error", str(exc))
            return None
        self.columns = list(frame.columns)
        self.schema_table.forget_all()
        if not self.project_name.text().strip():
            self.project_name.setText(Path(path).stem.replace("_", " ").replace("-", " ").title())
        guess = next((c for c in self.columns if c.lower() in LABEL_GUESSES), None)
        self._fill_column_combos(guess)
        self.schema_notes.show_message("info", self.tr("Read as {fmt}.").format(fmt=fmt.describe()))
        return self.infer()

    def _fill_column_combos(self, label_guess: str | None) -> None:
        for combo in (self.label_combo, self.id_combo):
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(self.tr("(none)"), None)
            for c in self.columns:
                combo.addItem(c, c)
            combo.blockSignals(False)
        clustering = self.task_combo.currentData() == "clustering"
        if label_guess and not clustering:
            self.label_combo.setCurrentIndex(self.columns.index(label_guess) + 1)
        elif self.columns and not clustering:
            self.label_combo.setCurrentIndex(len(self.columns))

    def infer(self) -> Job | None:
        path = self.sample_edit.text().strip()
        if not path or not self.columns:
            return None
        label, id_col = self.label_combo.currentData(), self.id_combo.currentData()
        self.schema_table.forget(label, id_col)  # a column that became the label or id has no type
        choices, level_texts = deepcopy(self.schema_table.choices), dict(self.schema_table.level_texts)
        if self._schema_job is not None and self._schema_job.running:
            self._schema_job.cancel()
        self.inferring.emit()

        def work(control):
            for name, text in level_texts.items():  # core reads the levels cells (a wrong merge fails here)
                choices.set_levels(name, text)
            control.step(0.1, "reading the sample")
            return infer_schema(path, label=label, id_column=id_col, with_ranges=True, choices=choices)

        job = ThrottledJob(work, self.tr("Reading the sample"))
        job.succeeded.connect(lambda res, j=job: self._schema_ready(j, res))
        job.failed.connect(lambda msg, j=job: self._schema_failed(j, msg))
        self._schema_job = job
        return self.schema_job_panel.run(job)

    @property
    def schema_job(self) -> Job | None:
        """The latest schema inference (started by a new sample, a label/id choice or an edit in the grid)."""
        return self._schema_job

    def _schema_failed(self, job: Job, message: str) -> None:
        if job is not self._schema_job:
            return
        self.schema, self.schema_error = None, message
        self.schema_job_panel.setVisible(False)
        if not self.schema_table.has_decisions():  # the sample itself: nothing to show
            self.schema_table.clear_rows()
            self.classes_label.clear()
        # else the grid keeps the analyst's edit, to be corrected; core's sentence says what is wrong
        self.schema_notes.show_message("error", message)
        self.schema_changed.emit()

    def _schema_ready(self, job: Job, result) -> None:
        if job is not self._schema_job:
            return
        self.schema_job_panel.setVisible(False)
        self.schema, self.notes = result
        self.schema_error = None
        self.schema_table.show_schema(self.columns, self.schema, self.notes)
        classes = self.schema.classes
        self.classes_label.setText(self.tr("Classes ({n}): {classes}").format(n=len(classes),
                                                                              classes=", ".join(classes))
                                   if classes else self.tr("No label column: rows are not labelled."))
        s = self.schema
        summary = self.tr("{n} feature columns ({m} matrix columns), {k} left out. Change a type, the levels or "
                          "the missing values in the grid.").format(n=len(s.features), m=s.width, k=len(s.ignored))
        shares = [f"{f.name} {100 * f.missing_share:.0f} %" if f.missing_share >= 0.01 else f"{f.name} < 1 %"
                  for f in s.features if f.missing_share]
        if shares:
            summary += " " + self.tr("Missing in the sample, as the kit publishes it (over groups of at least 10 "
                                     "rows): {shares}.").format(shares=", ".join(shares))
        # a note on a feature or left-out column is in its row (the Note cell's tooltip); the rest are said here
        in_grid = s.feature_names + [c.name for c in s.ignored if c.name]
        rest = [n for n in self.notes if not any(f"'{c}'" in n for c in in_grid)]
        self.schema_notes.show_message("warning" if rest else "info",
                                       summary + (" " + "; ".join(rest) + "." if rest else ""))
        self.schema_changed.emit()
