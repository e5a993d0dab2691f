"""Page 5: privacy — the private reduction and optional noise, and exactly what will leave this site."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.learn.reduction import default_dimension
from core.methods.base import SiteExport
from core.wording import ARRAY_WORDS, STAYS_WORDS, leaves_sentence

from .common import REDUCTION_DETAILS, REDUCTION_WORDS, Page, human_size

# what a sealed file adds to the arrays: age header and chunk tags, the signed header, manifest, .npy headers
ENVELOPE_OVERHEAD = 4000


class PrivacyPage(Page):
    """Choose the reduction, then read what leaves (computed by :meth:`ParticipantExport.compute` in a job).

    Test hooks: ``reduction_combo`` (data "pca"|"lpp"|"random"), ``dimension_spin``, ``noise_check``,
    ``noise_spin``, ``disclosure_table`` (one row per array that leaves: name, shape, type, meaning),
    ``leaves_label``, ``stays_label``; ``site_export`` is the computed :class:`SiteExport`.
    """

    def __init__(self):
        super().__init__(self.tr("Privacy"),
                         self.tr("Your rows are compressed and scrambled with a secret key that never leaves this "
                                 "computer. Check below exactly what will leave."))
        self.site_export: SiteExport | None = None
        self._computed_for: dict | None = None
        self._pending = False
        self._m = 0
        self.reduction_combo = QComboBox()
        for key in ("pca", "lpp", "random"):
            self.reduction_combo.addItem(self.tr(REDUCTION_WORDS[key]), key)
            self.reduction_combo.setItemData(self.reduction_combo.count() - 1, self.tr(REDUCTION_DETAILS[key]),
                                             Qt.ToolTipRole)
        self.dimension_spin = QSpinBox()
        self.dimension_spin.setRange(1, 1)
        self.dimension_hint = QLabel()
        self.noise_check = QCheckBox(self.tr("Add random &noise to my compressed rows"))
        self.noise_spin = QDoubleSpinBox()
        self.noise_spin.setRange(0.01, 2.0)
        self.noise_spin.setSingleStep(0.05)
        self.noise_spin.setValue(0.1)
        self.noise_spin.setSuffix(self.tr(" × each column's spread"))
        self.noise_spin.setEnabled(False)
        self.noise_check.toggled.connect(self.noise_spin.setEnabled)
        form = QFormLayout()
        form.addRow(self.tr("&Compression:"), self.reduction_combo)
        dim = QHBoxLayout()
        dim.addWidget(self.dimension_spin)
        dim.addWidget(self.dimension_hint, 1)
        dim_label = QLabel(self.tr("&Numbers per row:"))
        dim_label.setBuddy(self.dimension_spin)
        form.addRow(dim_label, dim)
        noise = QHBoxLayout()
        noise.addWidget(self.noise_check)
        noise.addWidget(self.noise_spin)
        noise.addStretch(1)
        form.addRow(self.tr("Noise:"), noise)

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
        self.disclosure_table.verticalHeader().setVisible(False)
        self.disclosure_table.horizontalHeader().setSectionResizeMode(3, QHeaderView.Stretch)
        self.disclosure_table.setWordWrap(True)
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

        self.body.addLayout(form)
        self.body.addWidget(leaves, 1)
        self.body.addWidget(stays)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.recompute)
        self.reduction_combo.currentIndexChanged.connect(self._changed)
        self.dimension_spin.valueChanged.connect(self._changed)
        self.noise_check.toggled.connect(self._changed)
        self.noise_spin.valueChanged.connect(self._changed)

    def _toggle_details(self, shown: bool) -> None:
        self.details_button.setArrowType(Qt.DownArrow if shown else Qt.RightArrow)
        self.details.setVisible(shown)
        self._filler.setVisible(not shown)

    def details_hidden(self) -> bool:
        return not self.details.isVisible()

    def settings(self) -> dict:
        return {"reduction": self.reduction_combo.currentData(), "dimension": self.dimension_spin.value(),
                "noise": self.noise_spin.value() if self.noise_check.isChecked() else 0.0, "seed": None}

    def initializePage(self) -> None:
        exporter = self.state.exporter
        table = exporter.table if exporter is not None else None
        m = table.X.shape[1] if table is not None else len(self.state.kit.schema.features)  # this site's columns
        if m != self._m:
            self._m = m
            self.dimension_spin.blockSignals(True)
            self.dimension_spin.setRange(1, m)
            self.dimension_spin.setValue(default_dimension(m))
            self.dimension_spin.blockSignals(False)
            self.dimension_hint.setText(self.tr("of your {m} columns (the usual choice is {d})").format(
                m=m, d=default_dimension(m)))
        if exporter is None or exporter.export_ is None or self._computed_for != self.settings() \
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
        settings = self.settings()
        exporter.site_settings = dict(settings)
        exporter.export_ = None
        self.site_export = None
        self._show(None)

        def ok(result: SiteExport) -> None:
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
                item.setToolTip(self.tr(ARRAY_WORDS.get(d.name, d.meaning)))
                self.disclosure_table.setItem(r, c, item)
        self.disclosure_table.resizeColumnsToContents()
        self.disclosure_table.horizontalHeader().setSectionResizeMode(3, QHeaderView.Stretch)
        names = {d.name for d in ex.disclosures}
        shape = ex.arrays["x_tilde"].shape if "x_tilde" in ex.arrays else (0, 0)
        table = self.state.exporter.table if self.state is not None and self.state.exporter is not None else None
        m = table.X.shape[1] if table is not None else self._m
        self.plain_label.setText(html.escape(self.tr(leaves_sentence(
            int(shape[0]), int(m), int(shape[1]) if len(shape) > 1 else 0,
            labels="rows" if "y" in names else "counts" if "label_counts" in names else "none",
            ids="id_hash" in names, noise=self.settings()["noise"]))))
        if "y" in names:
            labels = self.tr("<b>Yes</b>: the class of every row (shuffled with the rows).")
        elif "label_counts" in names:
            labels = self.tr("Only how many rows are in each class.")
        else:
            labels = self.tr("No.")
        ids = self.tr("Only as keyed hashes the analyst cannot reverse.") if "id_hash" in names else self.tr("No.")
        size = human_size(ex.shipped_bytes + ENVELOPE_OVERHEAD)
        self.leaves_label.setText(
            self.tr("Labels leave: {labels}<br>Row ids leave: {ids}<br>Raw values of your columns leave: <b>no</b>."
                    "<br>Approximate file size: <b>{size}</b>").format(labels=labels, ids=ids, size=size))
        self.stays_label.setText("<ul>" + "".join(f"<li>{html.escape(self.tr(s))}</li>" for s in STAYS_WORDS) + "</ul>")
        self.stays_label.setToolTip("\n".join(ex.stays))  # the technical list

    def isComplete(self) -> bool:
        exporter = self.state.exporter if self.wizard() is not None else None
        return (self.site_export is not None and exporter is not None and exporter.export_ is self.site_export
                and not self.busy)
