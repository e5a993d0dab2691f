"""The participant's export wizard: identity → kit → anchor → data → privacy → export → done.

The anchor page is skipped when the kit's method needs no anchor (``Method.needs_anchor``).

One decision per page; Back always works (leaving a page cancels what it was running). The wizard holds
the core objects the pages chose (``identity``, ``kit``, ``anchor``, ``exporter``) as read-only views over
its pages, so every page reads the same state.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget, QWizard

from core.api import Identity
from core.api.common import Kit
from core.api.participant import AnchorFile, ParticipantRound, needs_anchor

from ..screen import fit_window
from .anchor_page import AnchorPage
from .data_page import DataPage
from .export_page import DonePage, ExportPage
from .identity_page import IdentityPage
from .kit_page import KitPage
from .privacy_page import PrivacyPage
from .results import ResultsWindow

__all__ = ["ParticipantWizard", "ResultsWindow"]


class ParticipantWizard(QWizard):
    """Export this site's bundle for one project, unaided.

    Pages (attributes): ``identity_page``, ``kit_page``, ``anchor_page``, ``data_page``, ``privacy_page``,
    ``export_page``, ``done_page``; ``page_ids`` maps their names to QWizard ids.
    """

    PAGE_NAMES = ("identity", "kit", "anchor", "data", "privacy", "export", "done")

    def __init__(self, kit_path: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("DC Studio — export this site's bundle"))
        self.setWizardStyle(QWizard.ModernStyle)
        self.setOption(QWizard.NoBackButtonOnLastPage, False)
        self.setOption(QWizard.NoCancelButtonOnLastPage, True)
        self.setButtonText(QWizard.FinishButton, self.tr("&Close"))
        self.identity_page = IdentityPage()
        self.kit_page = KitPage()
        self.anchor_page = AnchorPage()
        self.data_page = DataPage()
        self.privacy_page = PrivacyPage()
        self.export_page = ExportPage()
        self.done_page = DonePage()
        pages = (self.identity_page, self.kit_page, self.anchor_page, self.data_page, self.privacy_page,
                 self.export_page, self.done_page)
        self.page_ids = {name: self.addPage(page) for name, page in zip(self.PAGE_NAMES, pages, strict=True)}
        if kit_path:
            self.kit_page.kit_field.set_path(kit_path, emit=False)
        self.rejected.connect(self._stop_jobs)
        fit_window(self, self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(960, 720)

    # -- the state the pages chose
    @property
    def identity(self) -> Identity | None:
        return self.identity_page.identity

    @property
    def identity_path(self) -> Path | None:
        return self.identity_page.identity_path

    def workspace(self) -> Path | None:
        return self.identity_page.workspace()

    @property
    def kit(self) -> Kit | None:
        return self.kit_page.kit

    @property
    def kit_path(self) -> Path | None:
        return self.kit_page.kit_path

    @property
    def anchor(self) -> AnchorFile | None:
        return self.anchor_page.anchor if self.needs_anchor() else None

    def needs_anchor(self) -> bool:
        """Whether the kit's method needs the participants' anchor file (the anchor page is skipped if not)."""
        return self.kit is None or needs_anchor(self.kit)

    def nextId(self) -> int:  # noqa: N802 - Qt's name
        following = super().nextId()
        if following == self.page_ids["anchor"] and not self.needs_anchor():
            return self.page_ids["data"]
        return following

    @property
    def exporter(self) -> ParticipantRound | None:
        return self.data_page.exporter

    def page_name(self) -> str:
        """The name of the current page (for tests and screenshots)."""
        for name, pid in self.page_ids.items():
            if pid == self.currentId():
                return name
        return ""

    def _stop_jobs(self) -> None:
        for page in (self.identity_page, self.anchor_page, self.data_page, self.privacy_page, self.export_page):
            if page.busy:
                page.jobs.cancel()
