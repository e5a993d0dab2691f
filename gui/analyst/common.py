"""Pieces every analyst page uses: cluster colours, white pyqtgraph plots, the label sparkline, and the
remembered list of confirmed site fingerprints."""

from __future__ import annotations

import re
import time

import numpy as np
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from core.api.common import ReceivedBundle

from .. import settings as app_settings
from ..jobs import Job

COUNTS_ROLE = Qt.UserRole + 1
NAMES_ROLE = Qt.UserRole + 2  # the class names under a sparkline's bars


class ThrottledJob(Job):
    """A :class:`gui.jobs.Job` whose progress reaches the UI at most ``max_hz`` times a second.

    Core jobs report every epoch; repainting the progress text that often, while the training thread
    competes for the GIL, was the main cause of the window freezing during training (``python docs/tools/stall.py``).
    A report whose wording changes (a new phase, not just a new number) always goes through.
    """

    max_hz = 8.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._last_emit = 0.0
        self._last_shape = None

    def _report(self, fraction: float, text: str) -> None:
        now = time.monotonic()
        shape = re.sub(r"[0-9.]+", "#", text)
        if shape == self._last_shape and now - self._last_emit < 1.0 / self.max_hz and fraction < 1.0:
            return
        self._last_emit, self._last_shape = now, shape
        self.progress.emit(fraction, text)


# The analyst keeps the method's terms; each is explained in a tooltip where it appears.
TERMS = {
    "anchor": "Anchor: made-up rows every site reduces with its own private map; lining them up aligns the sites. "
              "Extended SMOTE draws them between the rows of a small shared seed set; uniform and Gaussian draw "
              "them at random within public ranges or statistics.",
    "holdout": "Accuracy on rows of each site that the model did not train on (out-of-fold).",
}


def hide_when_done(panel) -> None:
    """A JobPanel that disappears after success (the page shows the result) but stays to explain a
    failure or a cancel. Its room is kept while hidden: showing or hiding it must not re-lay out (and
    so redraw) the plots below it at the very moment a job starts or ends."""
    policy = panel.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    panel.setSizePolicy(policy)
    panel.finished.connect(lambda how: panel.setVisible(how != "succeeded"))


def label_counts(bundle: ReceivedBundle, n_classes: int) -> np.ndarray:
    """Per-class row counts of one received bundle (shipped counts, else counted from its labels)."""
    if "label_counts" in bundle.arrays:
        c = np.asarray(bundle.arrays["label_counts"], dtype=np.int64)
        if c.shape == (n_classes,):
            return c
    if "y" in bundle.arrays:
        return np.bincount(np.asarray(bundle.arrays["y"], dtype=np.int64), minlength=n_classes)[:n_classes]
    return np.zeros(n_classes, dtype=np.int64)


class SparklineDelegate(QStyledItemDelegate):
    """Paints a tiny bar chart of the counts stored under ``COUNTS_ROLE`` in a table cell, each bar named by
    the class under ``NAMES_ROLE`` (shortened to fit under it; the full names and counts are in the tooltip)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        counts = index.data(COUNTS_ROLE)
        if option.state & QStyle.State_Selected:
            painter.fillRect(option.rect, option.palette.highlight())
        if not counts:
            super().paint(painter, option, index)
            return
        painter.save()
        painter.setRenderHint(QPainter.Antialiasing, False)
        names = index.data(NAMES_ROLE) or []
        r = option.rect.adjusted(4, 3, -4, -3 - (13 if names else 0))
        top = max(max(counts), 1)
        w = r.width() / len(counts)
        if names:
            font = painter.font()
            font.setPointSizeF(max(6.5, font.pointSizeF() * 0.75))
            painter.setFont(font)
            painter.setPen(QColor("#374151"))
            metrics = painter.fontMetrics()
            for k, name in enumerate(names[: len(counts)]):
                cell = QRect(int(r.left() + k * w), r.bottom() + 2, max(1, int(w)), 12)
                painter.drawText(cell, Qt.AlignHCenter | Qt.AlignTop,
                                 metrics.elidedText(str(name), Qt.ElideRight, cell.width() + 2))
        for k, c in enumerate(counts):
            h = int(round(r.height() * c / top))
            bar = QRect(int(r.left() + k * w + 1), r.bottom() - h + 1, max(1, int(w) - 2), h)
            painter.fillRect(bar, QColor("#2563eb"))
        painter.setPen(QColor("#d1d5db"))
        painter.drawLine(r.left(), r.bottom() + 1, r.right(), r.bottom() + 1)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:
        return QSize(120, 40 if index.data(NAMES_ROLE) else 26)


# ---- confirmed fingerprints (remembered per computer in QSettings) -----------------------------------
_CONFIRMED = "analyst/confirmed_fingerprints"


def confirmed_fingerprints() -> set[str]:
    value = app_settings.settings().value(_CONFIRMED, [])
    if isinstance(value, str):
        value = [value]
    return {str(v) for v in (value or [])}


def set_fingerprint_confirmed(fingerprint: str, confirmed: bool) -> None:
    fps = confirmed_fingerprints()
    (fps.add if confirmed else fps.discard)(fingerprint)
    app_settings.settings().setValue(_CONFIRMED, sorted(fps))
