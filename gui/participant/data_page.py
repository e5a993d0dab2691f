"""Page 4: the site's CSV — preview, format overrides, how each column maps to the project, and every
problem shown at its cell with the core's own sentence."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.api import DCError
from core.api.common import (
    LEGACY_MEAN,
    MISSING_TOKENS,
    CsvFormat,
    CsvOptions,
    LocalTable,
    data_records,
    get_method,
    preview,
)
from core.api.participant import ParticipantRound

from ..jobs import Job
from ..screen import rows_height
from ..widgets import esc
from .common import Page, PathField, TextFrameModel

PREVIEW_ROWS = 50
ENCODINGS = [("UTF-8", "utf-8"), ("UTF-8 with BOM", "utf-8-sig"), ("Windows-1252 (Western Europe)", "cp1252"),
             ("Shift_JIS (Japanese)", "shift_jis"), ("Shift_JIS (Windows, cp932)", "cp932"), ("UTF-16", "utf-16")]
DELIMITERS = [("comma  ,", ","), ("semicolon  ;", ";"), ("tab", "\t")]
DECIMALS = [("point  1.5", "."), ("comma  1,5", ",")]
_LINE_COLUMN = re.compile(r"\bline (\d+)(?:, column '([^']*)'|: the (?:label|id) column '([^']*)')?")
_COLUMN = re.compile(r"\bcolumn '([^']*)'")
_UNKNOWN_LABELS = re.compile(r"the label column '[^']*' has values? (.*?) on [\d,]+ rows?")


class DataPage(Page):
    """Choose the CSV, check its format and columns, and read it with :meth:`ParticipantRound.load`.

    Test hooks: ``csv_field`` (PathField; ``set_csv(path)``), ``encoding_combo``, ``delimiter_combo``,
    ``decimal_combo`` (item data None = detect), ``missing_edit``, ``impute_check``, ``preview_view`` /
    ``preview_model`` (TextFrameModel; ``.highlight`` = (row, column) of the cell an error names),
    ``columns_table``, ``format_label``; ``exporter`` / ``table`` once the file reads cleanly; ``units_box``,
    ``units_label``, ``units_check`` (the units check: shown when core names columns that do not look like the
    kit's sample; the page is complete, and the bundle can be sealed, only once it is ticked).
    """

    def __init__(self):
        super().__init__(self.tr("Your data"),
                         self.tr("Choose this site's CSV file. It is read here, on this computer; nothing "
                                 "leaves it on this page."))
        self.exporter: ParticipantRound | None = None
        self.table: LocalTable | None = None
        self.fmt: CsvFormat | None = None
        self.frame: pd.DataFrame | None = None
        self.line_numbers: list[int] = []
        self._generation = 0
        self._context: tuple | None = None
        self._locate_job: Job | None = None

        self.csv_field = PathField("csv", "open", self.tr("CSV files (*.csv *.txt *.tsv);;All files (*)"),
                                   self.tr("Choose this site's CSV file"))
        self.csv_field.changed.connect(lambda _: self.refresh())
        self.encoding_combo = QComboBox()
        self.delimiter_combo = QComboBox()
        self.decimal_combo = QComboBox()
        for combo, items in ((self.encoding_combo, ENCODINGS), (self.delimiter_combo, DELIMITERS),
                             (self.decimal_combo, DECIMALS)):
            combo.addItem(self.tr("Detect"), None)
            for text, value in items:
                combo.addItem(self.tr(text), value)
            combo.setSizeAdjustPolicy(QComboBox.AdjustToContents)
            combo.currentIndexChanged.connect(lambda _=0: self.refresh())
        self.format_label = QLabel()
        self.format_label.setWordWrap(True)
        self.missing_edit = QLineEdit(", ".join(t for t in MISSING_TOKENS if t))
        self.missing_edit.setToolTip(self.tr("Cell values that mean 'missing', separated by commas. An empty cell "
                                             "is always missing."))
        self.missing_edit.editingFinished.connect(self._tokens_edited)
        self._tokens_text = self.missing_edit.text()
        self.impute_check = QCheckBox(self.tr(LEGACY_MEAN.replace("missing", "&missing", 1)))
        self.impute_check.setToolTip(self.tr("Kits made now decide missing values per column themselves; this is for "
                                             "kits whose columns refuse them"))
        self.impute_check.toggled.connect(lambda _: self.refresh())

        form = QFormLayout()
        form.addRow(self.tr("CSV &file:"), self.csv_field)
        fmt_row = QHBoxLayout()
        for text, combo in ((self.tr("&Encoding:"), self.encoding_combo), (self.tr("&Separator:"),
                                                                            self.delimiter_combo),
                            (self.tr("&Decimal mark:"), self.decimal_combo)):
            label = QLabel(text)
            label.setBuddy(combo)
            fmt_row.addWidget(label)
            fmt_row.addWidget(combo)
        fmt_row.addStretch(1)
        form.addRow(self.tr("Format:"), fmt_row)
        form.addRow("", self.format_label)

        self.preview_model = TextFrameModel(self)
        self.preview_view = QTableView()
        self.preview_view.setModel(self.preview_model)
        self.preview_view.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.preview_view.horizontalHeader().setDefaultSectionSize(90)
        self.preview_view.verticalHeader().setDefaultSectionSize(22)
        self.preview_view.setToolTip(self.tr("The first rows of the file; the row numbers are the file's line "
                                             "numbers."))
        self.columns_table = QTableWidget(0, 4)
        self.columns_table.setHorizontalHeaderLabels([self.tr("Your column"), self.tr("Used as"),
                                                      self.tr("In the project"), self.tr("Missing (first rows)")])
        self.columns_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.columns_table.verticalHeader().setVisible(False)
        header = self.columns_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeToContents)
        self.columns_table.verticalHeader().setDefaultSectionSize(22)
        split = QSplitter(Qt.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(QLabel(self.tr("<b>First rows</b>")))
        tl.addWidget(self.preview_view)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(QLabel(self.tr("<b>How each column is used</b>")))
        bl.addWidget(self.columns_table)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setChildrenCollapsible(False)
        # never fewer than the first 6 rows and 5 column rows (the page scrolls instead, on a small screen)
        self.preview_view.setMinimumHeight(rows_height(self.preview_view, 6))
        self.columns_table.setMinimumHeight(rows_height(self.columns_table, 5))
        split.setSizes([260, 170])
        opts = QFormLayout()
        opts.addRow(self.tr("Also &treat as missing:"), self.missing_edit)
        opts.addRow("", self.impute_check)

        self.units_box = QGroupBox(self.tr("Check these columns before you export"))
        self.units_box.setStyleSheet("QGroupBox{background:#fffbeb;border:1px solid #f59e0b;border-radius:4px;"
                                     "margin-top:1.2em;padding:4px}QGroupBox::title{color:#92400e;"
                                     "subcontrol-origin:margin;left:8px}")
        self.units_label = QLabel()
        self.units_label.setWordWrap(True)
        self.units_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.units_check = QCheckBox(self.tr("I &checked these columns: they are right"))
        self.units_check.setToolTip(self.tr("Tick only after looking at these columns in your file. If one is in "
                                            "another unit or coding, convert it in the file and choose it again."))
        self.units_check.toggled.connect(self._units_checked)
        ul = QVBoxLayout(self.units_box)
        ul.setContentsMargins(8, 4, 8, 4)
        ul.addWidget(self.units_label)
        ul.addWidget(self.units_check)
        self.units_box.setVisible(False)

        self.body.addLayout(form)
        self.body.addWidget(split, 1)
        self.body.addWidget(self.units_box)
        self.body.addLayout(opts)
        self.message.setTextInteractionFlags(Qt.TextSelectableByMouse)

    # -- inputs
    def set_csv(self, path: str | Path) -> None:
        self.csv_field.set_path(str(path))

    def csv_options(self) -> CsvOptions:
        tokens = [t.strip() for t in self.missing_edit.text().split(",")]
        return CsvOptions(encoding=self.encoding_combo.currentData(), delimiter=self.delimiter_combo.currentData(),
                          decimal=self.decimal_combo.currentData(),
                          missing_tokens=tuple(dict.fromkeys(["", *[t for t in tokens if t]])),
                          impute="mean" if self.impute_check.isChecked() else None)

    def _tokens_edited(self) -> None:
        if self.missing_edit.text() != self._tokens_text:
            self._tokens_text = self.missing_edit.text()
            self.refresh()

    def _context_key(self) -> tuple:
        s = self.state
        return (id(s.identity), s.kit.digest() if s.kit else None, id(s.anchor), str(s.workspace()))

    def initializePage(self) -> None:
        key = self._context_key()
        if key != self._context and self.csv_field.path():
            self.refresh()

    # -- reading
    def refresh(self) -> None:
        """Preview the file with the current options, then read all of it against the kit in a job."""
        self._generation += 1
        self.exporter, self.table = None, None
        self._show_units([])
        self.message.clear_message()
        self.preview_model.set_highlight(None, None)
        path = self.csv_field.path()
        if not path:
            self._show_preview(None, None)
            self.completeChanged.emit()
            return
        options = self.csv_options()
        try:
            frame, fmt = preview(path, options, PREVIEW_ROWS)
        except DCError as exc:
            self._show_preview(None, None)
            self.message.show_message("error", self._sentence(str(exc)))
            self.completeChanged.emit()
            return
        self._show_preview(frame, fmt)
        self._load(path, options)

    def _show_preview(self, frame: pd.DataFrame | None, fmt: CsvFormat | None) -> None:
        self.frame, self.fmt = frame, fmt
        if frame is None:
            self.preview_model.set_frame(pd.DataFrame())
            self.columns_table.setRowCount(0)
            self.format_label.setText("")
            self.line_numbers = []
            return
        try:
            self.line_numbers = [line for line, _ in data_records(Path(self.csv_field.path()), fmt,
                                                                  max_records=len(frame))]
        except OSError:
            self.line_numbers = []
        if len(self.line_numbers) != len(frame):
            self.line_numbers = [i + 2 for i in range(len(frame))]
        self.preview_model.set_frame(frame, [str(n) for n in self.line_numbers])
        self.preview_view.scrollToTop()  # a new file starts at its first row
        self.format_label.setText(self.tr("Read as: {what}. Change a setting above if the preview looks wrong.")
                                  .format(what=fmt.describe()))
        for combo, value in ((self.encoding_combo, fmt.encoding), (self.delimiter_combo, fmt.delimiter),
                             (self.decimal_combo, fmt.decimal)):
            if combo.currentData() is None:
                k = combo.findData(value)
                found = combo.itemText(k).split("  ")[0] if k > 0 else value
                combo.setItemText(0, self.tr("Detect ({found})").format(found=found))
        self._fill_columns(frame)

    def _block(self, header: list[str]) -> str | None:
        """The feature block this file holds, for a clustering kit split into several blocks (else None)."""
        kit = self.state.kit
        names = getattr(kit.schema, "block_names", None)
        if kit.task != "clustering" or not names or len(names) < 2:
            return None
        try:
            return kit.schema.detect_block(header)
        except DCError:
            return None

    def _roles(self, header: list[str]) -> dict[str, str]:
        """What the core will make of each column the project names: feature, label, id, other-block, unused."""
        kit = self.state.kit
        schema = kit.schema
        block = self._block(header)
        mine = set(schema.block_columns(block)) if block is not None else set(schema.feature_names)
        roles = {name: "feature" if name in mine else "other-block" for name in schema.feature_names}
        try:
            reads_labels = get_method(kit.method, kit.settings).reads_labels()
        except DCError:
            reads_labels = True
        if schema.label:
            roles[schema.label] = "label" if reads_labels else "unused"
        if schema.id_column:
            linked = kit.task == "clustering" and len(getattr(schema, "block_names", [])) > 1
            roles[schema.id_column] = "id" if linked else "unused"
        return roles

    def _fill_columns(self, frame: pd.DataFrame) -> None:
        kit = self.state.kit
        schema = kit.schema
        names = list(frame.columns)
        roles = self._roles(names)
        tokens = set(self.csv_options().missing_tokens)
        mine = [n for n in schema.feature_names if roles.get(n) == "feature"]
        rows: list[tuple[str, str, str, str, bool]] = []
        grey, bold = set(), set()
        order = {n: i for i, n in enumerate(mine)}
        for c, name in enumerate(names):
            role = roles.get(name, "ignore")
            if role == "feature":
                what = self.tr("feature {i} of {m}").format(i=order[name] + 1, m=len(order))
                missing = int(frame.iloc[:, c].astype(str).str.strip().isin(tokens).sum())
                used = self.tr("feature")
            elif role == "label":
                what = self.tr("label; classes {classes}").format(classes=", ".join(schema.classes[:12]))
                missing = int(frame.iloc[:, c].astype(str).str.strip().isin(tokens).sum())
                used = self.tr("label")
                bold.add(c)
            elif role == "id":
                what = self.tr("row id; leaves only as a keyed hash")
                missing = int((frame.iloc[:, c].astype(str).str.strip() == "").sum())
                used = self.tr("row id")
                bold.add(c)
            else:
                what = {"ignore": self.tr("not part of the project; stays here and is not read"),
                        "other-block": self.tr("a column another site contributes; not read here")}.get(
                    role, self.tr("not used by this project's method; not read"))
                missing, used = -1, self.tr("ignored")
                grey.add(c)
            rows.append((name, used, what, "" if missing < 0 else str(missing), False))
        folded = {n.casefold(): n for n in names}
        needed = [n for n, r in roles.items() if r in ("feature", "label", "id")]
        for name in needed:
            if name not in names:
                near = folded.get(name.casefold())
                hint = (self.tr("missing from your file (your column '{near}' differs only in capitals: rename it "
                                "in the file)").format(near=near) if near else self.tr("missing from your file"))
                rows.append((self.tr("— none —"), roles[name], f"{name}: {hint}", "", True))
        self.columns_table.setRowCount(len(rows))
        for r, (name, used, what, missing, bad) in enumerate(rows):
            for c, text in enumerate((name, used, what, missing)):
                item = QTableWidgetItem(text)
                if bad:
                    item.setForeground(QBrush(QColor("#b91c1c")))
                elif used == self.tr("ignored"):
                    item.setForeground(QBrush(QColor("#9ca3af")))
                self.columns_table.setItem(r, c, item)
        self.preview_model.set_roles(grey, bold)

    def _load(self, path: str, options: CsvOptions) -> None:
        s = self.state
        try:
            exporter = ParticipantRound(s.kit, s.kit_path, s.identity, s.workspace(), anchor=s.anchor)
            if exporter.first_use:
                exporter.confirm_analyst(s.kit_page.fingerprint_edit.text(), how="typed in the app")
        except DCError as exc:
            self.message.show_message("error", str(exc))
            return
        except OSError as exc:
            self.message.show_message("error", self.tr("The workspace folder cannot be used: {why}").format(
                why=exc.strerror or exc))
            return
        self._context = self._context_key()
        generation = self._generation

        def ok(table: LocalTable) -> None:
            if generation == self._generation:
                self.exporter, self.table = exporter, table
                self.csv_field.remember()
                self.message.show_message("ok", self._summary(table))
                self._show_units(exporter.unit_warnings)

        def failed(text: str) -> None:
            if generation == self._generation:
                self._show_error(text)

        self.start(lambda control: exporter.load(path, options, control=control), self.tr("Reading {name}…").format(
            name=Path(path).name), ok, failed)

    def _summary(self, table: LocalTable) -> str:
        kit = self.state.kit
        block = getattr(self.exporter, "block", None) if self.exporter is not None else None
        columns = kit.schema.feature_names if block is None else kit.schema.block_columns(block)
        parts = [self.tr("{n:,} rows read; all {m} project columns found.").format(n=table.n_rows, m=len(columns))
                 if block is None else
                 self.tr("{n:,} rows read; the {m} columns of the feature block '{block}' found.").format(
                     n=table.n_rows, m=len(columns), block=block)]
        if table.n_imputed:
            parts.append(self.tr("{k:,} missing cells were filled with this site's own values ({detail}); only these "
                                 "counts leave.").format(k=table.n_imputed, detail=", ".join(
                                     f"{c} {k:,}" for c, k in table.filled.items())))
        parts += [n[0].upper() + n[1:] + "." for n in table.notes]  # said before export (shown as plain text)
        if table.y is not None and kit.schema.classes:
            counts = np.bincount(table.y, minlength=len(kit.schema.classes))
            parts.append(self.tr("Rows by class: {counts}.").format(counts=", ".join(
                f"{c} {int(k):,}" for c, k in zip(kit.schema.classes, counts, strict=True))))
        return " ".join(parts)

    # -- the units check (core.data.harmony): columns that do not look like the kit's sample
    def _show_units(self, warnings: list[str]) -> None:
        """Show core's sentence for each column that does not look like the kit's sample; the box must be
        ticked again after every read (a new file, a new format)."""
        self.units_check.blockSignals(True)
        self.units_check.setChecked(False)
        self.units_check.blockSignals(False)
        self.units_box.setVisible(bool(warnings))
        if not warnings:
            self.units_label.clear()
            return
        self.units_label.setText(self.tr(
            "{n} column(s) of your file do not look like the project's sample. A column in another unit (inches "
            "for centimetres) or coding (1/2 for 0/1) would mislead every model: check them in your file.")
            .format(n=len(warnings)) + "<ul style='margin:2px 0 0 -20px'>" + "".join(
                f"<li>{esc(w[0].upper() + w[1:], quote=False)}.</li>" for w in warnings) + "</ul>")
        flagged = {m.group(1) for w in warnings for m in [_COLUMN.search(w)] if m}
        for r in range(self.columns_table.rowCount()):
            if self.columns_table.item(r, 0).text() in flagged:
                for c in range(self.columns_table.columnCount()):
                    self.columns_table.item(r, c).setBackground(QBrush(QColor("#fef3c7")))

    def _units_checked(self, checked: bool) -> None:
        if self.exporter is not None:
            self.exporter.units_checked = checked
        self.completeChanged.emit()

    # -- problems
    def _sentence(self, text: str) -> str:
        """The core's sentence, with the CSV's full path shortened to its file name."""
        path = self.csv_field.path()
        for prefix in (f"{path}: ", f"{Path(path)}: "):
            if text.startswith(prefix):
                return f"{Path(path).name}: {text[len(prefix):]}"
        return text

    def _show_error(self, text: str) -> None:
        sentence = self._sentence(text)
        self.message.show_message("error", sentence)
        if self.frame is None:
            return
        names = list(self.frame.columns)
        m = _LINE_COLUMN.search(text)
        if m:
            line = int(m.group(1))
            column = m.group(2) or m.group(3)
            col = names.index(column) if column in names else None
            if line in self.line_numbers:
                self._highlight(self.line_numbers.index(line), col, sentence)
            else:
                self._locate(line, col, sentence)
            return
        m = _UNKNOWN_LABELS.search(text)
        label = self.state.kit.schema.label
        if m and label in names:
            values = set(re.findall(r"'([^']*)'", m.group(1)))
            col = names.index(label)
            cells = self.frame.iloc[:, col].astype(str).str.strip()
            hit = np.flatnonzero(cells.isin(values).to_numpy())
            if hit.size:
                self._highlight(int(hit[0]), col, sentence)
            else:
                self._highlight(None, col, sentence)
            return
        m = _COLUMN.search(text)
        if m and m.group(1) in names:
            self._highlight(None, names.index(m.group(1)), sentence)

    def _highlight(self, row: int | None, col: int | None, sentence: str) -> None:
        if row is not None and col is None:
            col = 0
        self.preview_model.set_highlight(row, col, sentence)
        if col is not None:
            index = self.preview_model.index(row if row is not None else 0, col)
            self.preview_view.clearSelection()
            self.preview_view.scrollTo(index, QAbstractItemView.PositionAtCenter)
            if row is not None:  # keyboard focus on the cell, without selecting it (it stays red)
                self.preview_view.selectionModel().setCurrentIndex(index, QItemSelectionModel.NoUpdate)

    def _locate(self, line: int, col: int | None, sentence: str) -> None:
        """Read the record at ``line`` (beyond the preview) in a job and show it below the first rows."""
        path, fmt, generation = Path(self.csv_field.path()), self.fmt, self._generation

        def work(control):
            found = None
            for k, (start, fields) in enumerate(data_records(path, fmt, stop_line=line)):
                if k % 10000 == 0:
                    control.check()
                if start == line:
                    found = fields
            return found

        def done(fields) -> None:
            if generation != self._generation or fields is None or self.frame is None:
                return
            n = len(self.frame.columns)
            fields = (list(fields) + [""] * n)[:n]
            gap = pd.DataFrame([["…"] * n], columns=self.frame.columns)
            row = pd.DataFrame([fields], columns=self.frame.columns)
            frame = pd.concat([self.frame, gap, row], ignore_index=True)
            labels = [str(x) for x in self.line_numbers] + ["…", str(line)]
            grey, bold = self.preview_model.grey, self.preview_model.bold
            self.preview_model.set_frame(frame, labels)
            self.preview_model.set_roles(grey, bold)
            self._highlight(len(frame) - 1, col, sentence)

        self._locate_job = Job(work, "locate", self)
        self._locate_job.succeeded.connect(done)
        self._locate_job.start()

    def isComplete(self) -> bool:
        if self.table is None or self.exporter is None or self.busy:
            return False
        return not self.exporter.unit_warnings or self.exporter.units_checked
