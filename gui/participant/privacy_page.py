"""Page 5: privacy — the private reduction and optional noise, and exactly what will leave this site."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import DCError
from core.methods import method_class
from core.methods.base import SiteExport

from ..screen import keep_rows
from ..settings_form import SettingsForm
from .common import Page, human_size

# what a sealed file adds to the arrays: age header and chunk tags, the signed header, manifest, .npy headers
ENVELOPE_OVERHEAD = 4000


class PrivacyPage(Page):
    """Choose this site's settings (generated from the method's site-side declarations), then read what leaves
    (computed by :meth:`ParticipantRound.compute` in a job).

    Test hooks: ``site_form`` (a :class:`gui.settings_form.SettingsForm`: ``site_form.set_value(name, v)``,
    ``site_form.widget(name)``), ``disclosure_table`` (one row per array that leaves: name, shape, type,
    meaning), ``leaves_label``, ``stays_label``; ``site_export`` is the computed :class:`SiteExport`.
    """

    def __init__(self):
        super().__init__(self.tr("Privacy"),
                         self.tr("Your rows are compressed and scrambled with a secret key that never leaves this "
                                 "computer. Check below exactly what will leave."))
        self.site_export: SiteExport | None = None
        self._computed_for: dict | None = None
        self._pending = False
        self._form_for: tuple | None = None
        self.site_form = SettingsForm(advanced=False)  # e.g. the seed: the CLI offers it, the page does not
        self.site_form.changed.connect(self._changed)

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

        self.body.addWidget(self.site_form)
        self.body.addWidget(leaves, 1)
        self.body.addWidget(stays)

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
        return self.site_form.values()

    def initializePage(self) -> None:
        exporter = self.state.exporter
        table = exporter.table if exporter is not None else None
        m = table.X.shape[1] if table is not None else self.state.kit.schema.width  # this site's columns
        method = method_class(self.state.kit.method)
        if self._form_for != (method.name, m):
            self._form_for = (method.name, m)
            self.site_form.blockSignals(True)
            self.site_form.set_specs(method.site_settings_spec(), columns=m)
            self.site_form.blockSignals(False)
        if exporter is None or exporter.export_ is None or self._computed_for != exporter.site_settings \
                or self.site_export is not exporter.export_:
            self.recompute()

    def _changed(self) -> None:
        self.site_export = None
        self.completeChanged.emit()
        self._timer.start()

    def recompute(self) -> None:
        """Compute what leaves with the current settings (after the running computation, if any, stops)."""
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
            self.leaves_label.setText(html.escape(str(exc)))
            return
        exporter.export_ = None
        self.site_export = None
        self._show(None)

        def ok(result: SiteExport) -> None:
            if self._timer.isActive():  # the settings changed while this ran: the newer computation follows
                return
            self.site_export, self._computed_for = result, settings
            self._show(result)

        self.start(exporter.compute, self.tr("Computing your private reduction…"), ok, on_end=self._ended)

    def _ended(self) -> None:
        if self._pending:
            self.recompute()

    def _show(self, ex: SiteExport | None) -> None:
        self.disclosure_table.setRowCount(0 if ex is None else len(ex.disclosures))
        if ex is None:
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
        self.plain_label.setText(html.escape(ex.plain or self.tr("What leaves: {w}.").format(
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
                                 "{detail}.").format(detail=", ".join(f"{html.escape(c)} {k:,}"
                                                                      for c, k in table.filled.items())))
        lines.append(self.tr("Approximate file size: <b>{size}</b>").format(size=size))
        self.leaves_label.setText("<br>".join(lines))
        self.stays_label.setText("<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in ex.stays) + "</ul>")

    def isComplete(self) -> bool:
        exporter = self.state.exporter if self.wizard() is not None else None
        return (self.site_export is not None and exporter is not None and exporter.export_ is self.site_export
                and not self.busy)
