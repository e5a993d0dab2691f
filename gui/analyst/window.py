"""The analyst's main window: a step list on the left, one page per step on the right.

All pages share one :class:`core.analyst_state.AnalystState` through its Qt adapter
(:mod:`gui.analyst.state`): the open session, the received bundles, the chosen threshold and the last
result. Pages subscribe to its signals (napari's split: the state knows nothing about widgets).
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QTimer
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

from .. import settings as app_settings
from ..screen import fit_window, scrolling, window_fits
from ..widgets import JobPanel, plain
from .state import QtAnalystState, training_threads


def compares_sites(method: str) -> bool:
    """Whether a method has a Clients page (it describes how sites differ: ``Method.client_distances``)."""
    from core.api.common import METHODS, Method

    cls = METHODS.get(method)
    return cls is not None and cls.client_distances is not Method.client_distances


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
        self.state = QtAnalystState(self)
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
            self.stack.addWidget(scrolling(page))  # a page scrolls, rather than being squeezed, on a small screen
        self.nav.currentRowChanged.connect(self._row_changed)
        self.project_label = QLabel()
        self.project_label.setWordWrap(True)
        self.project_label.setTextFormat(Qt.PlainText)
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
        fit_window(self, QSize(1240, 820))
        geometry = app_settings.settings().value("analyst/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
            if not window_fits(self):  # remembered from a larger screen
                fit_window(self, QSize(1240, 820))

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
        self._items["clients"].setHidden(clustering or (has_session and not compares_sites(s.session.kit.method)))
        self._items["clustering"].setHidden(not clustering and not has_clustering)
        if has_session:
            kit = s.session.kit
            self.setWindowTitle(self.tr("DC Studio — analyst — %1").replace("%1", plain(kit.name)))
            self.project_label.setText(self.tr("%1\n%2 · %3 site(s)").replace("%1", plain(kit.name))
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


def warm_up() -> None:
    """Make sure the training engine (torch) is loaded, with its kernel threads set, soon after the window appears.

    The app loads torch while its "Opening…" window waits (:data:`gui.app.HEAVY_MODULES`), so this only sets the
    threads. A window opened otherwise (tests, tools) imports torch here, on the window's own thread: loading its
    native library holds the GIL for a second or more wherever it is done, and an import on a background thread
    while the window was up deadlocked against the window's own loading of native code (Qt plugins, OpenSSL)."""
    try:
        import torch
    except Exception:  # training reports a missing engine itself, with a clear message
        return
    torch.set_num_threads(training_threads())
