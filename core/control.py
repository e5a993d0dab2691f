"""Progress reporting and cancellation for long jobs.

Core code never touches a widget: it calls ``control.step(fraction, text)`` and the GUI (or CLI) turns
that into a signal or a line. ``step`` raises :class:`~core.errors.Cancelled` once ``cancel()`` was called,
so a job stops at its next checkpoint and writes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .errors import Cancelled

ProgressCallback = Callable[[float, str], None]


class JobControl:
    """Progress sink plus cancel flag shared between a worker and whoever watches it."""

    def __init__(self, progress: ProgressCallback | None = None):
        self._progress = progress
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if cancellation was requested."""
        if self._cancel.is_set():
            raise Cancelled()

    def step(self, fraction: float, text: str = "") -> None:
        """Report progress in [0, 1] and honour a pending cancel."""
        self.check()
        if self._progress is not None:
            self._progress(min(max(float(fraction), 0.0), 1.0), text)

    def sub(self, start: float, stop: float) -> JobControl:
        """A view of this control that maps [0, 1] onto [start, stop] and shares the cancel flag."""
        child = JobControl(
            None if self._progress is None
            else (lambda f, t: self._progress(start + (stop - start) * f, t))
        )
        child._cancel = self._cancel
        return child


def ensure(control: JobControl | None) -> JobControl:
    """Return ``control`` or a silent one, so callees never test for None."""
    return control if control is not None else JobControl()
