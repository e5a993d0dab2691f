"""Run a core job off the UI thread, with progress and cancel.

A core job is any callable ``fn(control: JobControl) -> result`` that reports through ``control.step`` and
stops at its next checkpoint once cancelled. :class:`Job` runs it on Qt's thread pool and turns its
progress, result and failure into signals delivered on the UI thread (:func:`gui.ui_post.post`: the worker never
emits on the job's own QObject, which its window may be deleting); the job itself never touches a widget (napari's
split, STYLE.md).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal

from core.api import Cancelled, DCError, JobControl

from .ui_post import alive, ensure_bridge, post


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
        ensure_bridge()

    def _report(self, fraction: float, text: str) -> None:
        if not alive(self):  # the job's window was closed (its Qt object deleted): nobody waits, so stop
            raise Cancelled()
        post(self, lambda job: job.progress.emit(fraction, text))

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
            self._finish(lambda job: job.cancelled.emit())
            return
        except DCError as exc:
            self.error, self.exception = str(exc), exc
            self._finish(lambda job: job.failed.emit(job.error))
            return
        except Exception as exc:  # an unexpected error still reaches the user as one line
            traceback.print_exc(file=sys.stderr)
            self.error = f"unexpected error: {exc.__class__.__name__}: {exc}"
            self._finish(lambda job: job.failed.emit(job.error))
            return
        self._finish(lambda job: job.succeeded.emit(job.result))

    def _finish(self, emit: Callable[[Job], None]) -> None:
        """The outcome's signal, then ``ended``, on the UI thread (nothing, if the job's window is gone by then)."""
        self.running = False

        def tell(job: Job) -> None:
            emit(job)
            job.ended.emit()

        post(self, tell)


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
