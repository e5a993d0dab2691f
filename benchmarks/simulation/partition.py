"""Label-skew partitions of one labelled data set over simulated clients.

After Li et al., "Federated Learning on Non-IID Data Silos: An Experimental Study" (ICDE 2022), as used
by the DC-CFL experiments (paper §5.1; algorithms.md §2.2b). Every function returns row indices into the
full data set, one sorted int64 array per kept client, and uses each row at most once.
"""

from __future__ import annotations

import math

import numpy as np

from core.api import ConfigError

RandomLike = np.random.Generator | int | None


def _classes(y: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ConfigError("labels must be a non-empty 1-D array")
    classes = np.unique(y)
    return classes, [np.flatnonzero(y == c) for c in classes]


def class_based_split(y: np.ndarray, n_clients: int, k: int, rng: RandomLike,
                      min_samples: int = 5) -> list[np.ndarray]:
    """Pathological label skew "C = k" (Li et al. 2022 §IV-B; DC-CFL reference code).

    1. Every client draws ``k`` distinct classes uniformly at random (no forced coverage of classes).
    2. The rows of each class are shuffled and split as evenly as possible (``np.array_split``) among
       the clients that drew that class.
    3. Clients that end up with fewer than ``k`` distinct classes (a class had fewer rows than takers)
       or fewer than ``min_samples`` rows are dropped.

    Rows of a class that no client drew are not used, and neither are the rows of dropped clients; every
    other row goes to exactly one client. The number of returned clients can therefore be below
    ``n_clients``; callers should report it.
    """
    rng = np.random.default_rng(rng)
    classes, rows = _classes(y)
    K = len(classes)
    if not 1 <= k <= K:
        raise ConfigError(f"each client must hold between 1 and {K} classes, got k = {k}")
    if n_clients < 1:
        raise ConfigError(f"the number of clients must be positive, got {n_clients}")
    drawn = [rng.choice(K, size=k, replace=False) for _ in range(n_clients)]
    takers: list[list[int]] = [[] for _ in range(K)]
    for i, cls in enumerate(drawn):
        for c in cls:
            takers[c].append(i)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in range(K):
        if not takers[c]:
            continue
        shuffled = rng.permutation(rows[c])
        for i, chunk in zip(takers[c], np.array_split(shuffled, len(takers[c])), strict=True):
            if chunk.size:
                parts[i].append(chunk)
    out = []
    for chunks in parts:
        if len(chunks) == k:
            idx = np.sort(np.concatenate(chunks))
            if idx.size >= min_samples:
                out.append(idx.astype(np.int64))
    return out


def dirichlet_split(y: np.ndarray, n_clients: int, alpha: float, rng: RandomLike,
                    min_samples: int = 5, client_size: int | None = None) -> list[np.ndarray]:
    """Label skew "Dir(α)" with per-client label proportions (algorithms.md §2.2b, the terminating variant).

    Client i draws ``p_i ~ Dir(α·1_K)`` and wants ``client_size`` rows (default ``⌊N / n_clients⌋``),
    with class counts ``~ Multinomial(client_size, p_i)``. Clients are served in order, drawing rows
    without replacement from per-class pools. When a class pool runs dry, the shortfall is redrawn from
    the classes that still have rows, in proportion to ``p_i`` restricted to them (or to the remaining
    pool sizes when ``p_i`` puts no mass there), so every client gets its full size while rows last and
    the loop always terminates. Late clients can thus deviate from ``p_i`` once popular classes are
    used up. Clients with fewer than ``min_samples`` rows are dropped; rows never drawn stay unused.

    This differs from Li et al.'s sample-level variant (per class, proportions over clients), which at
    α = 0.1 with 100 clients leaves many clients (near-)empty; see algorithms.md §2.2b.
    """
    rng = np.random.default_rng(rng)
    classes, rows = _classes(y)
    K = len(classes)
    if not alpha > 0:
        raise ConfigError(f"the Dirichlet concentration must be positive, got {alpha}")
    if n_clients < 1:
        raise ConfigError(f"the number of clients must be positive, got {n_clients}")
    N = sum(r.size for r in rows)
    size = N // n_clients if client_size is None else int(client_size)
    if size < 1:
        raise ConfigError(f"{N} rows cannot give {n_clients} clients at least one row each")
    pools = [rng.permutation(r) for r in rows]
    used = np.zeros(K, dtype=np.int64)
    left = np.array([r.size for r in rows], dtype=np.int64)
    out = []
    for _ in range(n_clients):
        p = np.nan_to_num(rng.dirichlet(np.full(K, float(alpha))))
        if p.sum() <= 0:
            p = np.full(K, 1.0 / K)
        take = np.minimum(rng.multinomial(size, p / p.sum()), left)
        short = min(size, int(left.sum())) - int(take.sum())
        while short > 0:
            avail = left - take
            w = p * (avail > 0)
            if w.sum() <= 1e-12:
                w = avail.astype(float)
            extra = np.minimum(rng.multinomial(short, w / w.sum()), avail)
            take += extra
            short -= int(extra.sum())
        idx = [pools[c][used[c]: used[c] + take[c]] for c in range(K)]
        used += take
        left -= take
        idx = np.sort(np.concatenate(idx)).astype(np.int64)
        if idx.size >= min_samples:
            out.append(idx)
    return out


def train_test_split_clients(parts: list[np.ndarray], rng: RandomLike,
                             test_ratio: float = 0.2) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split each client's rows into (train, test), not stratified, as in the DC-CFL reference code.

    A client with ``n`` rows gets ``min(⌈test_ratio·n⌉, n − 1)`` test rows (as scikit-learn's
    ``train_test_split`` rounds up), so at least one row always remains for training.
    """
    if not 0 <= test_ratio < 1:
        raise ConfigError(f"the test ratio must lie in [0, 1), got {test_ratio}")
    rng = np.random.default_rng(rng)
    out = []
    for idx in parts:
        idx = np.asarray(idx)
        perm = rng.permutation(idx)
        n_test = max(0, min(math.ceil(test_ratio * idx.size), idx.size - 1))
        out.append((np.sort(perm[n_test:]), np.sort(perm[:n_test])))
    return out
