"""The results window's decision threshold (two classes): the threshold itself, or a sensitivity or
specificity to reach on the site's labelled rows; the package's rates there; writing the results again at it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.api import ConfigError
from core.api.common import rates_at, threshold_for
from core.api.participant import ApplyResult

# how the decision threshold is chosen in the window: the threshold itself, or a rate to reach on labelled rows
THRESHOLD_MODES = (("threshold", "Threshold"), ("sensitivity", "Reach sensitivity ≥"),
                   ("specificity", "Reach specificity ≥"))


class ThresholdBox(QGroupBox):
    """``threshold_mode`` (combo), ``threshold_spin``, ``threshold_label`` (rates at the chosen threshold),
    ``rewrite_button``. ``result`` gives the shown result; ``point_moved(1 − specificity, sensitivity)`` is
    emitted when the rates at the chosen threshold are known."""

    point_moved = Signal(float, float)

    def __init__(self, result: Callable[[], ApplyResult | None], parent: QWidget | None = None):
        super().__init__(self.tr("Decision threshold"), parent)
        self._result = result
        self.threshold_mode = QComboBox()
        for key, text in THRESHOLD_MODES:
            self.threshold_mode.addItem(self.tr(text), key)
        self.threshold_spin = QDoubleSpinBox()
        self.threshold_spin.setRange(0.001, 0.999)
        self.threshold_spin.setDecimals(3)
        self.threshold_spin.setSingleStep(0.01)
        self.threshold_spin.setValue(0.5)
        self.threshold_label = QLabel()
        self.threshold_label.setWordWrap(True)
        self.rewrite_button = QPushButton(self.tr("&Write the results again at this threshold"))
        tb = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(self.threshold_mode)
        row.addWidget(self.threshold_spin)
        row.addStretch(1)
        row.addWidget(self.rewrite_button)
        tb.addLayout(row)
        tb.addWidget(self.threshold_label)
        self.setVisible(False)
        self.threshold_mode.currentIndexChanged.connect(self._threshold_mode_changed)
        self.threshold_spin.valueChanged.connect(lambda _: self.threshold_changed())

    def show_result(self, result: ApplyResult, keep_threshold: bool) -> None:
        """Shown for two classes, titled with the positive class; back to the written threshold unless the
        person chose it; choosing by a rate needs labelled rows of both classes."""
        binary = result.threshold is not None
        self.setVisible(binary)
        self.setTitle(self.tr("Decision threshold: '{pos}' (the kit's second class) when its risk ≥ "
                              "the threshold").format(pos=result.threshold["positive"]) if binary else "")
        if binary and not keep_threshold:
            self.threshold_mode.blockSignals(True)
            self.threshold_mode.setCurrentIndex(0)
            self.threshold_mode.blockSignals(False)
            self.threshold_spin.blockSignals(True)
            self.threshold_spin.setValue(result.threshold["value"])
            self.threshold_spin.blockSignals(False)
        for key in ("sensitivity", "specificity"):  # choosing by a rate needs labelled rows of both classes
            index = self.threshold_mode.findData(key)
            self.threshold_mode.model().item(index).setEnabled(result.scored is not None)

    def _threshold_mode_changed(self) -> None:
        mode = self.threshold_mode.currentData()
        self.threshold_spin.blockSignals(True)
        if mode == "threshold":
            self.threshold_spin.setValue(self.chosen_threshold() or 0.5)
        else:  # a rate to reach: start from the rate at the current threshold
            self.threshold_spin.setValue(0.9)
        self.threshold_spin.blockSignals(False)
        self.threshold_changed()

    def chosen(self) -> tuple[float | None, tuple[str, float] | None]:
        """What core's apply is given: the threshold, or the rate to reach."""
        mode, value = self.threshold_mode.currentData(), float(self.threshold_spin.value())
        return (value, None) if mode == "threshold" else (None, (mode, value))

    def chosen_threshold(self) -> float | None:
        """The threshold the control gives now (None when a rate cannot be reached on these rows)."""
        mode, value = self.threshold_mode.currentData(), float(self.threshold_spin.value())
        if mode == "threshold":
            return value
        result = self._result()
        scored = result.scored if result else None
        if scored is None:
            return None
        try:
            return threshold_for(scored["y"], scored["package"][:, 1], **{mode: value})
        except ConfigError:
            return None

    def threshold_changed(self) -> None:
        """Sensitivity and specificity of the package at the chosen threshold, on the labelled rows."""
        result = self._result()
        if result is None or result.threshold is None:
            return
        t = self.chosen_threshold()
        written = self.tr("Written at {w:.3f}.").format(w=result.threshold["value"])
        scored = result.scored
        if t is None or scored is None:
            self.threshold_label.setText(written + (" " + self.tr("This choice needs labelled rows of both classes.")
                                                    if t is None else ""))
            return
        y = scored["y"]
        sens, spec = (float(r[0]) for r in rates_at(y, scored["package"][:, 1], [t]))
        called = scored["package"][:, 1] >= t
        self.threshold_label.setText(self.tr(
            "At {t:.3f}, the package: sensitivity <b>{se:.2f}</b> ({tp}/{p}), specificity <b>{sp:.2f}</b> "
            "({tn}/{n}) on your labelled rows. {written}").format(
            t=t, se=sens, sp=spec, tp=int(np.sum(called & (y == 1))), p=int(np.sum(y == 1)),
            tn=int(np.sum(~called & (y == 0))), n=int(np.sum(y == 0)), written=written))
        self.point_moved.emit(1.0 - spec, sens)
