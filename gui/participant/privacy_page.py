"""Page 5: privacy — the private reduction and optional noise, exactly what will leave this site, and the
disclosure check of it (with the levers to pull when a check is poor)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.api import DCError, JobControl
from core.api.common import SiteExport, method_class
from core.api.participant import EPSILON_SETTING, formal_words, measure_levers, summarise

from ..jobs import Job
from ..screen import keep_rows
from ..settings_form import SettingsForm
from ..widgets import esc
from .common import Page, human_size, run_job
from .disclosure_check import DisclosureCheck

# what a sealed file adds to the arrays: age header and chunk tags, the signed header, manifest, .npy headers
ENVELOPE_OVERHEAD = 4000


class PrivacyPage(Page):
    """Choose this site's settings (generated from the method's site-side declarations), then read what leaves
    (computed by :meth:`ParticipantRound.compute` in a job).

    The page's job computes what leaves and its disclosure check (the findings); when a check is poor, the levers
    (each option's site computation and check again: seconds to tens of seconds) are measured in a second job with
    its own progress line in the check's box (``levers_job``), which the page does not wait for: the site may
    export as it is meanwhile, and a change of settings cancels it.

    Test hooks: ``site_form`` (a :class:`gui.settings_form.SettingsForm`: ``site_form.set_value(name, v)``,
    ``site_form.widget(name)``), ``disclosure_table`` (one row per array that leaves: name, shape, type,
    meaning), ``leaves_label``, ``stays_label``; ``site_export`` is the computed :class:`SiteExport`;
    ``check`` the disclosure check (:class:`DisclosureCheck`: the kit's threat model, the findings, the levers and
    the "I accept this risk" tick a poor counted check needs: the export page's button waits for it, as for the
    data page's units check), ``findings`` / ``levers`` what it shows, ``levers_job`` the job measuring the levers
    (None when none was needed); ``extra_settings`` what "Use this" set outside the form (formal noise:
    ``formal_row``, ``formal_label``, ``formal_off_button``).
    """

    def __init__(self):
        super().__init__(self.tr("Privacy"),
                         self.tr("Your rows are compressed on this computer before anything leaves. Check below "
                                 "exactly what will leave, and how close someone could get to your patients' rows."))
        self.site_export: SiteExport | None = None
        self._computed_for: dict | None = None
        self._pending = False
        self._form_for: tuple | None = None
        self.site_form = SettingsForm(advanced=False)  # e.g. the seed: the CLI offers it, the page does not
        self.site_form.changed.connect(self._changed)
        self.extra_settings: dict = {}  # settings "Use this" set that the form does not show (formal noise)
        self.formal_label = QLabel()  # formal noise, when a lever turned it on: its guarantee in words, and Off
        self.formal_label.setWordWrap(True)
        self.formal_off_button = QPushButton(self.tr("Turn formal noise off"))
        self.formal_off_button.clicked.connect(self.formal_off)
        self.formal_row = QWidget()
        fl = QHBoxLayout(self.formal_row)
        fl.setContentsMargins(0, 0, 0, 0)
        fl.addWidget(self.formal_label, 1)
        fl.addWidget(self.formal_off_button)
        self.formal_row.setVisible(False)

        self.plain_label = QLabel()
        self.plain_label.setWordWrap(True)
        self.plain_label.setStyleSheet("font-size:11pt;")
        self.details_button = QToolButton()
        self.details_button.setText(self.tr("Details (technical)"))
        self.details_button.setCheckable(True)
        self.details_button.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.details_button.setArrowType(Qt.RightArrow)
        self.details_button.setAutoRaise(True)
        self.details_button.toggled.connect(self._toggle_details)
        self.disclosure_table = QTableWidget(0, 4)
        self.disclosure_table.setHorizontalHeaderLabels([self.tr("Array"), self.tr("Shape"), self.tr("Type"),
                                                         self.tr("What it is")])
        self.disclosure_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        keep_rows(self.disclosure_table, 7)  # every array that leaves, in view (the page scrolls instead)
        self.disclosure_table.verticalHeader().setVisible(False)
        self.disclosure_table.horizontalHeader().setSectionResizeMode(3, QHeaderView.Stretch)
        self.disclosure_table.setWordWrap(False)  # one line per array (the whole meaning in its tooltip)
        self.disclosure_table.verticalHeader().setDefaultSectionSize(22)  # every array in view on a laptop
        self.leaves_label = QLabel()
        self.leaves_label.setWordWrap(True)
        self.details = QWidget()
        dl = QVBoxLayout(self.details)
        dl.setContentsMargins(0, 0, 0, 0)
        self.technical_label = QLabel(self.tr(
            "The compression is the site's private reduction map f (kept here); the arrays below are exactly "
            "what the sealed bundle holds, with their shapes and number types."))
        self.technical_label.setWordWrap(True)
        dl.addWidget(self.technical_label)
        dl.addWidget(self.disclosure_table, 1)
        self.details.setVisible(False)
        leaves = QGroupBox(self.tr("What leaves this site (locked so only the analyst can open it, signed by you)"))
        ll = QVBoxLayout(leaves)
        ll.addWidget(self.plain_label)
        ll.addWidget(self.leaves_label)
        ll.addWidget(self.details_button)
        ll.addWidget(self.details, 1)
        self._filler = QWidget()  # while the details are closed the sentences stay together at the top
        self._filler.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Expanding)
        ll.addWidget(self._filler, 1)
        self.stays_label = QLabel()
        self.stays_label.setWordWrap(True)
        stays = QGroupBox(self.tr("What stays here"))
        QVBoxLayout(stays).addWidget(self.stays_label)

        self.check = DisclosureCheck()
        self.check.use_option.connect(self.use_option)
        self.check.consent_changed.connect(self._consent)
        self.findings: list[dict] | None = None
        self.levers = None
        self.levers_job: Job | None = None

        content = QWidget()  # one scroll area: the whole page fits a 1366×768 laptop
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.site_form)
        cl.addWidget(self.formal_row)
        cl.addWidget(leaves, 1)
        cl.addWidget(stays)
        cl.addWidget(self.check)  # below what leaves: the page scrolls to it (its verdict also on the summary line)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.NoFrame)
        self.scroll.setWidget(content)
        self.body.addWidget(self.scroll)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.recompute)

    def _toggle_details(self, shown: bool) -> None:
        self.details_button.setArrowType(Qt.DownArrow if shown else Qt.RightArrow)
        self.details.setVisible(shown)
        self._filler.setVisible(not shown)

    def details_hidden(self) -> bool:
        return not self.details.isVisible()

    def settings(self) -> dict:
        """This site's choices, checked against the method's declarations (DCError if one is not valid)."""
        return {**self.site_form.values(), **self.extra_settings}

    def initializePage(self) -> None:
        self.check.show_threat(self.state.kit.threat.lines())
        exporter = self.state.exporter
        table = exporter.table if exporter is not None else None
        m = table.X.shape[1] if table is not None else self.state.kit.schema.width  # this site's columns
        n = table.X.shape[0] if table is not None else None
        method = method_class(self.state.kit.method)
        if self._form_for != (method.name, m, n):
            self._form_for = (method.name, m, n)
            self.site_form.blockSignals(True)
            # "automatic" numbers per row: the value the export will use, the one the kit page named (one rule)
            self.site_form.set_specs(method.site_settings_spec(), columns=m,
                                     resolved={"dimension": method.numbers_per_row({}, m, n)})
            self.site_form.blockSignals(False)
            self.extra_settings = {}  # another method or table: the levers' settings start afresh
            self._show_formal(None)
        if exporter is None or exporter.export_ is None or self._computed_for != exporter.site_settings \
                or self.site_export is not exporter.export_:
            self.recompute()

    def _changed(self) -> None:
        self.site_export = None
        self.completeChanged.emit()
        self._timer.start()

    def recompute(self) -> None:
        """Compute what leaves with the current settings (after the running computation, if any, stops)."""
        self._stop_levers()
        if self.busy:
            self._pending = True
            self.jobs.cancel()
            return
        self._pending = False
        exporter = self.state.exporter
        if exporter is None:
            return
        try:
            settings = exporter.set_site_settings(self.settings())
        except DCError as exc:
            self._show(None)
            self.leaves_label.setText(esc(str(exc)))
            return
        exporter.export_ = None
        exporter.privacy_risk_accepted = None  # a new check asks again
        self.site_export = None
        self._show(None)

        def ok(result: tuple) -> None:
            if self._timer.isActive():  # the settings changed while this ran: the newer computation follows
                return
            export, self.findings, thresholds = result
            self.levers = None
            self.site_export, self._computed_for = export, settings
            self._show(export)
            self._show_formal(export)
            # a poor check the kit counts: measure what each lever would do (in its own job)
            poor = any(f["verdict"] == "poor" and f.get("in_scope", True) for f in self.findings)
            self.check.show_check(self.findings, None, measuring=poor)
            self.leaves_label.setText(self.leaves_label.text() + "<br>" + self.check_line())
            if poor:
                self._measure_levers(exporter, export, thresholds)

        self.start(lambda control: compute_and_check(exporter, control),
                   self.tr("Computing your private reduction and checking it…"), ok, on_end=self._ended)

    def _measure_levers(self, exporter, export: SiteExport, thresholds) -> None:
        """Measure every lever in its own job (the check's progress line); shown when done, if still current."""

        def done(levers) -> None:
            if self.site_export is export and self.levers_job is job:
                self.levers = levers
                self.check.show_check(self.findings, levers)

        def failed(message: str) -> None:  # the levers are advice: they never stand between the site and its export
            if self.site_export is export and self.levers_job is job:
                self.check.show_check(self.findings, None)
                self.message.show_message("warning", self.tr("The levers could not be measured: {why}").format(
                    why=message))

        job = run_job(self.check.jobs, lambda control: measure_levers(exporter, thresholds=thresholds,
                                                                      control=control),
                      self.tr("Trying each lever on your rows…"), done, failed)
        self.levers_job = job

    def validatePage(self) -> bool:  # noqa: N802 - Qt's name. Next: the levers were advice for this page
        self._stop_levers()
        return super().validatePage()

    def cleanupPage(self) -> None:  # noqa: N802 - Back
        self._stop_levers()
        super().cleanupPage()

    def _stop_levers(self) -> None:
        if self.levers_job is not None and self.levers_job.running:
            self.levers_job.cancel()
        self.levers_job = None

    def check_line(self) -> str:
        """The disclosure check's outcome in one line beside what leaves (its details are further down)."""
        poor = sum(f["verdict"] == "poor" and f.get("in_scope", True) for f in self.findings or [])
        if poor:
            return self.tr("Disclosure check: <b>{k} of {n} checks are poor</b> — see the levers under "
                           "<i>Disclosure check</i> below; exporting as it is needs your tick there.").format(
                k=poor, n=len(self.findings))
        return self.tr("Disclosure check: every check the kit counts is within its limits (details below).")

    def _consent(self, ticked: bool) -> None:
        """The site's tick "I accept this risk": recorded by the round (and, once sealed, in the audit log)."""
        exporter = self.state.exporter
        if exporter is not None:
            exporter.privacy_risk_accepted = (self.tr("ticked 'I accept this risk' on the privacy page") if ticked
                                              else None)
        self.completeChanged.emit()

    def use_option(self, option) -> None:
        """"Use this": set the lever's settings (in the form, or beside it for formal noise, which the form does
        not offer), then compute and check again."""
        for name, value in option.changes.items():
            if name in self.site_form.names():
                self.site_form.set_value(name, value)
            else:
                self.extra_settings[name] = value
        self._timer.stop()
        self.recompute()

    def formal_off(self) -> None:
        self.extra_settings.pop(EPSILON_SETTING, None)
        self._show_formal(None)
        self.recompute()

    def _show_formal(self, ex: SiteExport | None) -> None:
        """The formal-noise line: shown while a lever has it on, with the guarantee in words once computed."""
        epsilon = self.extra_settings.get(EPSILON_SETTING)
        self.formal_row.setVisible(epsilon is not None)
        if epsilon is None:
            return
        dp = ex.manifest.get("privacy") if ex is not None and isinstance(ex.manifest.get("privacy"), dict) else {}
        self.formal_label.setText(esc(self.tr("Formal noise is on: {words}.").format(
            words=formal_words(float(epsilon), dp.get("delta"))), quote=False))

    def _ended(self) -> None:
        if self._pending:
            self.recompute()

    def _show(self, ex: SiteExport | None) -> None:
        self.disclosure_table.setRowCount(0 if ex is None else len(ex.disclosures))
        if ex is None:
            self.findings, self.levers = None, None
            self.check.show_check(None, waiting=self.tr("Checked once your private reduction is computed."))
            self.leaves_label.setText("")
            self.stays_label.setText("")
            self.plain_label.setText("")
            return
        for r, d in enumerate(ex.disclosures):
            shape = " × ".join(f"{s:,}" for s in d.shape)
            for c, text in enumerate((d.name, shape, d.dtype, d.meaning)):
                item = QTableWidgetItem(text)
                item.setToolTip(d.meaning if c == 3 else d.plain or d.meaning)  # a long meaning is whole there
                self.disclosure_table.setItem(r, c, item)
        self.disclosure_table.resizeColumnsToContents()
        self.disclosure_table.horizontalHeader().setSectionResizeMode(3, QHeaderView.Stretch)
        names = {d.name for d in ex.disclosures}
        self.plain_label.setText(esc(ex.plain or self.tr("What leaves: {w}.").format(
            w=method_class(self.state.kit.method).what_leaves)))
        cls = method_class(self.state.kit.method)
        labels = {"rows": self.tr("<b>Yes</b>: the class of every row (shuffled with the rows)."),
                  "counts": self.tr("Only how many rows are in each class.")}.get(
            cls.labels_leave, self.tr("No: they are used on this computer only, to fit the model whose summary "
                                      "leaves.") if cls.labels_at_site else self.tr("No."))
        ids = self.tr("Only as keyed hashes the analyst cannot reverse.") if "id_hash" in names else self.tr("No.")
        size = human_size(ex.shipped_bytes + ENVELOPE_OVERHEAD)
        lines = [self.tr("Labels leave: {labels}").format(labels=labels),
                 self.tr("Row ids leave: {ids}").format(ids=ids),
                 self.tr("Raw values of your columns leave: <b>no</b>.")]
        cv = ex.manifest.get("own_cv")
        if isinstance(cv, dict):
            lines.append(self.tr("Scores of a model of your own rows leave: accuracy {acc:.3f}, AUC {auc:.3f} "
                                 "(tested here on {rows:,} rows; the model stays).").format(
                acc=cv["accuracy"], auc=cv["auc"], rows=cv["rows"]))
        table = self.state.exporter.table if self.state.exporter is not None else None
        if table is not None and table.filled:
            lines.append(self.tr("Missing cells filled with your own values (only these counts leave): "
                                 "{detail}.").format(detail=", ".join(f"{esc(c)} {k:,}"
                                                                      for c, k in table.filled.items())))
        lines.append(self.tr("Approximate file size: <b>{size}</b>").format(size=size))
        self.leaves_label.setText("<br>".join(lines))
        self.stays_label.setText("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in ex.stays) + "</ul>")

    def isComplete(self) -> bool:
        exporter = self.state.exporter if self.wizard() is not None else None
        return (self.site_export is not None and exporter is not None and exporter.export_ is self.site_export
                and not self.busy)


def compute_and_check(exporter, control: JobControl) -> tuple:
    """The page's job: what leaves (:meth:`ParticipantRound.compute`) and its disclosure check
    (:meth:`ParticipantRound.assess`). Returns (export, findings, the thresholds they were judged by); the levers,
    when a verdict is poor, are measured in their own job (:func:`core.privacy.levers.measure_levers`)."""
    export = exporter.compute(control.sub(0.0, 0.6))
    assessment = exporter.assess(control=control.sub(0.6, 1.0))
    control.step(1.0, "checked")
    return export, summarise(assessment), assessment.thresholds
