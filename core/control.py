"""Progress reporting and cancellation for long jobs.

Core code never touches a widget: it calls ``control.step(fraction, text)`` and the GUI (or CLI) turns
that into a signal or a line. ``control.phase(text)`` names what a part of the job is doing ("choosing the
threshold: 9 candidate models"); the text of every later step of that control and of its ``sub`` views is
shown after it ("choosing the threshold: 9 candidate models: epoch 8 of 50"). The fraction a watcher sees
never goes backwards. ``step`` raises :class:`~core.errors.Cancelled` once ``cancel()`` was called,
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
        self._phase = ""
        self._parent_phase: Callable[[], str] = lambda: ""
        self._high = 0.0  # the highest fraction reported so far (the bar is monotone)

    def phase(self, text: str) -> None:
        """Name the phase that the following steps belong to (shown before their own text)."""
        self._phase = text

    def describe(self, text: str = "") -> str:
        """``text`` preceded by the phases of this control and its parents, joined by ": "."""
        parts = [p for p in (self._parent_phase(), self._phase, text) if p]
        return ": ".join(parts)

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
            self._high = max(self._high, min(max(float(fraction), 0.0), 1.0))
            self._progress(self._high, self.describe(text))

    def sub(self, start: float, stop: float) -> JobControl:
        """A view of this control that maps [0, 1] onto [start, stop] and shares the cancel flag."""
        child = JobControl(
            None if self._progress is None
            else (lambda f, t: self._forward(start + (stop - start) * f, t))
        )
        child._cancel = self._cancel
        child._parent_phase = self.describe
        return child

    def _forward(self, fraction: float, text: str) -> None:
        """A child's report: already described, only made monotone here."""
        self._high = max(self._high, fraction)
        self._progress(self._high, text)


def ensure(control: JobControl | None) -> JobControl:
    """Return ``control`` or a silent one, so callees never test for None."""
    return control if control is not None else JobControl()
