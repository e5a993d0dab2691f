"""Pages 6–7: seal the bundle onto the chosen drive, then say what was written and what to do next."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFormLayout, QLabel, QLineEdit, QMessageBox, QPushButton

from core.api import safe_name
from core.api.common import SealedFile

from .. import settings as app_settings
from ..widgets import esc
from .common import Page, PathField, human_size
from .privacy_page import ENVELOPE_OVERHEAD


class ExportPage(Page):
    """Choose the folder (e.g. the USB drive) and file name; seal with progress and cancel.

    Test hooks: ``folder_field``, ``name_edit``, ``export_button``, ``jobs`` (JobPanel; ``jobs.cancel()``);
    ``sealed`` is the :class:`SealedFile` once written.
    """

    def __init__(self):
        super().__init__(self.tr("Export"),
                         self.tr("Write the encrypted bundle for the analyst, for example onto a USB drive."))
        self.sealed: SealedFile | None = None
        self._sealed_from = None  # the SiteExport the bundle was sealed from
        self._project: str | None = None
        self.folder_field = PathField("folders", "dir", title=self.tr("Where to write the bundle"))
        self.name_edit = QLineEdit()
        self.export_button = QPushButton(self.tr("&Export the bundle"))
        self.export_button.clicked.connect(self.export)
        self.target_label = QLabel()
        self.target_label.setWordWrap(True)
        form = QFormLayout()
        form.addRow(self.tr("&Folder or drive:"), self.folder_field)
        form.addRow(self.tr("File &name:"), self.name_edit)
        form.addRow("", self.target_label)
        self.ledger_label = QLabel()  # the ε ledger: the privacy spent on this project so far (core/privacy/ledger.py)
        self.ledger_label.setWordWrap(True)
        form.addRow("", self.ledger_label)
        form.addRow("", self.export_button)
        self.body.addLayout(form)
        note = QLabel(self.tr("Only the analyst's key can open this file, and it carries your signature. "
                              "Your private map and the order of your rows are saved in your workspace folder: "
                              "they are needed to use the results."))
        note.setWordWrap(True)
        self.body.addWidget(note)
        self.body.addStretch(1)
        self.folder_field.changed.connect(lambda _: self._update_target())
        self.name_edit.textChanged.connect(lambda _: self._update_target())

    def initializePage(self) -> None:
        s = self.state
        if s.kit.project_id != self._project:
            self._project = s.kit.project_id
            folders = app_settings.recent("bundle-folders")
            folder = folders[0] if folders else str(s.identity_path.parent)
            self.folder_field.set_path(folder, emit=False)
            self.name_edit.setText(f"{safe_name(s.identity.name)}-{safe_name(s.kit.name)}.dcbundle")
        exporter = s.exporter
        if self.sealed is not None and (exporter is None or exporter.export_ is not self._sealed_from):
            self.sealed = None  # the data or the settings changed since: export again
            self.message.clear_message()
        self._update_target()
        self._show_ledger(exporter)
        self.export_button.setDefault(True)

    def _show_ledger(self, exporter) -> None:
        """The privacy budget spent on this project from this workspace, and what this export adds."""
        try:
            lines = exporter.ledger_lines() if exporter is not None and exporter.export_ is not None else []
        except Exception:  # noqa: BLE001 - a damaged audit log is refused, with its sentence, when sealing
            lines = []
        text = "; ".join(lines)
        self.ledger_label.setText(esc(text[0].upper() + text[1:] + ".") if text else "")

    def target(self) -> Path | None:
        folder, name = self.folder_field.path(), self.name_edit.text().strip()
        if not folder or not name:
            return None
        if not name.endswith(".dcbundle"):
            name += ".dcbundle"
        return Path(folder) / name

    def _update_target(self) -> None:
        t = self.target()
        if t is None:
            self.target_label.setText(self.tr("Choose a folder and a file name."))
        elif t.exists():
            self.target_label.setText(self.tr("<span style='color:#92400e'>{file} already exists and will be "
                                              "replaced.</span>").format(file=esc(str(t), quote=False)))
        else:
            self.target_label.setText(self.tr("Will write {file}").format(file=esc(str(t), quote=False)))
        if t is not None:
            exporter = self.state.exporter if self.wizard() is not None else None
            ex = exporter.export_ if exporter is not None else None
            extra = []
            if ex is not None:
                extra.append(self.tr("about {size}").format(size=human_size(ex.shipped_bytes + ENVELOPE_OVERHEAD)))
            try:
                extra.append(self.tr("{free} free there").format(free=human_size(shutil.disk_usage(t.parent).free)))
            except OSError:
                pass
            if extra:
                self.target_label.setText(self.target_label.text() + " (" + "; ".join(extra) + ")")
        exporter = self.state.exporter if self.wizard() is not None else None
        unchecked = exporter is not None and bool(exporter.unit_warnings) and not exporter.units_checked
        if unchecked:  # sealing would refuse: the data page's units check is not ticked
            self.target_label.setText(self.tr("Go back to the data page and check the columns it names first."))
        assessment = exporter.assessment_ if exporter is not None else None
        unconsented = (assessment is not None and assessment.needs_consent
                       and exporter.privacy_risk_accepted is None)
        if unconsented and not unchecked:  # sealing would refuse: a poor check the kit counts, not accepted
            self.target_label.setText(self.tr(
                "Go back to the privacy page: {k} check(s) the kit counts are poor. Choose a lever there, or tick "
                "'I accept this risk' (recorded in your audit log).").format(k=len(assessment.poor)))
        self.export_button.setEnabled(t is not None and not self.busy and not unchecked and not unconsented)

    def export(self) -> None:
        if self.busy:
            return
        target = self.target()
        exporter = self.state.exporter
        if target is None or exporter is None:
            return
        if not target.parent.is_dir():
            self.message.show_message("error", self.tr("The folder {folder} does not exist (is the drive plugged "
                                                       "in?).").format(folder=target.parent))
            return
        if target.exists() and not self.confirm_replace(target):
            return
        self.sealed = None
        self.export_button.setEnabled(False)
        source = exporter.export_

        def ok(sealed: SealedFile) -> None:
            self.sealed, self._sealed_from = sealed, source
            app_settings.remember("bundle-folders", str(target.parent.resolve()))
            self.message.show_message("info", self.tr("You wrote {file}. Exporting again writes a new bundle; "
                                                      "send the analyst only one.").format(file=sealed.path.name))
            self.completeChanged.emit()
            if self.wizard() is not None and self.wizard().currentPage() is self:
                self.wizard().next()

        self.start(lambda control: exporter.seal(target, replace=True, control=control),  # the page said "replaced"
                   self.tr("Sealing the bundle…"), ok, on_end=self._update_target)

    def confirm_replace(self, target: Path) -> bool:
        """Ask before a bundle file is replaced (the CLI needs --force for the same)."""
        answer = QMessageBox.question(
            self, self.tr("Replace the bundle?"),
            self.tr("{file} already exists in {folder}. Replace it with a new bundle? Send the analyst only one "
                    "of them.").format(file=target.name, folder=target.parent),
            QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    def isComplete(self) -> bool:
        return self.sealed is not None and not self.busy


class DonePage(Page):
    """What was written and what to do next. Test hooks: ``file_label``, ``size_label``, ``digest_edit``,
    ``next_label``."""

    def __init__(self):
        super().__init__(self.tr("Done"), self.tr("The bundle is written."))
        self.file_label = QLabel()
        self.file_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.file_label.setWordWrap(True)
        self.size_label = QLabel()
        self.digest_edit = QLineEdit()
        self.digest_edit.setReadOnly(True)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.Monospace)
        self.digest_edit.setFont(mono)
        self.digest_edit.setMinimumWidth(520)
        self.workspace_label = QLabel()
        self.workspace_label.setWordWrap(True)
        self.workspace_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        form = QFormLayout()
        form.addRow(self.tr("File:"), self.file_label)
        form.addRow(self.tr("Size:"), self.size_label)
        form.addRow(self.tr("SHA-256:"), self.digest_edit)
        form.addRow(self.tr("Workspace:"), self.workspace_label)
        self.next_label = QLabel()
        self.next_label.setWordWrap(True)
        self.body.addLayout(form)
        self.body.addWidget(self.next_label)
        self.body.addStretch(1)
        self.copy_button = QPushButton(self.tr("&Copy the SHA-256"))
        self.copy_button.clicked.connect(self._copy)
        self.body.addWidget(self.copy_button, 0, Qt.AlignLeft)
        self.setFinalPage(True)

    def _copy(self) -> None:
        from PySide6.QtGui import QGuiApplication

        QGuiApplication.clipboard().setText(self.digest_edit.text())

    def initializePage(self) -> None:
        sealed = self.state.export_page.sealed
        if sealed is None:
            return
        name, folder = (esc(str(x), quote=False) for x in (sealed.path.name, sealed.path.parent))
        self.file_label.setText(f"<b>{name}</b><br>{folder}")
        self.size_label.setText(human_size(sealed.size))
        self.digest_edit.setText(sealed.digest)
        self.workspace_label.setText(esc(str(self.state.workspace()), quote=False))
        self.next_label.setText(self.tr(
            "<h3>What to do next</h3><ol>"
            "<li>Carry <b>{file}</b> to the analyst. If you like, read them the first characters of the SHA-256 "
            "to check it arrived intact.</li>"
            "<li><b>Keep the workspace folder</b> and your identity file: without them the analyst's answer cannot "
            "be used.</li>"
            "<li>Do not give the anchor file to the analyst.</li>"
            "<li>When the analyst's package (.dcpkg) arrives, open DC Studio and choose "
            "<i>Apply a package (results)</i>.</li></ol>").format(file=esc(sealed.path.name, quote=False)))
