"""The project page's kit-making section, second half: the method and its settings (a form generated from
the method's declared settings), the anchor the lead site makes, and the kit's threat model."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QGroupBox, QLabel, QSizePolicy, QSpinBox, QVBoxLayout, QWidget

from core.api import ThreatModel
from core.api.analyst import default_anchor_kind
from core.api.common import METHODS, methods_for

from ..settings_form import SettingsForm
from .common import TERMS
from .form_rows import form_layout, short_combo


class MethodSection(QWidget):
    """The "Method" and "Anchor" boxes. ``set_task`` offers the task's methods (its default first); ``changed``
    is emitted when the method changes (``no_method``: the task has none)."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.no_method = True
        method_box = QGroupBox(self.tr("Method"))
        mform = form_layout(method_box)
        self.method_combo = short_combo()
        self.method_combo.setMinimumContentsLength(22)
        # a method's name and title are long: the combo takes the row's width (elided only in a narrow window)
        self.method_combo.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.method_combo.currentIndexChanged.connect(self._method_changed)
        self.method_combo.setToolTip("\n".join(f"{n}: {c.title}" for n, c in METHODS.items()))
        mform.addRow(self.tr("&Method:"), self.method_combo)
        self.method_about = QLabel()
        self.method_about.setWordWrap(True)
        self.method_about.setStyleSheet("color:#4b5563;")
        mform.addRow(self.method_about)
        self.settings_form = SettingsForm()
        mform.addRow(self.settings_form)

        anchor_box = self.anchor_box = QGroupBox(self.tr("Anchor (made by the lead site, never seen by you)"))
        aform = form_layout(anchor_box)
        self.anchor_kind_combo = short_combo()
        for kind, text in (("smote", self.tr("extended SMOTE from a small seed set")),
                           ("uniform", self.tr("uniform within public ranges")),
                           ("gaussian", self.tr("Gaussian"))):
            self.anchor_kind_combo.addItem(text, kind)
        self.anchor_kind_combo.setToolTip(self.tr(TERMS["anchor"]))
        aform.addRow(self.tr("Kind:"), self.anchor_kind_combo)
        self.anchor_rows_spin = QSpinBox()
        self.anchor_rows_spin.setRange(10, 100000)
        self.anchor_rows_spin.setValue(1000)
        aform.addRow(self.tr("Rows:"), self.anchor_rows_spin)
        self.collusion_check = QCheckBox(self.tr("A site may work with me"))
        self.collusion_check.setToolTip(self.tr(
            "The kit's threat model, shown to every site before export. Ticked (the default): each site's privacy "
            "check counts what the analyst and one other site, which holds the anchor, could rebuild. Unticked: "
            "the kit declares that sites do not work with the analyst; those attacks are still shown to the "
            "sites, not counted."))
        self.collusion_check.setChecked(True)
        aform.addRow(self.tr("Threat model:"), self.collusion_check)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(method_box)
        lay.addWidget(anchor_box)

    def set_task(self, task: str) -> None:
        """The task's default anchor and its methods, the default method first."""
        self.anchor_kind_combo.setCurrentIndex(self.anchor_kind_combo.findData(default_anchor_kind(task)))
        self.method_combo.blockSignals(True)
        self.method_combo.clear()
        for cls in methods_for(task):  # the task's default method first
            self.method_combo.addItem(f"{cls.name} — {cls.title}", cls.name)
        self.method_combo.blockSignals(False)
        self._method_changed()

    def _method_changed(self) -> None:
        name = self.method_combo.currentData()
        cls = METHODS.get(name) if name else None
        self.settings_form.set_specs(() if cls is None else
                                     tuple(s for s in cls.settings_spec if s.side == "analyst"))
        self.method_about.setText("" if cls is None else self.tr("What leaves each site: {w}.").format(
            w=cls.what_leaves or self.tr("as the method describes at export")))
        self.anchor_box.setVisible(cls is not None and cls.needs_anchor)
        self.no_method = cls is None
        self.changed.emit()

    def method_settings(self) -> dict:
        """The kit settings the form describes: every ordinary setting, plus advanced values that differ from
        the method's defaults. Raises DCError (ConfigError) on a value that is not valid."""
        return self.settings_form.values()

    def threat(self) -> ThreatModel:
        """The kit's threat model: whether a site may work with the analyst."""
        return ThreatModel(collusion=self.collusion_check.isChecked())
