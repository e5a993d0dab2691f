"""Entry point: ``dcstudio gui`` / ``dcstudio-gui``. The first screen asks which role this computer plays
(remembered) and lists recent projects.

This module imports nothing but Qt, so the first window appears quickly. After Continue an "Opening…" window
appears at once while the heavy parts (numpy, pandas, scikit-learn, pyqtgraph: seconds on a busy laptop) are
imported on a background thread; the real window replaces it when they are loaded."""

from __future__ import annotations

import importlib
import sys
import threading

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from . import settings as app_settings
from .ui_post import ensure_bridge, post

# what each window needs imported before it can be built (the slow part of opening it)
HEAVY_MODULES = {
    "analyst": ("gui.analyst.window", "gui.analyst.project", "gui.analyst.bundles", "gui.analyst.clients",
                "gui.analyst.models", "gui.analyst.clustering", "gui.analyst.export",
                "torch"),  # the training engine, while the "Opening…" window waits (not once the window is up)
    "participant": ("gui.participant.wizard",),
}


class OpeningWindow(QWidget):
    """Shown the moment Continue is pressed, while the chosen window's modules load."""

    def __init__(self, what: str, size: QSize):
        super().__init__()
        self.setWindowTitle(self.tr("DC Studio"))
        label = QLabel(what)
        label.setAlignment(Qt.AlignCenter)
        label.setStyleSheet("font-size:13pt;color:#374151;")
        bar = QProgressBar()
        bar.setRange(0, 0)  # busy
        bar.setMaximumWidth(320)
        lay = QVBoxLayout(self)
        lay.addStretch(1)
        lay.addWidget(label)
        lay.addWidget(bar, 0, Qt.AlignHCenter)
        lay.addStretch(1)
        from .screen import fit_window

        fit_window(self, size)


class _Loader(QObject):
    """Imports modules on a background thread; ``loaded`` arrives on the UI thread."""

    loaded = Signal(str)

    def start(self, modules: tuple[str, ...]) -> threading.Thread:
        def work() -> None:
            error = ""
            try:
                for name in modules:
                    importlib.import_module(name)
            except Exception as exc:  # the window itself reports what is missing when it is built
                error = f"{exc.__class__.__name__}: {exc}"
            post(self, lambda loader: loader.loaded.emit(error))  # from the UI thread (gui/ui_post.py)

        thread = threading.Thread(target=work, name="open-window", daemon=True)
        thread.start()
        return thread


class StartWindow(QMainWindow):
    """Role choice + recent projects. Opens the participant wizard or the analyst workspace."""

    def __init__(self):
        super().__init__()
        self.setWindowTitle(self.tr("DC Studio"))
        self.child: QWidget | None = None
        self.opening: OpeningWindow | None = None
        ensure_bridge()
        self._loader = _Loader(self)
        title = QLabel(self.tr("<h1>DC Studio</h1><p>Learn from each other's data with one exchange of files."
                               " No raw data and no model updates ever leave a site.</p>"))
        title.setWordWrap(True)
        self.participant = QRadioButton(self.tr("This computer is a participating site (hospital, agency…)"))
        self.analyst = QRadioButton(self.tr("This computer is the analyst's"))
        self.roles = QButtonGroup(self)
        self.roles.addButton(self.participant)
        self.roles.addButton(self.analyst)
        self.remember = QCheckBox(self.tr("Remember this choice"))
        self.remember.setChecked(True)
        remembered = app_settings.role()
        (self.analyst if remembered == "analyst" else self.participant).setChecked(True)
        self.recent = QListWidget()
        self.recent.itemActivated.connect(self._open_recent)
        self._fill_recent()
        self.open_button = QPushButton(self.tr("&Continue"))
        self.open_button.setDefault(True)
        self.open_button.clicked.connect(lambda: self.open_role(defer=True))
        self.results_button = QPushButton(self.tr("Apply a &package (results)…"))
        self.results_button.clicked.connect(lambda: self.open_role(results=True, defer=True))
        lay = QVBoxLayout()
        lay.addWidget(title)
        lay.addWidget(self.participant)
        lay.addWidget(self.analyst)
        lay.addWidget(self.remember)
        lay.addWidget(QLabel(self.tr("Recent projects")))
        lay.addWidget(self.recent, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.results_button)
        buttons.addWidget(self.open_button)
        lay.addLayout(buttons)
        central = QWidget()
        central.setLayout(lay)
        self.setCentralWidget(central)
        self.resize(640, 480)

    def _fill_recent(self) -> None:
        self.recent.clear()
        for path in app_settings.recent("projects"):
            item = QListWidgetItem(path)
            item.setData(Qt.UserRole, path)
            self.recent.addItem(item)
        if not self.recent.count():  # an empty box says what will appear in it
            hint = QListWidgetItem(self.tr("No project yet. Choose your role above and press Continue; the project "
                                           "kits you open will be listed here, to open again with a double-click."))
            hint.setFlags(Qt.NoItemFlags)
            self.recent.addItem(hint)

    def _open_recent(self, item: QListWidgetItem) -> None:
        self.open_role(kit_path=item.data(Qt.UserRole), defer=True)

    def selected_role(self) -> str:
        return "analyst" if self.analyst.isChecked() else "participant"

    def open_role(self, results: bool = False, kit_path: str | None = None, defer: bool = False) -> QWidget:
        """Open the chosen window. ``defer``: show an "Opening…" window at once and build the real one when
        its modules are loaded (returns the "Opening…" window; ``child`` is the real one afterwards)."""
        role = self.selected_role()
        if self.remember.isChecked():
            app_settings.set_role(role)
        if defer:
            modules = HEAVY_MODULES["participant" if role != "analyst" else "analyst"]
            if all(m in sys.modules for m in modules):
                return self.open_role(results, kit_path)
            what = (self.tr("Opening the analyst workspace…") if role == "analyst"
                    else self.tr("Opening the results window…") if results
                    else self.tr("Opening the export wizard…"))
            self.opening = OpeningWindow(what, QSize(1240, 820) if role == "analyst" else QSize(960, 720))
            self.opening.show()
            self.open_button.setEnabled(False)
            self.results_button.setEnabled(False)

            def loaded(_error: str) -> None:
                self._loader.loaded.disconnect(loaded)
                self.open_button.setEnabled(True)
                self.results_button.setEnabled(True)
                opening, self.opening = self.opening, None
                try:
                    self.open_role(results, kit_path)
                finally:
                    if opening is not None:
                        opening.close()

            self._loader.loaded.connect(loaded)
            self._loader.start(modules)
            return self.opening
        if role == "analyst":
            from .analyst.window import AnalystWindow

            self.child = AnalystWindow(kit_path=kit_path)
        else:
            from .participant.wizard import ParticipantWizard, ResultsWindow

            self.child = ResultsWindow() if results else ParticipantWizard(kit_path=kit_path)
        self.child.show()
        return self.child


def main(argv: list[str] | None = None) -> int:
    if QApplication.instance() is None:
        from core.api import check_display

        problem = check_display()  # a missing system library: one sentence naming it and its package, not Qt's abort
        if problem:
            print(problem, file=sys.stderr)
            return 3
    app = QApplication.instance() or QApplication(sys.argv if argv is None else ["dcstudio-gui", *argv])
    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    window = StartWindow()
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
