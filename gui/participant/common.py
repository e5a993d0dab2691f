"""Small pieces shared by the participant pages: a path field with Browse and recent files, a read-only
table model over a DataFrame of text (with one highlighted cell), and plain-word helpers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from PySide6.QtCore import QAbstractTableModel, QCoreApplication, QModelIndex, QObject, Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QMenu, QToolButton, QVBoxLayout, QWidget, QWizardPage

from core.api import ANCHOR_WORDS  # noqa: F401 (plain words, shared)

from .. import settings as app_settings
from ..audit_restart import AuditRestartButton, refusal_text, restarted_text
from ..jobs import Job
from ..screen import scrolling
from ..widgets import JobPanel, MessageLabel


class PathField(QWidget):
    """A path: a line edit, a Browse… button and a menu of recent paths of one kind.

    ``mode`` is "open" (an existing file), "save" (a file to write) or "dir" (a folder). ``changed(path)`` is
    emitted when the user finishes editing, browses, picks a recent path, or :meth:`set_path` is called.
    """

    changed = Signal(str)

    def __init__(self, kind: str, mode: str = "open", file_filter: str = "", title: str = "",
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.kind, self.mode, self.file_filter, self.title = kind, mode, file_filter, title
        self.edit = QLineEdit()
        self.edit.setClearButtonEnabled(True)
        self.edit.editingFinished.connect(self._edited)
        self.browse_button = QToolButton()
        self.browse_button.setText(self.tr("Browse…"))
        self.browse_button.clicked.connect(self.browse)
        self.recent_button = QToolButton()
        self.recent_button.setText(self.tr("Recent"))
        self.recent_button.setToolTip(self.tr("Recently used"))
        self.recent_button.setPopupMode(QToolButton.InstantPopup)
        self.recent_menu = QMenu(self)
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.recent_button.setMenu(self.recent_menu)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.browse_button)
        lay.addWidget(self.recent_button)
        self.recent_button.setVisible(bool(app_settings.recent(kind)))
        self.setFocusProxy(self.edit)
        self._last = ""

    def path(self) -> str:
        return self.edit.text().strip()

    def set_path(self, path: str | Path, emit: bool = True) -> None:
        self.edit.setText(str(path))
        self._last = self.path()
        if emit:
            self.changed.emit(self.path())

    def remember(self) -> None:
        """Add the current path to the recent list of this field's kind."""
        if self.path():
            app_settings.remember(self.kind, str(Path(self.path()).resolve()))
            self.recent_button.setVisible(True)

    def _edited(self) -> None:
        if self.path() != self._last:
            self._last = self.path()
            self.changed.emit(self.path())

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for p in app_settings.recent(self.kind):
            act = QAction(p, self.recent_menu)
            act.triggered.connect(lambda _=False, p=p: self.set_path(p))
            self.recent_menu.addAction(act)

    def _start_dir(self) -> str:
        if self.path():
            p = Path(self.path())
            return str(p if self.mode == "dir" else p.parent)
        recent = app_settings.recent(self.kind) or app_settings.recent("folders")
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def browse(self) -> None:
        title = self.title or self.tr("Choose a file")
        if self.mode == "dir":
            path = QFileDialog.getExistingDirectory(self, title, self._start_dir())
        elif self.mode == "save":
            start = self.path() or self._start_dir()
            path, _ = QFileDialog.getSaveFileName(self, title, start, self.file_filter)
        else:
            path, _ = QFileDialog.getOpenFileName(self, title, self._start_dir(), self.file_filter)
        if path:
            self.set_path(path)


