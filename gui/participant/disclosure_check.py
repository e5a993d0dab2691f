"""The privacy page's "Disclosure check": the kit's threat model (who is counted), each finding in plain words with
its verdict, its numbers, and — when a verdict is poor — the levers the site can pull, each with its new verdicts
and what it does to the site's own model (AUC for two classes, a loss or a gain in words), and the tick by which
the site accepts exporting with a poor verdict the kit counts (issue #35).

The widget only shows what :mod:`core.privacy` measured (findings as :func:`core.privacy.levers.summarise`
dicts, options as :class:`core.privacy.levers.LeverOption`); "Use this" emits :attr:`DisclosureCheck.use_option`
and the page applies the setting and re-assesses in its job.

Test hooks: ``verdict_of(row)``, ``findings_table``, ``numbers_table``, ``levers_box``, ``levers_table``,
``use_buttons`` (one per applicable option, in table order), ``summary_label``, ``formal_label``,
``threat_label``, ``consent_check`` (shown only when a counted check is poor; ``consent_changed(bool)``), ``jobs``
(the levers' progress line).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.api.participant import LEVER_WORDS, USELESS_AUC, LeverOption, Levers, finding_key

from ..widgets import JobPanel, esc

BADGES = {"ok": ("OK", "#bbf7d0", "the measured number is within the kit's limit"),
          "poor": ("Poor", "#fecaca", "the measured number passes the kit's limit: see the levers below"),
          "poor, not counted": ("Poor (not counted)", "#fde68a", "the measured number passes the kit's limit, but "
                                "the kit's threat model rules this adversary out: shown, not counted"),
          "not applicable": ("n.a.", "#e5e7eb", "this attack does not apply to what this method ships")}
ROW_HEIGHT = 22
CHECK_WORDS = {"collusion": "Another site with the analyst", "analyst_alone": "The analyst alone",
               "membership": "Was a patient in your rows?", "nearest_record": "Near-copies of patients",
               "group_size": "Smallest group"}
NUMBER_WORDS = {"median_cell_error": "median error {v} of a spread", "within_10pct": "rows within 10 %: {p}",
                "within_5pct": "within 5 %: {p}", "binary_cells_wrong": "0/1 cells wrong: {p}",  # (in this order)
                "public_mean_error": "guessing averages: {v}", "auc": "right {p} of the time",
                "tpr_at_1pct_fpr": "caught at 1 % false alarms: {p}", "ratio": "distance ratio {v}",
                "smallest_group": "smallest group {v}", "groups": "{v} groups"}


def badge_item(verdict: str, in_scope: bool = True) -> QTableWidgetItem:
    shown = "poor, not counted" if verdict == "poor" and not in_scope else verdict
    text, colour, why = BADGES.get(shown, (verdict, "#e5e7eb", ""))
    item = QTableWidgetItem(text)
    item.setBackground(QBrush(QColor(colour)))
    item.setTextAlignment(Qt.AlignCenter)
    item.setToolTip(why)
    item.setData(Qt.UserRole, verdict)
    return item


def number_text(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.3g}"


def numbers_text(numbers: dict) -> str:
    """A finding's numbers in a few words each ("median error 0.02 of a spread; rows within 10 %: 89 %")."""
    out = []
    for key, words in NUMBER_WORDS.items():
        value = numbers.get(key)
        if value is None:
            continue
        out.append(words.format(v=number_text(value), p=f"{100 * value:.0f} %" if isinstance(value, float) else value))
    return "; ".join(out)


