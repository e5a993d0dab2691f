"""The project page's second section: the project kit, opened from a file (checked against the unlocked
identity when there is one), described, and copied for the sites."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFileDialog, QGroupBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.api import DCError, Identity
from core.api.common import Kit

from ..audit_restart import AuditRestartButton
from ..widgets import MessageLabel, esc
from .form_rows import form_layout, path_row, spin_row


class KitSection(QGroupBox):
    """"2. Project kit". ``identity`` gives the unlocked identity (a kit must be signed by it). Emits
    ``kit_set`` once ``kit`` and ``kit_path`` name an opened or newly signed kit."""

    kit_set = Signal()

    def __init__(self, identity: Callable[[], Identity | None], parent: QWidget | None = None):
        super().__init__(self.tr("2. Project kit"), parent)
        self._identity = identity
        self.kit: Kit | None = None
        self.kit_path: Path | None = None
        form = form_layout()
        self.kit_path_edit = QLineEdit()
        self.kit_path_edit.setPlaceholderText(self.tr("project.dckit"))
        self.kit_browse_button = QPushButton(self.tr("Br&owse…"))
        self.kit_browse_button.clicked.connect(self._browse_kit)
        self.open_kit_button = QPushButton(self.tr("Open &kit"))
        self.open_kit_button.clicked.connect(lambda: self.open_kit(self.kit_path_edit.text()))
        form.addRow(self.tr("Existing kit:"),
                    path_row(self.kit_path_edit, self.kit_browse_button, self.open_kit_button))
        self.kit_message = MessageLabel()
        self.audit_restart_button = AuditRestartButton()  # offered when the workspace's audit log is refused
        self.audit_restart_button.failed.connect(lambda text: self.kit_message.show_message("error", text))
        self.kit_info = QLabel(self.tr("No kit open. Open one, or create one on the right."))
        self.kit_info.setWordWrap(True)
        self.kit_info.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.export_kit_button = QPushButton(self.tr("Save a cop&y of the kit…"))
        self.export_kit_button.setToolTip(self.tr("Copy the signed kit to removable media for the sites"))
        self.export_kit_button.setEnabled(False)
        self.export_kit_button.clicked.connect(self.export_kit)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.kit_message)
        lay.addWidget(self.audit_restart_button, 0, Qt.AlignLeft)
        lay.addWidget(self.kit_info)
        lay.addWidget(spin_row(self.export_kit_button))

    def _browse_kit(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open project kit"), self.kit_path_edit.text(),
                                              self.tr("Project kit (*.dckit)"))
        if path:
            self.open_kit(path)

    def open_kit(self, path: str | Path) -> bool:
        path = str(path).strip()
        self.kit_path_edit.setText(path)
        if not path:
            self.kit_message.show_message("error", self.tr("Choose a kit file (.dckit) first."))
            return False
        identity = self._identity()
        try:
            kit = Kit.load(path, expect_analyst=identity.card if identity else None)
        except DCError as exc:
            self.kit_message.show_message("error", str(exc))
            return False
        self.set_kit(kit, Path(path))
        return True

    def set_kit(self, kit: Kit, path: Path) -> None:
        self.kit, self.kit_path = kit, path
        self.kit_message.clear_message()
        s = kit.schema
        chosen = ", ".join(f"{k} = {v}" for k, v in kit.settings.items())
        left = self.tr(", {k} left out ({names})").format(
            k=len(s.ignored), names=esc(", ".join(c.name or "(no name)" for c in s.ignored))) \
            if s.ignored else ""
        self.kit_info.setText(self.tr(
            "<b>{name}</b> — {task}, method <b>{method}</b>{t}<br>{n} feature columns ({w} matrix columns){left}; "
            "label <i>{label}</i> with classes {classes}<br>project id <code>{pid}</code><br>signed by {analyst} "
            "(<code>{fp}</code>)<br>file: {path}").format(
            name=kit.name, task=kit.task, method=kit.method, t=f" ({chosen})" if chosen else "",
            n=len(s.features), w=s.width, left=left,
            label=s.label or "—", classes=", ".join(s.classes) or "—", pid=kit.project_id,
            analyst=kit.analyst.name, fp=kit.analyst.fingerprint, path=path))
        self.export_kit_button.setEnabled(True)
        self.kit_set.emit()

    def export_kit(self) -> None:
        if self.kit_path is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save a copy of the kit"),
                                              str(self.kit_path), self.tr("Project kit (*.dckit)"))
        if path and Path(path).resolve() != self.kit_path.resolve():
            try:
                shutil.copyfile(self.kit_path, path)
            except OSError as exc:
                self.kit_message.show_message("error", str(exc))
                return
            self.kit_message.show_message("ok", self.tr("Kit copied to {path}.").format(path=path))