class TextFrameModel(QAbstractTableModel):
    """A read-only table over a DataFrame of strings, with optional row labels, greyed columns and one
    highlighted cell (the cell a core error names)."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.frame = pd.DataFrame()
        self.row_labels: list[str] = []
        self.grey: set[int] = set()
        self.bold: set[int] = set()
        self.highlight: tuple[int, int] | None = None
        self.highlight_text = ""
        self.highlight_column: int | None = None

    def set_frame(self, frame: pd.DataFrame, row_labels: list[str] | None = None) -> None:
        self.beginResetModel()
        self.frame = frame
        self.row_labels = list(row_labels or [])
        self.highlight = None
        self.highlight_column = None
        self.grey, self.bold = set(), set()
        self.endResetModel()

    def set_roles(self, grey: set[int], bold: set[int]) -> None:
        self.beginResetModel()
        self.grey, self.bold = set(grey), set(bold)
        self.endResetModel()

    def set_highlight(self, row: int | None, column: int | None, text: str = "") -> None:
        self.beginResetModel()
        self.highlight = (row, column) if row is not None and column is not None else None
        self.highlight_column = column if row is None else None
        self.highlight_text = text
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.frame)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.frame.columns)

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole):
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        hit = self.highlight == (r, c) or self.highlight_column == c
        if role == Qt.DisplayRole:
            return str(self.frame.iat[r, c])
        if role == Qt.BackgroundRole and hit:
            return QBrush(QColor("#fecaca"))
        if role == Qt.ToolTipRole and hit:
            return self.highlight_text
        if role == Qt.ForegroundRole and c in self.grey:
            return QBrush(QColor("#9ca3af"))
        if role == Qt.FontRole and c in self.bold:
            font = QFont()
            font.setBold(True)
            return font
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole):
        if role != Qt.DisplayRole:
            if role == Qt.ForegroundRole and orientation == Qt.Horizontal and section in self.grey:
                return QBrush(QColor("#9ca3af"))
            return None
        if orientation == Qt.Horizontal:
            return str(self.frame.columns[section]) if section < len(self.frame.columns) else None
        if section < len(self.row_labels):
            return self.row_labels[section]
        return str(section + 1)


class Page(QWizardPage):
    """A wizard page with an inline message line and a progress/cancel panel at the bottom.

    Subclasses put their widgets in ``self.body`` (a QVBoxLayout inside ``self.scroll``, a scroll area);
    ``self.message`` and ``self.jobs`` follow, outside it (always in view).
    """

    def __init__(self, title: str, subtitle: str = ""):
        super().__init__()
        self.setTitle(title)
        if subtitle:
            self.setSubTitle(subtitle)
        self.message = MessageLabel()
        self.audit_restart_button = AuditRestartButton()  # offered when the workspace's audit log is refused
        self.audit_restart_button.restarted.connect(
            lambda result: self.message.show_message("info", restarted_text(result)))
        self.audit_restart_button.failed.connect(lambda text: self.message.show_message("error", text))
        self.jobs = JobPanel()
        self.job: Job | None = None
        self._busy = False
        outer = QVBoxLayout(self)
        content = QWidget()
        self.body = QVBoxLayout(content)
        self.body.setContentsMargins(0, 0, 4, 0)
        self.scroll = scrolling(content)  # the page scrolls, rather than being squeezed, on a small or scaled screen
        outer.addWidget(self.scroll, 1)
        outer.addWidget(self.message)
        outer.addWidget(self.audit_restart_button, 0, Qt.AlignLeft)
        outer.addWidget(self.jobs)

    @property
    def state(self):
        """The wizard, which holds the core objects chosen so far."""
        return self.wizard()

    @property
    def busy(self) -> bool:
        """True from the start of a job until its outcome has been shown on the page."""
        return self._busy

    def start(self, fn, title: str, on_success, on_failure=None, on_end=None) -> Job:
        """Run ``fn(control)`` in a job shown on this page. ``busy`` stays True until every outcome slot ran."""
        self.message.clear_message()
        self.audit_restart_button.offer(None, None)
        self._busy = True

        def ended() -> None:
            self._busy = False
            if on_end is not None:
                on_end()
            self.completeChanged.emit()

        def hide_panel(*_) -> None:  # the outcome is said on the page; the panel stays only for "Cancelled"
            self.jobs.setVisible(False)

        self.job = run_job(self.jobs, fn, title, [on_success, hide_panel], [on_failure or self.failed, hide_panel],
                           ended)
        self.completeChanged.emit()
        return self.job

    def failed(self, text: str) -> None:
        error = self.job.exception if self.job is not None else None
        identity = self.wizard().identity if self.wizard() is not None else None
        offered = self.audit_restart_button.offer(error, identity)
        self.message.show_message("error", refusal_text(error) if offered else text)

    def cleanupPage(self) -> None:  # Back: stop what this page was doing
        if self.busy:
            self.jobs.cancel()


def run_job(panel: JobPanel, fn, title: str, on_success, on_failure=None, on_end=None) -> Job:
    """Start ``fn(control)`` as a :class:`Job` shown in ``panel``; route its outcome to the callbacks (a callable
    or a list of them, called in order). Everything is connected before the job starts, so no outcome is missed
    however fast the job ends; ``on_end`` runs after the outcome's callbacks."""
    job = Job(fn, title, panel)
    for signal, slots in ((job.succeeded, on_success), (job.failed, on_failure), (job.ended, on_end)):
        for slot in (slots if isinstance(slots, list) else [slots]):
            if slot is not None:
                signal.connect(slot)
    panel.run(job)
    return job


# ---------------------------------------------------------------------------------------------- words

def human_size(n: int) -> str:
    """Bytes in the units people read: 812 bytes, 14.2 KB, 3.1 MB (powers of 1000, like file managers)."""
    if n < 1000:
        return f"{n} bytes"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000.0
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}"
    return f"{n:.1f} TB"


LABELS_LEAVE_WORDS = {
    "rows": "the class of each of your rows (in shuffled order)",
    "counts": "only how many of your rows are in each class",
    "none": "no labels",
    "used": "no labels (they are used on your computer only, to fit the model whose summary leaves)",
}


def identity_file_field(title: str) -> PathField:
    """A field for a ``.dcid`` file, pre-filled with the identity opened last on this computer."""
    field = PathField("identities", "open", QCoreApplication.translate("PathField", "DC Studio identity (*.dcid)"),
                      title)
    recent = app_settings.recent("identities")
    if recent:
        field.set_path(recent[0], emit=False)
    return field