def read_only_table(columns: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setHorizontalHeaderLabels(columns)
    t.setEditTriggers(QAbstractItemView.NoEditTriggers)
    t.setSelectionMode(QAbstractItemView.NoSelection)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
    t.setWordWrap(False)
    t.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # sized to its rows: the page scrolls, not the table
    return t


def fit_rows(table: QTableWidget) -> None:
    """Make a table exactly as tall as its rows (the page's scroll area scrolls)."""
    table.resizeColumnsToContents()
    h = table.horizontalHeader().height() + ROW_HEIGHT * table.rowCount() + 2 * table.frameWidth() + 2
    table.setFixedHeight(h)


class DisclosureCheck(QGroupBox):
    """Findings, their numbers and the levers table (shown only when some verdict is poor)."""

    use_option = Signal(object)  # the LeverOption whose "Use this" was clicked
    consent_changed = Signal(bool)  # the site ticked (or unticked) "I accept this risk"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(self.tr("Disclosure check: how close could someone get to your patients' rows?"), parent)
        self.threat_label = QLabel()
        self.threat_label.setWordWrap(True)
        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.consent_check = QCheckBox()
        self.consent_check.setToolTip(self.tr("Your site's explicit confirmation that it exports despite the poor "
                                              "checks above; it is recorded in your workspace's audit log"))
        self.consent_check.toggled.connect(self.consent_changed)
        self.consent_check.setVisible(False)
        self.findings_table = read_only_table([self.tr("Verdict"), self.tr("What was checked")])
        self.findings_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        self.findings_table.setWordWrap(True)
        self.numbers_table = read_only_table([self.tr("Who tries"), self.tr("What they get"),
                                              self.tr("Rows measured")])
        self.numbers_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        self.levers_label = QLabel()
        self.levers_label.setWordWrap(True)
        self.levers_table = read_only_table([self.tr("Lever"), self.tr("New verdicts"),
                                             self.tr("Your model on what would leave"),
                                             self.tr("Effect on your model"), ""])
        self.levers_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.formal_label = QLabel()
        self.formal_label.setWordWrap(True)
        self.levers_box = QWidget()
        ll = QVBoxLayout(self.levers_box)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.levers_label)
        ll.addWidget(self.levers_table)
        ll.addWidget(self.formal_label)
        self.levers_box.setVisible(False)
        self.jobs = JobPanel()  # the levers' own progress line (they are measured in a job of their own)
        self.jobs.finished.connect(lambda _how: self.jobs.setVisible(False))  # their outcome is shown above
        lay = QVBoxLayout(self)
        lay.addWidget(self.threat_label)
        lay.addWidget(self.summary_label)
        lay.addWidget(self.findings_table)
        lay.addWidget(self.numbers_table)
        lay.addWidget(self.consent_check)
        lay.addWidget(self.jobs)
        lay.addWidget(self.levers_box)
        self.use_buttons: list[QPushButton] = []
        self.findings: list[dict] = []
        self.levers: Levers | None = None
        self.show_check(None)

    def verdict_of(self, row: int) -> str:
        return self.findings_table.item(row, 0).data(Qt.UserRole)

    def show_threat(self, lines: list[str]) -> None:
        """The kit's threat model: which adversaries count against this export (shown before any export)."""
        self.threat_label.setText(self.tr("<b>Who is counted</b> (the kit's threat model):") + "<ul>" + "".join(
            f"<li>{esc(line, quote=False)}</li>" for line in lines) + "</ul>")

    @property
    def needs_consent(self) -> bool:
        """Whether a check the kit counts is poor: exporting then needs the tick."""
        return any(f["verdict"] == "poor" and f.get("in_scope", True) for f in self.findings)

    def show_check(self, findings: list[dict] | None, levers: Levers | None = None, *, waiting: str = "",
                   measuring: bool = False) -> None:
        """Show ``findings`` (None: nothing measured yet, ``waiting`` says why) and, when some is poor, ``levers``
        (``measuring``: they are being measured; the progress line says how far)."""
        new_check = list(findings or []) != self.findings  # the levers arriving later do not ask again
        self.findings, self.levers = list(findings or []), levers
        self.findings_table.setRowCount(len(self.findings))
        self.numbers_table.setRowCount(0)
        if new_check:
            self.consent_check.blockSignals(True)
            self.consent_check.setChecked(False)  # a new check asks again
            self.consent_check.blockSignals(False)
        self.consent_check.setVisible(False)
        if findings is None:
            self.summary_label.setText(esc(waiting))
            self.findings_table.setVisible(False)
            self.numbers_table.setVisible(False)
            self._show_levers(None)
            return
        self.findings_table.setVisible(True)
        self.numbers_table.setVisible(True)
        poor = [f for f in self.findings if f["verdict"] == "poor" and f.get("in_scope", True)]
        uncounted = [f for f in self.findings if f["verdict"] == "poor" and not f.get("in_scope", True)]
        rows = max((f.get("rows", 0) for f in self.findings), default=0)
        if poor:
            self.summary_label.setText(self.tr(
                "<b>{k} of {n} checks are poor</b>: someone could get closer to your patients' rows than the kit "
                "allows (measured here on up to {rows:,} of your rows). Choose a lever below and press "
                "<i>Use this</i>, or tick <i>I accept this risk</i> to export as it is.").format(
                k=len(poor), n=len(self.findings), rows=rows)
                + (self.tr(" The levers are being tried on your rows; you may export meanwhile.") if measuring
                   else ""))
            self.consent_check.setText(self.tr(
                "I accept this risk: export even though {k} check(s) the kit counts are poor (recorded in your "
                "audit log)").format(k=len(poor)))
            self.consent_check.setVisible(True)
        else:
            self.summary_label.setText(self.tr("<b>Every check the kit counts is within its limits</b> (measured on "
                                               "{rows:,} of your rows, here; nothing of it leaves).").format(rows=rows))
        if uncounted:
            self.summary_label.setText(self.summary_label.text() + self.tr(
                " {k} more are poor against an adversary the kit rules out (shown, not counted).").format(
                k=len(uncounted)))
        numbers = []
        for r, f in enumerate(self.findings):
            self.findings_table.setItem(r, 0, badge_item(f["verdict"], f.get("in_scope", True)))
            item = QTableWidgetItem(f["sentence"])
            item.setToolTip(f"{f['attack']} — {f['adversary']}\n{f['sentence']}")  # the technical name
            self.findings_table.setItem(r, 1, item)
            if f["numbers"]:
                numbers.append(f)
        self.numbers_table.setRowCount(len(numbers))
        for r, f in enumerate(numbers):
            raw = "\n".join(f"{k} = {number_text(v)}" for k, v in f["numbers"].items())
            cells = ((CHECK_WORDS.get(f["attack"], f["attack"]), f"{f['attack']}: {f['adversary']}"),
                     (numbers_text(f["numbers"]), raw), (f"{f.get('rows', 0):,}", ""))
            for c, (text, tip) in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip or text)
                self.numbers_table.setItem(r, c, item)
        self.findings_table.resizeRowsToContents()
        fit_rows(self.numbers_table)
        self.findings_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        h = self.findings_table.horizontalHeader().height() + sum(
            self.findings_table.rowHeight(r) for r in range(len(self.findings))) + 4
        self.findings_table.setFixedHeight(h)
        self._show_levers(levers if poor else None)

    def _show_levers(self, levers: Levers | None) -> None:
        self.use_buttons = []
        self.levers_table.setRowCount(0)
        self.levers_box.setVisible(levers is not None)
        if levers is None:
            return
        options = levers.options
        self.levers_table.setRowCount(len(options))
        current = levers.current.verdicts
        raw, raw_auc = levers.current.raw_accuracy, levers.current.raw_auc
        now = "not measured" if raw is None else f"accuracy {raw:.1%}" + (
            f", AUC {raw_auc:.2f}" if raw_auc is not None else "")
        self.levers_label.setText(self.tr(
            "<b>Levers</b>, each tried on {rows:,} of your {total:,} rows: the checks' new verdicts, and how well a "
            "model of your rows would still predict from what would leave (your raw rows: {raw}; ranked by "
            "{by}).").format(rows=levers.rows, total=levers.total_rows, raw=now,
                             by=self.tr("AUC") if raw_auc is not None else self.tr("accuracy")))
        best = levers.cheapest()
        stubborn = [key.split("/")[0] for key in levers.stubborn(shown=True)]
        if stubborn:  # poor here and under every lever (Levers.stubborn)
            self.levers_label.setText(self.levers_label.text() + self.tr(
                " No lever here changes <i>{checks}</i>: ask the analyst about the kit's columns or limits.").format(
                checks=esc(", ".join(CHECK_WORDS.get(a, a) for a in stubborn), quote=False)))
        if best is not None:
            self.levers_label.setText(self.levers_label.text() + self.tr(
                " The cheapest that passes every {other}check is in bold: <b>{label}</b>.").format(
                other=self.tr("other ") if levers.stubborn() else "", label=esc(best.label, quote=False)))
        advice = levers.advice()
        if advice:  # no lever passes at a small cost: the summary path, said plainly
            self.levers_label.setText(self.levers_label.text() + " <b>" + esc(advice, quote=False) + "</b>")
        formal = []
        for r, o in enumerate(options):
            item = QTableWidgetItem(o.label)
            technical = LEVER_WORDS.get(o.lever, ("", ""))[1]
            item.setToolTip("\n".join(t for t in (technical, o.formal, o.note) if t))
            if o is best:
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.levers_table.setItem(r, 0, item)
            self.levers_table.setItem(r, 1, QTableWidgetItem(self._verdicts(o, current)))
            acc = "—" if o.accuracy is None else self.tr("accuracy {a}").format(a=f"{o.accuracy:.1%}") + (
                f", AUC {o.auc:.2f}" if o.auc is not None else "")
            cost = o.effect()
            if not o.applicable:
                acc, cost = self.tr("ask the analyst"), "—"
            for c, text in ((2, acc), (3, cost)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(o.note or self.tr("your own model, cross-validated on {n:,} rows: on your raw rows and "
                                                  "on the rows that would leave").format(n=o.rows))
                self.levers_table.setItem(r, c, cell)
            if o.applicable:
                button = QPushButton(self.tr("Use this"))
                button.setToolTip(self.tr("Set {what} and check again").format(
                    what=", ".join(f"{k} = {v}" for k, v in o.changes.items())))
                button.clicked.connect(lambda _=False, o=o: self.use_option.emit(o))
                self.levers_table.setCellWidget(r, 4, button)
                self.use_buttons.append(button)
            if o.formal:
                formal.append(o)
        if formal:  # the guarantee in words once (each option's own in its tooltip)
            o = formal[-1]
            self.formal_label.setText(esc(self.tr(
                "Formal noise, e.g. {words}. Smaller ε = a stronger guarantee and more noise.").format(
                words=o.formal), quote=False))
        self.formal_label.setVisible(bool(formal))
        fit_rows(self.levers_table)
        self.levers_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)

    def _verdicts(self, o: LeverOption, current: dict[str, str]) -> str:
        """"all OK", or the checks still poor; changes against now in words."""
        if not o.applicable:
            return o.note.split(":")[0]
        if not o.findings:
            return "—"
        poor = [f for f in o.findings if f["verdict"] == "poor" and f.get("in_scope", True)]
        fixed = sum(1 for f in o.findings if f["verdict"] != "poor" and current.get(finding_key(f)) == "poor")
        if o.useless:  # protects by teaching nothing: never "OK"
            return self.tr("your rows no longer predict the outcome (AUC {auc:.2f} ≤ {limit:.2f})").format(
                auc=o.auc, limit=USELESS_AUC)
        if not poor:
            return self.tr("all OK")
        return self.tr("{k} still poor ({fixed} fixed)").format(k=len(poor), fixed=fixed)
