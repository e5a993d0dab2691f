"""Windows that fit the screen they open on (a 1366×768 laptop as well as a 4K monitor), and the checks the
tests and screenshot scripts use to prove that key widgets are fully visible."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractItemView, QWidget

# room a window manager takes outside a window (title bar, borders) and a taskbar takes from the screen
FRAME = QSize(16, 40)


def available() -> QRect:
    screen = QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1366, 768)


def fit_window(window: QWidget, preferred: QSize) -> QSize:
    """Resize ``window`` to ``preferred``, shrunk to the available screen (less a frame) and centred."""
    room = available()
    w = min(preferred.width(), room.width() - FRAME.width())
    h = min(preferred.height(), room.height() - FRAME.height())
    size = QSize(max(w, window.minimumSizeHint().width() if w < preferred.width() else w), h)
    window.resize(size)
    window.move(room.x() + max(0, (room.width() - size.width()) // 2),
                room.y() + max(0, (room.height() - FRAME.height() - size.height()) // 2))
    return size


def window_fits(window: QWidget) -> bool:
    """Whether the window, with a frame, fits the available screen."""
    room = available()
    return (window.width() + FRAME.width() <= room.width() + 1
            and window.height() + FRAME.height() <= room.height() + 1)


def fully_visible(widget: QWidget) -> bool:
    """Whether the whole widget is shown: visible, inside its window and not clipped by any ancestor (a
    scroll area's viewport, a splitter pane, a too-small group box)."""
    if not widget.isVisible() or widget.width() <= 0 or widget.height() <= 0:
        return False
    window = widget.window()
    rect = QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        clip = QRect(parent.mapTo(window, parent.rect().topLeft()), parent.size())
        if not clip.contains(rect):
            return False
        parent = parent.parentWidget()
    return window.rect().contains(rect)


def visible_rows(view: QAbstractItemView) -> int:
    """How many rows of a table or list are wholly inside its viewport (at the top of the view)."""
    model = view.model()
    if model is None:
        return 0
    height = view.viewport().height()
    n = 0
    for r in range(model.rowCount()):
        rect = view.visualRect(model.index(r, 0))
        if rect.top() >= 0 and rect.bottom() < height:
            n += 1
    return n


def text_fits(label) -> bool:
    """Whether a one-line label shows its whole text (the last character of a fingerprint is not cut)."""
    return label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width()


def laptop_platform(width: int = 1366, height: int = 768, dpr: float = 1.0) -> None:
    """Before the QApplication exists: make an offscreen run draw on a ``width``×``height`` screen (Qt's
    offscreen plugin reads the screen from a JSON file). A real display platform is left alone."""
    import json
    import os
    import tempfile

    platform = os.environ.get("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY") else "")
    if platform != "offscreen":
        return
    config = os.path.join(tempfile.gettempdir(), f"dcstudio-screen-{width}x{height}@{dpr:g}.json")
    with open(config, "w", encoding="utf-8") as fh:
        json.dump({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": width, "height": height,
                                "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": dpr}]}, fh)
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"
