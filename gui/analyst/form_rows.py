"""The form rows the project page's sections share: a path field with its buttons, widgets side by side,
a form that wraps a long row instead of cutting it, a combo that stays short."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLineEdit, QWidget


def spin_row(*widgets: QWidget) -> QWidget:
    """Widgets side by side at their natural size, left-aligned."""
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    for x in widgets:
        lay.addWidget(x)
    lay.addStretch(1)
    return w


def path_row(edit: QLineEdit, *buttons: QWidget) -> QWidget:
    """A path field that takes the width, with its buttons after it."""
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance("x" * 12))  # the end of a path stays readable
    lay.addWidget(edit, 1)
    for b in buttons:
        lay.addWidget(b)
    return w


def form_layout(parent: QWidget | None = None) -> QFormLayout:
    form = QFormLayout(parent) if parent is not None else QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.ExpandingFieldsGrow)
    # a row too wide for its column puts its field under its label: nothing is cut at 125 % (issue #33 item 14)
    form.setRowWrapPolicy(QFormLayout.WrapLongRows)
    return form


def short_combo() -> QComboBox:
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(18)
    return combo
