"""The Qt face of :class:`core.analyst_state.AnalystState`: one signal per event, everything else delegated.

Pages hold this adapter, read and set the plain state through it, and connect to its signals; the state
itself knows nothing about widgets.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, Signal

from core.analyst_state import AnalystState as StateModel


class AnalystState(QObject):
    """Signals ``session_changed``, ``bundles_changed``, ``threshold_changed``, ``result_changed``; attribute
    reads and method calls go to :attr:`model`."""

    session_changed = Signal()
    bundles_changed = Signal()
    threshold_changed = Signal()
    result_changed = Signal()

    def __init__(self, parent: QObject | None = None, model: StateModel | None = None):
        super().__init__(parent)
        self.model = model or StateModel()
        for event, signal in (("session", self.session_changed), ("bundles", self.bundles_changed),
                              ("threshold", self.threshold_changed), ("result", self.result_changed)):
            self.model.connect(event, signal.emit)

    def __getattr__(self, name: str):
        return getattr(self.__dict__.get("model") or super().__getattribute__("model"), name)


def training_threads() -> int:
    """Threads for torch's kernels in the desktop app: every core but one, which stays free for the window.

    With as many kernel threads as cores, torch's spinning worker threads and the UI thread fight for the
    cores; on a busy two-core machine that made one training run more than ten times slower and froze
    the window for tenths of a second (``python docs/tools/stall.py --torch-threads 2``).
    """
    return max(1, (os.cpu_count() or 2) - 1)
