"""Freed memory kept for reuse while a pass over a large file allocates the same large arrays block after block.

glibc's malloc serves every request above its mmap threshold (at most 32 MiB) with fresh pages from the kernel and
returns them when freed, so each block of a streamed pass (its text, parsed cells, matrix, the model's intermediate
arrays, the result cells: tens of MiB each) pays again for the kernel mapping and zeroing every page it touches —
on 1,000,000 rows × 50 columns about 570,000 page faults and 2–3 s of system CPU in ``participant apply``.
:func:`reuse_freed_memory` makes malloc serve every request from its heap and keep what is freed there
(``mallopt``: M_MMAP_MAX = 0, a trim threshold of 1 GiB, a top pad of 64 MiB), so the next block reuses pages
already mapped. On leaving, the outermost use returns the heap's free memory to the kernel (``malloc_trim``) and sets
what glibc's own dynamic threshold reaches after a large array is freed (mmap above 32 MiB, trim above 64 MiB):
any ``mallopt`` call stops that dynamic adjustment for the rest of the process. Peak memory is the heap's high mark,
a little above the largest block's. With another C library it does nothing.

Within, numpy also stops asking the kernel for transparent huge pages for its large arrays
(``madvise(MADV_HUGEPAGE)``): on a reused heap the kernel then zeroes and compacts 2 MiB pages again and again, which
cost ~0.6 s of system CPU in the alignment map's product alone on 1,000,000 rows (``NUMPY_MADVISE_HUGEPAGE=0`` does
the same for a whole process).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -2, -3, -4  # glibc's mallopt parameters
KEPT = {M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 64 << 20}
AFTER = {M_MMAP_MAX: 65536, M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20, M_TOP_PAD: 128 << 10}

_lock = threading.Lock()
_depth = [0]
_calls: list = []  # [(mallopt, malloc_trim) or None], found once
_huge: list = []  # numpy's huge-page setting before the outermost use
_huge_depth = [0]  # uses of reuse_freed_memory and without_huge_pages now running


def _numpy_huge_pages(on: bool) -> bool | None:
    """Set whether numpy madvises huge pages for large arrays; the previous setting (None if numpy cannot say)."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # pragma: no cover - a numpy without the switch
        return None
    return bool(_set_madvise_hugepage(on))


def _glibc():
    """glibc's mallopt and malloc_trim, or None (not Linux, another C library, or none found)."""
    if not _calls:
        found = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                found = libc.mallopt, libc.malloc_trim
                found[0].argtypes, found[0].restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
                found[1].argtypes, found[1].restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):
                found = None
        _calls.append(found)
    return _calls[0]


@contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Within: freed memory stays in malloc's heap for the next allocation, and numpy asks for no huge pages
    (:func:`without_huge_pages`; module doc); nested uses are one."""
    with without_huge_pages():
        with _lock:
            calls = _glibc()
            _depth[0] += 1
            if _depth[0] == 1 and calls is not None:
                for param, value in KEPT.items():
                    calls[0](param, value)
        try:
            yield
        finally:
            with _lock:
                _depth[0] -= 1
                if _depth[0] == 0 and calls is not None:
                    for param, value in AFTER.items():
                        calls[0](param, value)
                    calls[1](0)


def _pages_off() -> None:
    """(Holding _lock.) numpy asks for no huge pages; the setting before the outermost use is kept."""
    _huge_depth[0] += 1
    if _huge_depth[0] == 1:
        _huge[:] = [_numpy_huge_pages(False)]


def _pages_back() -> None:
    """(Holding _lock.) The outermost use ends: numpy's setting from before is restored."""
    _huge_depth[0] -= 1
    if _huge_depth[0] == 0 and _huge and _huge[0] is not None:
        _numpy_huge_pages(_huge[0])


@contextmanager
def without_huge_pages() -> Iterator[None]:
    """Within: numpy asks the kernel for no transparent huge pages for its large arrays, and malloc is left as it
    is. A site's export allocates a few arrays of hundreds of MB once each (pandas' columns, the row-major matrix,
    the reduced rows); with ``madvise(MADV_HUGEPAGE)`` on them the kernel compacts memory to find 2 MiB pages as
    they are first touched, which on a busy machine cost the 1,000,000 × 50 export 1–2 s of system CPU (issue #36,
    docs/results/export-and-io.md). Nested uses, and uses inside :func:`reuse_freed_memory`, are one."""
    with _lock:
        _pages_off()
    try:
        yield
    finally:
        with _lock:
            _pages_back()
