"""The analyst's main window: a step list on the left, one page per step on the right.

All pages share one :class:`AnalystState`: the open :class:`core.analyst.AnalystSession`, the received
bundles, the threshold chosen on the Clients page and the last :class:`core.methods.MethodResult`. Pages
subscribe to its signals (napari's split: the state knows nothing about widgets).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from core.analyst import AnalystSession
from core.methods import MethodResult, ReceivedBundle

from .. import settings as app_settings
from ..widgets import JobPanel


class AnalystState(QObject):
    """What the analyst has open. Signals tell pages when a part of it changed."""

    session_changed = Signal()
    bundles_changed = Signal()
    threshold_changed = Signal()
    result_changed = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.session: AnalystSession | None = None
        self.kit_path: Path | None = None
        self.identity_path: Path | None = None
        self.bundles: list[ReceivedBundle] = []
        self.t_choice: str | float = "auto"  # "auto" or the threshold set on the Clients page
        self.result: MethodResult | None = None
        self.result_bundles: list[ReceivedBundle] = []
        self.workspace_lock = threading.Lock()  # import and export never write the workspace at once

    # ---- setters (each emits one signal) ---------------------------------------------------------------
    def set_session(self, session: AnalystSession | None, kit_path: Path | None, identity_path: Path | None) -> None:
        self.session, self.kit_path, self.identity_path = session, kit_path, identity_path
        self.bundles, self.result, self.result_bundles = [], None, []
        if session is not None:
            t = session.kit.settings.get("t", "auto")
            self.t_choice = t if t == "auto" else float(t)
        self.session_changed.emit()
        self.bundles_changed.emit()
        self.result_changed.emit()

    def add_bundles(self, bundles: list[ReceivedBundle]) -> None:
        known = {b.envelope_id for b in self.bundles}
        new = [b for b in bundles if b.envelope_id not in known]
        if not new:
            return
        self.bundles.extend(new)
        self.bundles_changed.emit()
        if self.result is not None:  # a result no longer covers every imported site
            self.set_result(None, [])

    def set_threshold(self, t: str | float) -> None:
        t = t if t == "auto" else round(float(t), 4)
        if t != self.t_choice:
            self.t_choice = t
            self.threshold_changed.emit()

    def set_result(self, result: MethodResult | None, bundles: list[ReceivedBundle]) -> None:
        self.result, self.result_bundles = result, list(bundles)
        self.result_changed.emit()

    # ---- derived -----------------------------------------------------------------------------------------
    @property
    def kit(self):
        return None if self.session is None else self.session.kit

    @property
    def classes(self) -> list[str]:
        return [] if self.session is None else list(self.session.kit.schema.classes)

    @property
    def task(self) -> str:
        return "" if self.session is None else self.session.kit.task


class AnalystWindow(QMainWindow):
    """The analyst's workspace. ``kit_path`` opens that project's kit straight away (identity still asked).

    Test hooks: ``state``, ``nav``, ``stack``, ``project_page``, ``bundles_page``, ``clients_page``,
    ``models_page``, ``clustering_page``, ``export_page``, ``show_page(key)``.
    """

    PAGE_KEYS = ("project", "bundles", "clients", "models", "clustering", "export")

    def __init__(self, kit_path: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        from .bundles import BundlesPage
        from .clients import ClientsPage
        from .clustering import DataClusteringPage
        from .export import ExportPage
        from .models import ModelsPage
        from .project import ProjectPage

        self._warmed = False
        self.state = AnalystState(self)
        self.project_page = ProjectPage(self.state)
        self.bundles_page = BundlesPage(self.state)
        self.clients_page = ClientsPage(self.state)
        self.models_page = ModelsPage(self.state)
        self.clustering_page = DataClusteringPage(self.state)
        self.export_page = ExportPage(self.state)
        self.pages = dict(zip(self.PAGE_KEYS, (self.project_page, self.bundles_page, self.clients_page,
                                               self.models_page, self.clustering_page, self.export_page),
                              strict=True))
        titles = {"project": self.tr("Project"), "bundles": self.tr("Bundles"), "clients": self.tr("Clients"),
                  "models": self.tr("Models"), "clustering": self.tr("Data clustering"),
                  "export": self.tr("Export")}
        self.titles = titles

        self.nav = QListWidget()
        self.nav.setObjectName("analystNav")
        self.nav.setMaximumWidth(220)
        self.nav.setMinimumWidth(170)
        self.nav.setStyleSheet("QListWidget{font-size:11pt;} QListWidget::item{padding:8px 6px;}")
        self.stack = QStackedWidget()
        self._items: dict[str, QListWidgetItem] = {}
        for key, page in self.pages.items():
            item = QListWidgetItem(titles[key])
            item.setData(Qt.UserRole, key)
            self.nav.addItem(item)
            self._items[key] = item
            self.stack.addWidget(page)
        self.nav.currentRowChanged.connect(self._row_changed)
        self.project_label = QLabel()
        self.project_label.setWordWrap(True)
        self.project_label.setStyleSheet("color:#4b5563;")
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(6, 6, 0, 6)
        lay.addWidget(self.nav, 1)
        lay.addWidget(self.project_label)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setCollapsible(0, False)
        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(split)
        self.setCentralWidget(central)
        self.resize(1240, 820)
        geometry = app_settings.settings().value("analyst/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)

        for n, key in enumerate(self.PAGE_KEYS, start=1):
            QShortcut(QKeySequence(f"Ctrl+{n}"), self, activated=lambda k=key: self.show_page(k))
        self.state.session_changed.connect(self._refresh)
        self.state.bundles_changed.connect(self._refresh)
        self.state.result_changed.connect(self._refresh)
        self.models_page.show_clients_requested.connect(lambda: self.show_page("clients"))
        self._refresh()
        self.show_page("project")
        if kit_path:
            self.project_page.open_kit(kit_path)

    # ---- navigation ----------------------------------------------------------------------------------
    def show_page(self, key: str) -> bool:
        """Switch to a page; False (and stays) if that step is not available yet."""
        item = self._items[key]
        if item.isHidden() or not (item.flags() & Qt.ItemIsEnabled):
            return False
        self.nav.setCurrentItem(item)
        return True

    def current_page_key(self) -> str:
        item = self.nav.currentItem()
        return item.data(Qt.UserRole) if item is not None else "project"

    def _row_changed(self, row: int) -> None:
        if row >= 0:
            self.stack.setCurrentIndex(row)

    def _refresh(self) -> None:
        s = self.state
        has_session = s.session is not None
        clustering = has_session and s.task == "clustering"
        n = len(s.bundles)
        has_clustering = self.clustering_page.has_result
        enabled = {"project": True, "bundles": has_session, "clients": has_session and n >= 1,
                   "models": has_session and n >= 1, "clustering": has_clustering,
                   "export": s.result is not None}
        done = {"project": has_session, "bundles": n > 0, "models": s.result is not None}
        for key, item in self._items.items():
            flags = item.flags()
            item.setFlags(flags | Qt.ItemIsEnabled if enabled[key] else flags & ~Qt.ItemIsEnabled)
            item.setText(self.titles[key] + ("  ✓" if done.get(key) else ""))
        self._items["clients"].setHidden(clustering)
        self._items["clustering"].setHidden(not clustering and not has_clustering)
        if has_session:
            kit = s.session.kit
            self.setWindowTitle(self.tr("DC Studio — analyst — %1").replace("%1", kit.name))
            self.project_label.setText(self.tr("%1\n%2 · %3 site(s)").replace("%1", kit.name)
                                       .replace("%2", kit.method).replace("%3", str(n)))
        else:
            self.setWindowTitle(self.tr("DC Studio — analyst"))
            self.project_label.setText(self.tr("No project open"))
        if not self._items[self.current_page_key()].flags() & Qt.ItemIsEnabled:
            self.show_page("project")

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        if not self._warmed:
            self._warmed = True
            QTimer.singleShot(250, warm_up)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        app_settings.settings().setValue("analyst/geometry", self.saveGeometry())
        for panel in self.findChildren(JobPanel):
            if panel.busy:
                panel.cancel()
                panel.job.wait(5)
        super().closeEvent(event)


def warm_up() -> threading.Thread | None:
    """Import the training engine (torch) on a background thread, once, soon after the window appears.

    Loading torch's native library holds the GIL for a few hundred milliseconds (the UI thread cannot run
    meanwhile). Done here, that pause falls while the analyst reads the Project page instead of right after
    they press Train, so training itself never stalls the window (measured with ``python -m gui.stall``).
    """
    global WARM_UP_THREAD
    if "torch" in sys.modules:
        return None
    WARM_UP_THREAD = threading.Thread(target=_import_torch, name="warm-up", daemon=True)
    WARM_UP_THREAD.start()
    return WARM_UP_THREAD


WARM_UP_THREAD: threading.Thread | None = None


def _import_torch() -> None:
    try:
        import torch
    except Exception:  # training reports a missing engine itself, with a clear message
        return
    torch.set_num_threads(training_threads())


def training_threads() -> int:
    """Threads for torch's kernels in the desktop app: every core but one, which stays free for the window.

    With as many kernel threads as cores, torch's spinning worker threads and the UI thread fight for the
    cores; on a busy two-core machine that made one training run more than ten times slower and froze
    the window for tenths of a second (``python -m gui.stall --torch-threads 2``).
    """
    import os

    return max(1, (os.cpu_count() or 2) - 1)
