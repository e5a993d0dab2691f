"""The assignment of least total cost (the linear sum assignment problem), in numpy: Kuhn's (1955) Hungarian method
in its shortest-augmenting-path form (Jonker & Volgenant 1987; the O(n²m) version of e.g. Burkard, Dell'Amico &
Martello, "Assignment Problems", 2009, §4.4), one row added per round along the cheapest path of reduced costs
c_ij − u_i − v_j, the dual potentials u, v kept feasible (c_ij − u_i − v_j ≥ 0, zero on the matching).

The ICA attack matches a few dozen components with it; scipy's ``linear_sum_assignment`` gives the same matching
(``tests/privacy/test_assignment.py``) but importing ``scipy.optimize`` costs an export ~0.4 s of CPU.
"""

from __future__ import annotations

import numpy as np


def min_cost_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of a matching of least total ``cost`` (an n × m matrix of finite numbers) that matches
    min(n, m) pairs, rows in increasing order (as ``scipy.optimize.linear_sum_assignment``)."""
    C = np.asarray(cost, np.float64)
    if C.ndim != 2:
        raise ValueError("the cost of an assignment is a matrix")
    if not np.all(np.isfinite(C)):
        raise ValueError("the cost of an assignment must be finite")
    flipped = C.shape[0] > C.shape[1]
    if flipped:
        C = C.T
    n, m = C.shape
    u, v = np.zeros(n + 1), np.zeros(m + 1)  # potentials; index 0 is the free start of each search
    match = np.zeros(m + 1, np.int64)  # match[j]: the row (1-based) matched to column j, 0 when none
    way = np.zeros(m + 1, np.int64)  # the column before j on the cheapest path found
    for i in range(1, n + 1):
        match[0], j0 = i, 0
        least = np.full(m + 1, np.inf)  # the cheapest reduced cost of a path reaching each column
        used = np.zeros(m + 1, bool)
        while True:
            used[j0] = True
            row = match[j0]
            reduced = C[row - 1] - u[row] - v[1:]
            free = ~used[1:]
            closer = free & (reduced < least[1:])
            least[1:][closer] = reduced[closer]
            way[1:][closer] = j0
            reach = np.where(free, least[1:], np.inf)
            j1 = int(np.argmin(reach)) + 1
            delta = reach[j1 - 1]
            seen = np.flatnonzero(used)
            u[match[seen]] += delta
            v[seen] -= delta
            least[1:][free] -= delta
            j0 = j1
            if match[j0] == 0:
                break
        while j0:  # augment along the path back to the start
            j1 = way[j0]
            match[j0] = match[j1]
            j0 = j1
    cols = np.flatnonzero(match[1:]) if n else np.zeros(0, np.int64)
    rows = match[1:][cols] - 1
    if flipped:
        rows, cols = cols, rows
    order = np.argsort(rows, kind="stable")
    return rows[order].astype(np.int64), cols[order].astype(np.int64)
