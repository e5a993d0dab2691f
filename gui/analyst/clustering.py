"""Data clustering page (kits whose task is clustering): where the rows fell, and why this many clusters.

Shows whatever the kit's clustering method describes for its result (``Method.views``: tables, a 2-D
projection by cluster, curves over k, cluster sizes), drawn by :class:`gui.views_panel.ViewsPanel`.

Test hooks: ``show_result(result)``, ``has_result``, ``views`` (the ViewsPanel), ``message``.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.api import DCError
from core.api.common import MethodResult, get_method

from ..views_panel import ViewsPanel
from ..widgets import MessageLabel
from .state import QtAnalystState


class DataClusteringPage(QWidget):
    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.result: MethodResult | None = None
        heading = QLabel(self.tr("<h2>Data clustering</h2><p>The rows of every site, clustered together. No row "
                                 "left its site: these are the reduced, aligned rows or the sites' summaries."
                                 "</p>"))
        heading.setWordWrap(True)
        self.message = MessageLabel()
        self.message.show_message("info", self.tr("Cluster the data on the Models page; the result appears here."))
        self.views = ViewsPanel()
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addWidget(self.message)
        lay.addWidget(self.views, 1)
        state.result_changed.connect(self._result_changed)

    @property
    def has_result(self) -> bool:
        return self.result is not None

    def _result_changed(self) -> None:
        run = self.state.run
        if run is not None and run.result.summary.get("task") == "clustering":
            self._show(run.result, run.views)
        elif run is None and self.result is not None:
            self.clear()

    def clear(self) -> None:
        self.result = None
        self.views.clear()

    def show_result(self, result: MethodResult) -> None:
        """Draw a clustering result with the views of its method (made from the result's settings)."""
        self._show(result, lambda: get_method(result.method, result.summary.get("settings")).views(result))

    def _show(self, result: MethodResult, views_of) -> None:
        self.clear()
        try:
            views = views_of()
        except DCError as exc:
            self.message.show_message("error", str(exc))
            return
        self.result = result
        self.message.clear_message()
        self.views.show_views(views)
