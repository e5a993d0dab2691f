"""A form generated from a method's declared settings (:class:`core.methods.settings.Setting`).

One widget per ordinary setting (combo for choices, spin boxes with an "automatic" tick for settings
that accept ``"auto"``, a "default" tick for optional ones, a check box for yes/no); advanced settings go
in a two-column table edited as JSON. The same widget serves the analyst's kit settings, the Models
page's run-time settings and the participant's privacy page; nothing here knows any method.

Test hooks: ``widget(name)`` (the editor of one setting), ``set_value(name, value)``, ``values()``,
``advanced_table``, ``advanced_toggle``.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.api import ConfigError
from core.api.common import Setting

_SPIN_MAX = 2**31 - 1


class _SettingEditor(QWidget):
    """The editor of one setting: a main control plus an "automatic"/"default" tick where allowed."""

    changed = Signal()

    def __init__(self, spec: Setting, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec = spec
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.control = self._make_control(spec)
        lay.addWidget(self.control)
        self.tick: QCheckBox | None = None
        self.why: QLabel | None = None  # the explanation beside the tick
        if spec.auto or spec.optional:
            text = spec.auto_help if spec.auto else spec.none_help
            self.tick = QCheckBox(self.tr("automatic"))
            self.tick.toggled.connect(lambda on: self.control.setEnabled(not on))
            self.tick.toggled.connect(self.changed)
            lay.addWidget(self.tick)
            if text:  # beside the tick, wrapped: a long explanation must not widen the page past a laptop screen
                why = QLabel(f"({text})")
                why.setWordWrap(True)
                why.setBuddy(self.tick)
                lay.addWidget(why, 1)
                self.why = why
        if self.tick is None or not text:
            lay.addStretch(1)
        self.setToolTip(spec.help)
        if isinstance(self.control, QDoubleSpinBox) and spec.low is not None and spec.high is not None:
            self.control.setValue((spec.low + spec.high) / 2)  # shown (greyed) while "automatic" is ticked
        self.set_value(spec.default)

    def _make_control(self, spec: Setting) -> QWidget:
        if spec.kind == "choice":
            w = QComboBox()
            # long choice texts are shortened in the closed box (whole in the list and the tooltip): the form
            # stays narrow enough for a laptop at 125 %
            w.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            w.setMinimumContentsLength(20)
            for k, choice in enumerate(spec.choices):
                text = spec.choice_help[k] if k < len(spec.choice_help) else str(choice)
                w.addItem(text, choice)
                w.setItemData(k, text, Qt.ToolTipRole)
            w.currentIndexChanged.connect(self.changed)
        elif spec.kind == "bool":
            w = QCheckBox()
            w.toggled.connect(self.changed)
        elif spec.kind == "int":
            w = QSpinBox()
            w.setRange(int(spec.low if spec.low is not None else -_SPIN_MAX),
                       int(min(spec.high, _SPIN_MAX) if spec.high is not None else _SPIN_MAX))
            w.valueChanged.connect(self.changed)
        elif spec.kind == "float":
            w = QDoubleSpinBox()
            low = spec.low if spec.low is not None else -1e9
            high = spec.high if spec.high is not None else 1e9
            w.setRange(low, high)
            span = high - low
            w.setDecimals(2 if span <= 10 else 4)
            w.setSingleStep(0.05 if span <= 2 else 0.1)
            w.valueChanged.connect(self.changed)
        else:  # lists and text: JSON in a line edit
            w = QLineEdit()
            w.textChanged.connect(self.changed)
        return w

    def show_resolved(self, value) -> None:
        """Show ``value`` as what "automatic" stands for here: greyed in the box while the tick is on, and first in
        the explanation beside it ("here 15: …"), so the box, its words and what is used say one number."""
        w, spec = self.control, self.spec
        if isinstance(w, QSpinBox | QDoubleSpinBox) and value is not None:
            if isinstance(w, QSpinBox):
                w.setMaximum(max(w.maximum(), int(value)))
            blocked = w.blockSignals(True)  # the greyed value is not a choice: no "changed"
            w.setValue(value)
            w.blockSignals(blocked)
        if self.why is not None:
            text = spec.auto_help if spec.auto else spec.none_help
            self.why.setText(self.tr("(here {v}: {rule})").format(v=value, rule=text) if value is not None
                             else f"({text})")

    def set_value(self, value) -> None:
        spec, w = self.spec, self.control
        special = (spec.auto and value == "auto") or (spec.optional and value is None)
        if self.tick is not None:
            self.tick.setChecked(special)
        w.setEnabled(not special)
        if special:
            return
        if isinstance(w, QComboBox):
            w.setCurrentIndex(max(0, w.findData(value)))
        elif isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QSpinBox | QDoubleSpinBox):
            w.setValue(value)
        else:
            w.setText(value if spec.kind == "text" else json.dumps(value))

    def value(self):
        spec, w = self.spec, self.control
        if self.tick is not None and self.tick.isChecked():
            return "auto" if spec.auto else None
        if isinstance(w, QComboBox):
            return w.currentData()
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QSpinBox):
            return w.value()
        if isinstance(w, QDoubleSpinBox):
            return round(w.value(), w.decimals())
        if spec.kind == "text":
            return w.text()
        return spec.parse(w.text())


class SettingsForm(QWidget):
    """Widgets for ``specs``; ``values()`` returns every ordinary setting and the advanced ones that differ
    from their defaults (ConfigError naming a setting whose text is not a valid value)."""

    changed = Signal()

    def __init__(self, specs: tuple[Setting, ...] = (), parent: QWidget | None = None, *, advanced: bool = True):
        super().__init__(parent)
        self._offer_advanced = advanced  # False: advanced settings keep their defaults and take no room
        self._editors: dict[str, _SettingEditor] = {}
        self._advanced: list[Setting] = []
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        # a row too wide for its room puts its field under its label: the form stays narrow enough for a laptop at
        # 125 % (issue #33 item 14), side by side wherever there is room
        self.form.setRowWrapPolicy(QFormLayout.WrapLongRows)
        self.advanced_toggle = QToolButton()
        self.advanced_toggle.setText(self.tr("Advanced settings"))
        self.advanced_toggle.setCheckable(True)
        self.advanced_toggle.setArrowType(Qt.RightArrow)
        self.advanced_toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.advanced_toggle.toggled.connect(self._toggle_advanced)
        self.advanced_table = QTableWidget(0, 2)
        self.advanced_table.setHorizontalHeaderLabels([self.tr("Setting"), self.tr("Value (JSON)")])
        self.advanced_table.horizontalHeader().setStretchLastSection(True)
        self.advanced_table.verticalHeader().setVisible(False)
        self.advanced_table.setMinimumHeight(150)
        self.advanced_table.setVisible(False)
        self.advanced_table.itemChanged.connect(lambda _item: self.changed.emit())
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(self.form)
        lay.addWidget(self.advanced_toggle)
        lay.addWidget(self.advanced_table)
        self.set_specs(specs)

    def set_specs(self, specs: tuple[Setting, ...], values: dict | None = None, *, columns: int | None = None,
                  resolved: dict | None = None) -> None:
        """Rebuild the form for these settings, showing ``values`` where given, defaults elsewhere;
        ``columns`` bounds the settings declared ``high_from="columns"``; ``resolved`` gives, per setting, the value
        "automatic" stands for here (shown greyed in its box and named beside the tick, see :meth:`show_resolved`)."""
        values = values or {}
        while self.form.rowCount():
            self.form.removeRow(0)
        self._editors.clear()
        self._advanced = [s for s in specs if s.advanced] if self._offer_advanced else []
        for spec in specs:
            if spec.advanced:
                continue
            editor = _SettingEditor(spec)
            if spec.high_from == "columns" and columns is not None and isinstance(editor.control, QSpinBox):
                editor.control.setMaximum(max(int(spec.low or 1), columns))
                editor.control.setValue(max(int(spec.low or 1), columns - 1))
                editor.set_value(spec.default)
            if spec.name in values:
                editor.set_value(values[spec.name])
            if resolved and spec.name in resolved:
                editor.show_resolved(resolved[spec.name])
            editor.changed.connect(self.changed)
            self._editors[spec.name] = editor
            self.form.addRow(spec.title + ":", editor)
            self.form.labelForField(editor).setToolTip(spec.help)
        self.advanced_table.blockSignals(True)
        self.advanced_table.setRowCount(0)
        for spec in self._advanced:
            r = self.advanced_table.rowCount()
            self.advanced_table.insertRow(r)
            key = QTableWidgetItem(spec.name)
            key.setFlags(key.flags() & ~Qt.ItemIsEditable)
            key.setToolTip(spec.describe())
            self.advanced_table.setItem(r, 0, key)
            self.advanced_table.setItem(r, 1, QTableWidgetItem(json.dumps(values.get(spec.name, spec.default))))
        self.advanced_table.blockSignals(False)
        self.advanced_toggle.setVisible(bool(self._advanced))
        self.advanced_table.setVisible(bool(self._advanced) and self.advanced_toggle.isChecked())

    def _toggle_advanced(self, on: bool) -> None:
        self.advanced_table.setVisible(on)
        self.advanced_toggle.setArrowType(Qt.DownArrow if on else Qt.RightArrow)

    def widget(self, name: str) -> _SettingEditor | None:
        return self._editors.get(name)

    def show_resolved(self, name: str, value) -> None:
        """Say which value "automatic" stands for in the setting ``name`` (nothing when the form has no such row)."""
        if name in self._editors:
            self._editors[name].show_resolved(value)

    def names(self) -> list[str]:
        return list(self._editors)

    def set_value(self, name: str, value) -> None:
        if name in self._editors:
            self._editors[name].set_value(value)
            return
        for r, spec in enumerate(self._advanced):
            if spec.name == name:
                self.advanced_table.item(r, 1).setText(json.dumps(value))
                return
        raise KeyError(name)

    def values(self) -> dict:
        out = {name: editor.value() for name, editor in self._editors.items()}
        for r, spec in enumerate(self._advanced):
            text = self.advanced_table.item(r, 1).text()
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"setting '{spec.name}' is not a valid value: {text}") from exc
            if value != spec.default:
                out[spec.name] = spec.check(value)
        return out
