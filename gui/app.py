"""Entry point: ``dcstudio gui`` / ``dcstudio-gui``. The first screen asks which role this computer plays
(remembered) and lists recent projects."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from . import settings as app_settings


class StartWindow(QMainWindow):
    """Role choice + recent projects. Opens the participant wizard or the analyst workspace."""

    def __init__(self):
        super().__init__()
        self.setWindowTitle(self.tr("DC Studio"))
        self.child: QWidget | None = None
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
        self.open_button.clicked.connect(self.open_role)
        self.results_button = QPushButton(self.tr("Apply a &package (results)…"))
        self.results_button.clicked.connect(lambda: self.open_role(results=True))
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

    def _open_recent(self, item: QListWidgetItem) -> None:
        self.open_role(kit_path=item.data(Qt.UserRole))

    def selected_role(self) -> str:
        return "analyst" if self.analyst.isChecked() else "participant"

    def open_role(self, results: bool = False, kit_path: str | None = None) -> QWidget:
        role = self.selected_role()
        if self.remember.isChecked():
            app_settings.set_role(role)
        if role == "analyst":
            from .analyst.window import AnalystWindow

            self.child = AnalystWindow(kit_path=kit_path)
        else:
            from .participant.wizard import ParticipantWizard, ResultsWindow

            self.child = ResultsWindow() if results else ParticipantWizard(kit_path=kit_path)
        self.child.show()
        return self.child


def main(argv: list[str] | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv if argv is None else ["dcstudio-gui", *argv])
    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    window = StartWindow()
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
