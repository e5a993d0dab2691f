"""Run a core job off the UI thread, with progress and cancel.

A core job is any callable ``fn(control: JobControl) -> result`` that reports through ``control.step`` and
stops at its next checkpoint once cancelled. :class:`Job` runs it on Qt's thread pool and turns its
progress, result and failure into signals delivered on the UI thread; the job itself never touches a
widget (napari's split, STYLE.md).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal

from core.api import Cancelled, DCError, JobControl


class Job(QObject):
    """One long action. Signals: ``progress(fraction, text)``, ``succeeded(result)``, ``failed(message)``,
    ``cancelled()``, and ``ended()`` after any of the last three."""

    progress = Signal(float, str)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    ended = Signal()

    def __init__(self, fn: Callable[[JobControl], Any], title: str = "", parent: QObject | None = None):
        super().__init__(parent)
        self.fn, self.title = fn, title
        self.control = JobControl(self._report)
        self.running = False
        self.result: Any = None
        self.error: str | None = None
        self.exception: BaseException | None = None  # what ``error`` says, for a window that offers a way on

    def _report(self, fraction: float, text: str) -> None:
        try:
            self.progress.emit(fraction, text)
        except RuntimeError:  # the job's window was closed (its Qt object deleted): nobody waits, so stop
            raise Cancelled() from None

    def start(self) -> Job:
        """Run on a daemon thread; signals reach receivers in the UI thread through Qt's queued delivery."""
        self.running = True
        self._thread = threading.Thread(target=self._run, name=f"job:{self.title}", daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job's thread ends (tests, shutdown). True if it ended."""
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def cancel(self) -> None:
        self.control.cancel()

    def _run(self) -> None:
        try:
            self.result = self.fn(self.control)
        except Cancelled:
            self._finish(self.cancelled.emit)
            return
        except DCError as exc:
            self.error, self.exception = str(exc), exc
            self._finish(lambda: self.failed.emit(self.error))
            return
        except Exception as exc:  # an unexpected error still reaches the user as one line
            traceback.print_exc(file=sys.stderr)
            self.error = f"unexpected error: {exc.__class__.__name__}: {exc}"
            self._finish(lambda: self.failed.emit(self.error))
            return
        self._finish(lambda: self.succeeded.emit(self.result))

    def _finish(self, emit: Callable[[], None]) -> None:
        self.running = False
        try:
            emit()
            self.ended.emit()
        except RuntimeError:  # the job's window was closed (its Qt object deleted): nobody to tell
            pass


class QtThreadJob(Job):
    """A :class:`Job` run on a QThread instead of a Python thread: for work that uses Qt objects which start
    timers (a QTextDocument laying out a long report starts its incremental-layout timer), which need the
    thread's Qt event dispatcher."""

    def start(self) -> Job:
        self.running = True
        self._qthread = _Runner(self._run)
        self._qthread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        thread = getattr(self, "_qthread", None)
        if thread is None:
            return True
        return thread.wait(-1 if timeout is None else int(timeout * 1000))


class _Runner(QThread):
    def __init__(self, fn: Callable[[], None]):
        super().__init__()
        self._fn = fn

    def run(self) -> None:  # noqa: D102 - QThread's
        self._fn()
