"""The way on from a refused audit log, in the app: a "Start a new audit log…" button beside the refusal.

Where a window shows an :class:`~core.errors.AuditLogRefused`, it offers this button with the identity it holds (so
nobody types a terminal command with ``YOUR.dcid``). A click asks for the reason in a small dialog, then runs
core's :func:`~core.formats.audit_restart.restart_audit` in a job: whatever is left of the old log is copied
beside it, the break is the new log's first entry, and no export is removed — the same as ``dcstudio audit new``.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.api import AuditLogRefused, Identity
from core.api.common import Restart, restart_audit

from .jobs import Job


def refusal_text(error: AuditLogRefused) -> str:
    """What the app says about a refused log: the problem, and the button as the way on (not a command)."""
    return (f"{error.problem}. To keep working, start a new audit log that records this break (the button below): "
            "whatever is left of the old log is copied beside it, and no export is removed.")


class RestartDialog(QDialog):
    """Asks why the log is restarted; says which workspace and which identity (filled in) sign the new log.
    Test hooks: ``reason_edit``, ``ok_button`` (enabled once a reason is typed)."""

    def __init__(self, workspace: Path, identity: Identity, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("Start a new audit log"))
        text = QLabel(self.tr(
            "A new audit log is started in <b>{ws}</b>, signed by <b>{name}</b> ({fp}). Whatever is left of the old "
            "log is copied beside it (audit.before-…), and the new log's first entry records why and what was known "
            "of the old one. No export is removed.").format(
            ws=html.escape(str(workspace)), name=html.escape(identity.name), fp=identity.card.fingerprint))
        text.setWordWrap(True)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText(self.tr("Why, in a few words (kept in the new log)"))
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.Ok)
        self.ok_button.setText(self.tr("Start the new log"))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.reason_edit.textChanged.connect(self._changed)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.reason_edit)
        layout.addWidget(self.buttons)
        self._changed("")

    def _changed(self, text: str) -> None:
        self.ok_button.setEnabled(bool(text.strip()))

    def reason(self) -> str:
        return self.reason_edit.text().strip()


class AuditRestartButton(QPushButton):
    """Hidden until :meth:`offer` is given a refused audit log and the identity the window holds.

    Signals: ``restarted(Restart)`` once the new log is written, ``failed(str)``. Test hooks: ``dialog`` (the
    open :class:`RestartDialog`), ``job``."""

    restarted = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(self.tr("Start a new audit log…"), parent)
        self.workspace: Path | None = None
        self.identity: Identity | None = None
        self.dialog: RestartDialog | None = None
        self.job: Job | None = None
        self.setVisible(False)
        self.clicked.connect(self.ask)

    def offer(self, error: BaseException | None, identity: Identity | None) -> bool:
        """Show the button when ``error`` refused an audit log and the window holds the workspace owner's identity;
        hide it otherwise. True when shown."""
        if isinstance(error, AuditLogRefused) and error.workspace is not None and identity is not None:
            self.workspace, self.identity = error.workspace, identity
            self.setToolTip(self.tr("Start a new, signed audit log in {ws} with the identity {name}").format(
                ws=error.workspace, name=identity.name))
            self.setVisible(True)
            return True
        self.setVisible(False)
        return False

    def ask(self) -> None:
        if self.workspace is None or self.identity is None:
            return
        self.dialog = RestartDialog(self.workspace, self.identity, self)
        self.dialog.accepted.connect(lambda: self.restart(self.dialog.reason()))
        self.dialog.open()

    def restart(self, reason: str) -> Job:
        workspace, identity = self.workspace, self.identity
        self.setEnabled(False)
        job = Job(lambda control: restart_audit(workspace, identity, reason), "starting a new audit log", self)

        def done(result: Restart) -> None:
            self.setVisible(False)
            self.restarted.emit(result)

        job.succeeded.connect(done)
        job.failed.connect(self.failed.emit)
        job.ended.connect(lambda: self.setEnabled(True))
        self.job = job
        job.start()
        return job


def restarted_text(result: Restart) -> str:
    """The sentence a window shows once the new log is written."""
    prev = result.start.get("previous") or {}
    kept = (f"the old log is kept as {prev['file']}" if prev.get("file") else "there was no old log to keep")
    more = "" if not result.reconfirm else " Still refused: " + " ".join(result.reconfirm)
    return f"A new audit log was started ({kept}); no export was removed. Try again.{more}"
