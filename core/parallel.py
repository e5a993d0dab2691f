"""Threads for numpy work: one BLAS thread per Python thread, and row blocks shared by two threads.

numpy's products and copies release the GIL, so two Python threads over row blocks use both cores of an
ordinary laptop; each keeps BLAS to one thread so the two do not oversubscribe the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

_T = TypeVar("_T")
ROW_BLOCK = 16384  # rows per block: a block's temporaries (≤ 16384 × m × 8 bytes) stay below malloc's mmap
# threshold, so they are reused instead of being mapped and page-faulted afresh for every block


_controller: list = []  # [(modules imported when it scanned, the threadpoolctl controller)]


def one_blas_thread():
    """Context with one BLAS/OpenMP thread: for many small products and factorisations (an analyst's fit, a
    small model), where extra threads only add synchronisation and, on a busy machine, spin. The process's thread
    pools are found once (threadpoolctl scans every loaded library, ~10 ms) and again only after more modules
    were imported (a new library may have come with them)."""
    import sys

    from threadpoolctl import ThreadpoolController

    if not _controller or _controller[0][0] != len(sys.modules):
        _controller[:] = [(len(sys.modules), ThreadpoolController())]
    return _controller[0][1].limit(limits=1)


def for_row_blocks(n: int, work: Callable[[int, int], _T], *, block: int = ROW_BLOCK, threads: int = 2,
                   blas: bool = True) -> list[_T]:
    """[work(start, stop) for each block of ``block`` rows of range(n)], on ``threads`` threads, results in block
    order (so a sum of them never depends on the threads' timing). ``blas``: the work calls BLAS, which is then
    held to one thread per Python thread."""
    if n <= block:
        return [work(0, n)]
    with one_blas_thread() if blas else nullcontext(), ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda start: work(start, min(start + block, n)), range(0, n, block)))
