"""The results window's summary: what was written, the first rows with the new columns, and the check on the
site's labelled rows — the model in use (the site's own, the package as sent, or an update) beside the
site's own-rows model, each with n and a 95 % interval."""

from __future__ import annotations

import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QLabel, QTableView, QVBoxLayout, QWidget

from core.api import KEPT_OWN_WORDS
from core.api.common import UPDATE_WORDS
from core.api.common import describe_estimate as describe
from core.api.participant import ApplyResult

from ..widgets import esc
from .common import TextFrameModel


class ResultsSummary(QWidget):
    """``results_label`` (what was written), ``validation_label`` (the model kept and the check) and the first
    rows (``results_view`` over ``results_model``, the new columns marked)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
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
        tl = QVBoxLayout(self)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.results_label)
        tl.addWidget(self.validation_label)
        tl.addWidget(self.results_view)

    def show_outcome(self, outcome: dict) -> None:
        """The first rows read back, what was written, the model kept and the check."""
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
