"""Small widgets used on every page: a progress/cancel panel, messages, a fingerprint display."""

from __future__ import annotations

import html

from PySide6.QtCore import QCoreApplication, QEvent, Qt, Signal
from PySide6.QtGui import QFont, QImage, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.api import passphrase_score, shown_lines

from .jobs import Job


def plain(value) -> str:
    """Text that came in a file (a name, a reason, a note, an error quoting them) for a plain-text widget — a table
    cell, a plain label, a title: through core's one sanitiser (:mod:`core.safe_text`)."""
    return shown_lines(value)


def esc(value, quote: bool = True) -> str:
    """The same text for a rich-text label (one that also shows markup of its own): sanitised, then HTML-escaped."""
    return html.escape(shown_lines(value), quote=quote)


def plain_tip(value) -> str:
    """Text from a file as a tooltip, which Qt reads as rich text when it looks like HTML: always rich, escaped."""
    return "<qt>" + esc(value).replace("\n", "<br>") + "</qt>"


def passphrase_edit(on_enter=None) -> QLineEdit:
    """A line edit that hides what is typed; ``on_enter`` is called when Return is pressed."""
    edit = QLineEdit()
    edit.setEchoMode(QLineEdit.Password)
    if on_enter is not None:
        edit.returnPressed.connect(on_enter)
    return edit


class MessageLabel(QLabel):
    """An inline info / warning / error line (Orange's declared messages, shown the same way everywhere)."""

    STYLES = {"info": "color:#1e3a8a;", "warning": "color:#92400e;", "error": "color:#b91c1c;font-weight:bold;",
              "ok": "color:#166534;"}

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.setTextFormat(Qt.PlainText)  # a message may quote a file's text: never read as markup
        self.clear_message()

    def show_message(self, kind: str, text: str) -> None:
        self.setStyleSheet(self.STYLES.get(kind, ""))
        self.setText(plain(text))
        self.setVisible(bool(text))
        self.kind = kind

    def clear_message(self) -> None:
        self.kind = ""
        self.setText("")
        self.setVisible(False)


class EmptyNote(QLabel):
    """A sentence over an empty plot saying what will appear there, instead of blank 0–1 axes.

    ``show_note(text)`` covers the plot (its axes are hidden meanwhile); ``hide_note()`` uncovers it."""

    def __init__(self, plot, text: str = ""):
        super().__init__(text, plot)
        self.plot = plot
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignCenter)
        self.setStyleSheet("background:#ffffff;color:#4b5563;padding:16px;font-size:10.5pt;")
        plot.installEventFilter(self)
        self.setGeometry(plot.rect())
        self.show_note(text)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt name)
        if obj is self.plot and event.type() == QEvent.Resize:
            self.setGeometry(self.plot.rect())
        return False

    def _axes(self, shown: bool) -> None:
        item = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            item.showAxis(name, shown)

    def show_note(self, text: str | None = None) -> None:
        if text is not None:
            self.setText(text)
        self._axes(False)
        self.setGeometry(self.plot.rect())
        self.raise_()
        self.setVisible(True)

    def hide_note(self) -> None:
        if self.isVisible():
            self._axes(True)
            self.setVisible(False)

    @property
    def shown(self) -> bool:
        return not self.isHidden()


class JobPanel(QWidget):
    """Progress bar + status text + Cancel for one running :class:`Job`."""

    finished = Signal(str)  # "succeeded" | "failed" | "cancelled"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.PlainText)  # progress and failures may quote a file's text
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        row = QHBoxLayout()
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(row)
        lay.addWidget(self.status)
        self.job: Job | None = None
        self.setVisible(False)

    def run(self, job: Job) -> Job:
        self.job = job
        self.bar.setValue(0)
        self.status.setText(job.title)
        self.cancel_button.setEnabled(True)
        self.setVisible(True)
        job.progress.connect(self._progress)
        job.succeeded.connect(lambda _: self._done("succeeded"))
        job.failed.connect(lambda msg: self._done("failed", msg))
        job.cancelled.connect(lambda: self._done("cancelled", self.tr("Cancelled; nothing was written.")))
        return job.start()

    def _progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(fraction * 1000))
        if text:
            self.status.setText(plain(text))

    def _done(self, how: str, text: str = "") -> None:
        self.cancel_button.setEnabled(False)
        if how == "succeeded":
            self.bar.setValue(1000)
            self.status.setText(self.tr("Done."))
        else:
            self.status.setText(plain(text))
        self.finished.emit(how)

    def cancel(self) -> None:
        if self.job is not None and self.job.running:
            self.status.setText(self.tr("Cancelling…"))
            self.job.cancel()

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running


def qr_pixmap(text: str, scale: int = 6, device_pixel_ratio: float = 1.0) -> QPixmap:
    """A QR code of ``text`` (segno makes the matrix; Qt draws it), ``scale`` logical pixels per module and
    sharp on a high-DPI screen (drawn at ``device_pixel_ratio`` device pixels per logical pixel)."""
    import segno

    matrix = [list(row) for row in segno.make(text, error="m").matrix]
    n = len(matrix)
    border = 4
    px = max(1, int(round(scale * device_pixel_ratio)))
    size = (n + 2 * border) * px
    img = QImage(size, size, QImage.Format_RGB32)
    img.fill(0xFFFFFF)
    for y, row in enumerate(matrix):
        for x, on in enumerate(row):
            if on:
                for dy in range(px):
                    for dx in range(px):
                        img.setPixel((x + border) * px + dx, (y + border) * px + dy, 0x000000)
    pixmap = QPixmap.fromImage(img)
    pixmap.setDevicePixelRatio(px / scale)
    return pixmap


class FingerprintView(QWidget):
    """A fingerprint shown large, with its QR code, for reading out to the other party.

    Both keep their full size: the layout must make room for them (a cut fingerprint cannot be compared,
    a cropped QR code cannot be scanned)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.text = QLabel()
        font = QFont("monospace")
        font.setStyleHint(QFont.Monospace)
        font.setPointSize(18)
        font.setBold(True)
        self.text.setFont(font)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.qr = QLabel()
        self.qr.setToolTip(self.tr("Scan this code to compare the fingerprint on a phone"))
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.qr, 0, Qt.AlignTop)

    def set_fingerprint(self, fingerprint: str) -> None:
        self.text.setText(fingerprint)
        self.text.setMinimumWidth(self.text.fontMetrics().horizontalAdvance(fingerprint or " ") + 8)
        if fingerprint:
            pixmap = qr_pixmap(fingerprint, 4, self.devicePixelRatioF())
            self.qr.setPixmap(pixmap)
            self.qr.setFixedSize(pixmap.deviceIndependentSize().toSize())
        else:
            self.qr.setPixmap(QPixmap())
            self.qr.setFixedSize(0, 0)


PASSPHRASE_HINTS = ("too short: use at least 8 characters", "weak: add words or characters", "fair", "good",
                    "strong")


def passphrase_strength(text: str) -> tuple[int, str]:
    """The passphrase rating both roles show (:func:`core.formats.identity.passphrase_score`): 0–4 and a short
    hint ("" for an empty field)."""
    if not text:
        return 0, ""
    score = passphrase_score(text)
    return score, QCoreApplication.translate("passphrase", PASSPHRASE_HINTS[score])
