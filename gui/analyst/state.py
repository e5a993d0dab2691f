"""The analyst window's state: :class:`core.analyst_state.AnalystState` with one Qt signal per event.

Pages hold this object, read and set the plain state through it (nothing is forwarded: an attribute the plain
state lacks is an AttributeError), and connect to its signals; the plain state knows nothing about widgets.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, Signal

from core.api.analyst import AnalystState


class QtAnalystState(QObject, AnalystState):
    """Signals ``session_changed``, ``bundles_changed``, ``threshold_changed``, ``result_changed``, emitted
    whenever the plain state emits the event of the same name."""

    session_changed = Signal()
    bundles_changed = Signal()
    threshold_changed = Signal()
    result_changed = Signal()

    def __init__(self, parent: QObject | None = None):
        QObject.__init__(self, parent)
        AnalystState.__init__(self)
        self._signals = {"session": self.session_changed, "bundles": self.bundles_changed,
                         "threshold": self.threshold_changed, "result": self.result_changed}

    def _emit(self, event: str) -> None:
        super()._emit(event)
        self._signals[event].emit()


def training_threads() -> int:
    """Threads for torch's kernels in the desktop app: every core but one, which stays free for the window.

    With as many kernel threads as cores, torch's spinning worker threads and the UI thread fight for the
    cores; on a busy two-core machine that made one training run more than ten times slower and froze
    the window for tenths of a second (``python docs/tools/stall.py --torch-threads 2``).
    """
    return max(1, (os.cpu_count() or 2) - 1)
