"""The results window's second section: the analyst's package, described (who made it, when, for which
project) and refused early when it cannot be applied here; the analyst's fingerprint when the workspace's pin
must be confirmed again."""

from __future__ import annotations

import contextlib
from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QWidget

from core.api import DCError, Identity
from core.api.common import Kit, inspect

from ..widgets import esc
from .common import PathField


class PackageBox(QGroupBox):
    """"2. The analyst's package". ``problem`` is why the chosen package cannot be applied here (None: it can)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(self.tr("2. The analyst's package"), parent)
        self.problem: str | None = None
        self.package_field = PathField("packages", "open", self.tr("DC Studio package (*.dcpkg)"),
                                       self.tr("Open the analyst's package"))
        self.package_label = QLabel()
        self.package_label.setWordWrap(True)
        f = QFormLayout(self)
        f.addRow(self.tr("Pac&kage:"), self.package_field)
        f.addRow("", self.package_label)
        self.older_check = QCheckBox(self.tr("Apply an older package on purpose"))
        self.older_check.setToolTip(self.tr("A package from an earlier analyst run than one already applied to the "
                                            "same bundle is refused unless you tick this (going back on purpose)."))
        f.addRow("", self.older_check)
        # shown only when the workspace's analyst pin cannot be trusted (an earlier version's, or edited): the
        # fingerprint the analyst reads out by phone confirms the key again (core: apply's analyst_fingerprint)
        self.fingerprint_edit = QLineEdit()
        self.fingerprint_edit.setPlaceholderText(self.tr("as the analyst reads it to you by phone"))
        self.fingerprint_label = QLabel(self.tr("Analyst's &fingerprint:"))
        self.fingerprint_label.setBuddy(self.fingerprint_edit)
        f.addRow(self.fingerprint_label, self.fingerprint_edit)
        self.fingerprint_label.setVisible(False)
        self.fingerprint_edit.setVisible(False)

    def ask_fingerprint(self) -> None:
        """The workspace's pin cannot be trusted: ask for the fingerprint, as the first export did."""
        self.fingerprint_label.setVisible(True)
        self.fingerprint_edit.setVisible(True)
        self.fingerprint_edit.setFocus()

    def fingerprint(self) -> str | None:
        """The fingerprint typed in, when it was asked for."""
        return None if self.fingerprint_edit.isHidden() else (self.fingerprint_edit.text().strip() or None)

    def describe(self, identity: Identity | None, workspace: str) -> None:
        """Say who made the package and for which project; refuse early (``problem`` set, the reason shown) a file
        that is no package, is addressed to another site, or answers a bundle this workspace never exported."""
        path = self.package_field.path()
        self.package_label.setText("")
        self.problem = None
        if not path:
            return
        try:
            binding = inspect(path)
        except DCError as exc:
            self._refuse(str(exc))
            return
        if binding.kind != "package":
            self._refuse(self.tr("This is a {kind}, not a package from the analyst.").format(kind=binding.kind))
            return
        project, known = binding.project_id[:8] + "…", None
        ws = workspace
        if ws:
            kit_path = Path(ws) / "projects" / binding.project_id / "kit.dckit"
            known = kit_path.exists()
            if known:
                with contextlib.suppress(DCError):
                    project = Kit.load(kit_path).name
        text = self.tr("From the analyst <b>{name}</b> ({fp}), made {created}, for the project <b>{project}</b>.")\
            .format(name=esc(binding.sender.name), fp=binding.sender.fingerprint,
                    created=binding.created[:10], project=esc(project))
        self.package_label.setText(text)
        if identity is not None and binding.recipient != identity.card.key_id:
            self._refuse(self.tr("It is addressed to another site, not to {name}: choose the package "
                                 "the analyst made for {name}.").format(name=identity.name), text)
        elif known is False:
            self._refuse(self.tr("It is for a project this workspace has never exported to: choose the "
                                 "workspace your bundle was exported from, or this project's package."), text)
        elif known and binding.in_reply_to and not (
                Path(ws) / "projects" / binding.project_id / "exports" / binding.in_reply_to[:16]).is_dir():
            self._refuse(self.tr("It answers a bundle this workspace did not export: choose the "
                                 "workspace that exported it."), text)
        else:
            self.package_field.remember()

    def _refuse(self, reason: str, described: str = "") -> None:
        self.problem = reason
        self.package_label.setText((described + "<br>" if described else "")
                                   + f"<span style='color:#b91c1c'>{esc(reason)}</span>")
