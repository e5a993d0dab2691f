"""Hand work from a worker thread to the UI thread without the worker touching a Qt object that may be deleted.

A worker thread that emits a signal of a window's QObject races the UI thread, which may be deleting that object
(its window closed, a test ended): emitting on a half-destroyed QObject crashed the app (a segmentation fault in
the screens check's privacy page). :func:`post` instead emits on one bridge object that lives for the whole process
in the UI thread; Qt queues the call to the UI thread, and there — where nothing else can delete it meanwhile — the
target is looked up and called only if its Qt object still exists.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Signal


class _Bridge(QObject):
    posted = Signal(object, object)

    def __init__(self):
        super().__init__()
        self.posted.connect(self._deliver)  # a queued connection whenever the emitter is another thread

    def _deliver(self, target: QObject, call: Callable[[Any], None]) -> None:
        if shiboken6.isValid(target):
            call(target)


_bridge: list[_Bridge] = []
_lock = threading.Lock()


def ensure_bridge() -> None:
    """Create the bridge in the UI thread (call from it before any worker may post: every Job does)."""
    with _lock:
        if not _bridge:
            bridge = _Bridge()
            app = QCoreApplication.instance()
            if app is not None and bridge.thread() is not app.thread():
                bridge.moveToThread(app.thread())
            _bridge.append(bridge)


def post(target: QObject, call: Callable[[Any], None]) -> None:
    """Run ``call(target)`` on the UI thread, unless ``target``'s Qt object has been deleted by then."""
    if not _bridge:
        ensure_bridge()
    _bridge[0].posted.emit(target, call)


def alive(target: QObject) -> bool:
    """Whether ``target``'s Qt object still exists (a worker's hint to stop: the answer may change at once)."""
    return shiboken6.isValid(target)
