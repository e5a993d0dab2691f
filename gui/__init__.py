"""DC Studio desktop app: thin PySide6 views over ``core`` objects; long jobs run in workers."""

from __future__ import annotations

import sys


def keep_none_alive() -> bool:
    """Work around a PySide6 6.12.0 bug on CPython < 3.12: every call of a Qt method that returns nothing
    (``label.setText``, ``timer.start``, ``app.processEvents`` …) drops one reference to ``None`` that it
    never took. ``None`` starts with a few thousand references, so after a few thousand such calls the
    interpreter aborts with "Fatal Python error: none_dealloc" (seen at the end of a GUI test run, and
    in ~20 000 ``setText`` calls). Python 3.12 made ``None`` immortal, which hides the bug; here we give
    ``None`` 2**40 extra references once, which is what immortality amounts to. ``None`` is a static
    object that is never freed, so this changes nothing else. Returns True if it was applied.
    """
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12) or getattr(keep_none_alive, "done", False):
        return False
    import ctypes

    ctypes.c_ssize_t.from_address(id(None)).value += 1 << 40
    keep_none_alive.done = True
    return True



keep_none_alive()  # before any Qt call, for every window of the app
