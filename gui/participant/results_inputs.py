"""The results window's first and third sections: this site's identity and workspace, and the rows the
package is applied to (the CSV, how it is read and checked, and where and how the results are written)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QWidget

from core.api.common import LEGACY_MEAN, CsvOptions

from ..widgets import passphrase_edit
from .common import PathField, identity_file_field

# how RESULT.csv may be written: like the input (the default), or one of two common spreadsheet settings
OUT_FORMATS = (
    ("Like my input file", None),
    ("UTF-8, commas, decimal point", CsvOptions(encoding="utf-8-sig", delimiter=",", decimal=".")),
    ("Windows (Western Europe), semicolons, decimal comma", CsvOptions(encoding="cp1252", delimiter=";",
                                                                      decimal=",")),
)


class SiteIdentityBox(QGroupBox):
    """"1. This site's identity": the identity file and its passphrase (``unlock`` is called on Return or the
    button), who is unlocked, and the workspace folder."""

    def __init__(self, unlock: Callable[[], None], parent: QWidget | None = None):
        super().__init__(self.tr("1. This site's identity"), parent)
        self.identity_field = identity_file_field(self.tr("Open this site's identity"))
        self.passphrase_edit = passphrase_edit(unlock)
        self.unlock_button = QPushButton(self.tr("&Unlock"))
        self.unlock_button.clicked.connect(unlock)
        self.who_label = QLabel()
        self.who_label.setWordWrap(True)
        self.workspace_field = PathField("workspaces", "dir", title=self.tr("Workspace folder"))
        f = QFormLayout(self)
        f.addRow(self.tr("Identity &file:"), self.identity_field)
        pw = QHBoxLayout()
        pw.addWidget(self.passphrase_edit, 1)
        pw.addWidget(self.unlock_button)
        pw_label = QLabel(self.tr("&Passphrase:"))
        pw_label.setBuddy(self.passphrase_edit)
        f.addRow(pw_label, pw)
        f.addRow("", self.who_label)
        f.addRow(self.tr("&Workspace:"), self.workspace_field)


class RowsBox(QGroupBox):
    """"3. Your rows": the CSV, mean imputation, the check on labelled rows, and the results file (named after
    the CSV until the person names it) with its text format (``out_format_combo``'s data: CsvOptions or None,
    like the input)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(self.tr("3. Your rows"), parent)
        self._auto_out = ""
        self.csv_field = PathField("csv", "open", self.tr("CSV files (*.csv *.txt *.tsv);;All files (*)"),
                                   self.tr("Choose the CSV to apply the package to"))
        self.impute_check = QCheckBox(self.tr(LEGACY_MEAN))
        self.validate_check = QCheckBox(self.tr("These rows carry labels I trust: check the package against my "
                                                "own model first"))
        self.out_field = PathField("results", "save", self.tr("CSV files (*.csv)"), self.tr("Save the results as"))
        f = QFormLayout(self)
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
        self.csv_field.changed.connect(self._csv_changed)

    def _csv_changed(self, path: str) -> None:
        if path and (not self.out_field.path() or self.out_field.path() == self._auto_out):
            p = Path(path)
            self._auto_out = str(p.with_name(f"{p.stem}-results.csv"))
            self.out_field.set_path(self._auto_out, emit=False)
