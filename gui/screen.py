"""Windows that fit the screen they open on (a 1366×768 laptop as well as a 4K monitor), and the checks the
tests and screenshot scripts use to prove that key widgets are fully visible."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractItemView, QFrame, QScrollArea, QWidget

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


class PageScroll(QScrollArea):
    """A frameless scroll area that gives its page the whole viewport while the page's minimum size fits, and the
    page's minimum size (with scroll bars) when it does not: the page scrolls on a small or scaled screen rather than
    being squeezed. (A plain resizable scroll area would give a page with word-wrapped labels its preferred height,
    scrolling even when the page fits.)"""

    def __init__(self, content: QWidget):
        super().__init__()
        self.setFrameShape(QFrame.NoFrame)
        self.setWidgetResizable(False)
        self.setWidget(content)
        content.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt name)
        if obj is self.widget() and event.type() == QEvent.LayoutRequest:
            self._fit()
        return super().eventFilter(obj, event)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        page = self.widget()
        if page is None:
            return
        room = self.maximumViewportSize()
        least = page.minimumSizeHint().expandedTo(page.minimumSize())
        layout = page.layout()

        def least_height(width: int) -> int:  # wrapped text is taller on a narrow page
            if layout is not None and layout.hasHeightForWidth():
                return max(least.height(), layout.totalMinimumHeightForWidth(width))
            return least.height()

        bar_w = self.verticalScrollBar().sizeHint().width()
        bar_h = self.horizontalScrollBar().sizeHint().height()
        tall = wide = False
        for _ in range(2):  # a scroll bar in one direction takes room from the other
            width = max(least.width(), room.width() - (bar_w if tall else 0))
            wide = least.width() > room.width() - (bar_w if tall else 0)
            height = max(least_height(width), room.height() - (bar_h if wide else 0))
            tall = height > room.height() - (bar_h if wide else 0)
        width = max(least.width(), room.width() - (bar_w if tall else 0))
        height = max(least_height(width), room.height() - (bar_h if wide else 0))
        if page.size() != QSize(width, height):
            page.resize(width, height)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return self.widget().sizeHint() if self.widget() is not None else super().sizeHint()


def scrolling(content: QWidget) -> QScrollArea:
    """``content`` in a :class:`PageScroll`: a page that scrolls, rather than being squeezed, on a small screen."""
    return PageScroll(content)


def reveal(widget: QWidget) -> None:
    """Scroll every scroll area around ``widget``, innermost first, so that it is in view (as a person would
    before reading it)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea) and parent.widget() is not None and parent.widget().isAncestorOf(widget):
            # by the widget's whole rectangle (ensureWidgetVisible asks a plot for its text cursor instead)
            top = widget.mapTo(parent.widget(), widget.rect().topLeft())
            half_w, half_h = (widget.width() + 1) // 2, (widget.height() + 1) // 2
            parent.ensureVisible(top.x() + half_w, top.y() + half_h, half_w, half_h)
        parent = parent.parentWidget()


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


def rows_height(view: QAbstractItemView, rows: int) -> int:
    """The height a table needs to show its header, ``rows`` rows and a horizontal scroll bar whole."""
    header = view.horizontalHeader() if hasattr(view, "horizontalHeader") else None
    head = header.sizeHint().height() if header is not None and not header.isHidden() else 0
    bar = view.horizontalScrollBar().sizeHint().height()
    section = view.verticalHeader().defaultSectionSize()
    return head + (rows + 1) * section + bar + 2 * view.frameWidth()  # a row to spare for header and bar styles


def keep_rows(view: QAbstractItemView, rows: int) -> None:
    """Keep ``view`` at least tall enough for its header and its first ``rows`` rows (at their present heights,
    updated as rows are re-wrapped); the page around it scrolls instead of hiding rows."""
    def update(*_):
        model = view.model()
        have = model.rowCount() if model is not None else 0
        extra = sum(max(view.rowHeight(r), view.verticalHeader().defaultSectionSize()) for r in range(min(rows, have)))
        rest = max(0, rows - have) * view.verticalHeader().defaultSectionSize()
        view.setMinimumHeight(rows_height(view, 0) + extra + rest)

    view.verticalHeader().sectionResized.connect(update)
    update()


def text_fits(label) -> bool:
    """Whether a one-line label shows its whole text (the last character of a fingerprint is not cut)."""
    return label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width()


def laptop_platform(width: int = 1366, height: int = 768, dpr: float = 1.0, dpi: int = 96) -> None:
    """Before the QApplication exists: make an offscreen run draw on a ``width``×``height`` screen (Qt's
    offscreen plugin reads the screen from a JSON file) at ``dpi`` logical DPI (120: Windows' 125 % scaling, a
    1093×614 logical screen). A real display platform is left alone."""
    import json
    import os
    import tempfile

    platform = os.environ.get("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY") else "")
    if platform != "offscreen":
        return
    config = os.path.join(tempfile.gettempdir(), f"dcstudio-screen-{width}x{height}@{dpr:g}-{dpi}.json")
    with open(config, "w", encoding="utf-8") as fh:
        json.dump({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": width, "height": height,
                                "logicalDpi": dpi, "logicalBaseDpi": 96, "dpr": dpr}]}, fh)
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"
