"""k-FED (Dennis, Li & Smith, ICML 2021): one-shot federated k-means; three variants (reference notes §4).

Every site clusters its rows into k′ clusters seeded as Awasthi & Sheffet and ships the k′ centres; the
server starts from the first site's centres, adds the shipped centre farthest from the set until it has k,
then runs Lloyd over all shipped centres. A row takes the global cluster of its local centre.

* ``"official"`` (``metastableB/kfed``): randomized SVD of the (uncentred) rows to k′ dimensions, k-means++
  seeding there, S_r = rows whose distance to every other seed is ≥ 3× their distance to seed r, Lloyd
  (scikit-learn, 300 iterations) seeded with the S_r means mapped back; server Lloyd to convergence.
  The paper suggests k′ ≤ √k.
* ``"mufc"`` (the ICLR 2023 re-implementation GOLD's baselines cite): the same sites, one server Lloyd step.
* ``"margin"`` (what DC Studio's DC-Clustering bench has used): SVD of the centred rows, full k-means in the
  projection, keep rows whose nearest projected centre is ≤ 0.9 × the second nearest, Lloyd from their
  means; one server Lloyd step.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from core.api import ConfigError

VARIANTS = ("official", "mufc", "margin")


def _nearest(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    d = (X**2).sum(1)[:, None] - 2 * X @ C.T + (C**2).sum(1)[None, :]
    return d.argmin(axis=1)


def _awasthi_sheffet(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The margin variant's local step; returns the k' centres."""
    if len(X) <= k:
        return X.copy()
    mu = X.mean(axis=0)
    _, _, Vt = np.linalg.svd(X - mu, full_matrices=False)
    V = Vt[:k].T
    Y = (X - mu) @ V
    km = KMeans(k, n_init=10, random_state=int(rng.integers(2**31))).fit(Y)
    D = ((Y[:, None, :] - km.cluster_centers_[None]) ** 2).sum(-1)
    order = np.sort(D, axis=1)
    near = D.argmin(axis=1)
    good = np.sqrt(order[:, 0]) <= 0.9 * np.sqrt(order[:, 1]) if k > 1 else np.ones(len(X), bool)
    seeds = np.array([X[good & (near == j)].mean(axis=0) if (good & (near == j)).any() else X[near == j].mean(axis=0)
                      if (near == j).any() else X[rng.integers(len(X))] for j in range(k)])
    return KMeans(k, init=seeds, n_init=1).fit(X).cluster_centers_


def _kmeanspp(Y: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    idx = [int(rng.integers(len(Y)))]
    d2 = ((Y - Y[idx[0]]) ** 2).sum(1)
    while len(idx) < k:
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(len(Y), 1.0 / len(Y))
        j = int(rng.choice(len(Y), p=p))
        if j in idx:
            if d2.sum() == 0:
                j = int(rng.choice(np.setdiff1d(np.arange(len(Y)), idx)))
            else:
                continue
        idx.append(j)
        d2 = np.minimum(d2, ((Y - Y[j]) ** 2).sum(1))
    return Y[idx]


def _official_local(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Awasthi–Sheffet as in the official code: projection, k-means++ seeds, the 1:3 rule, Lloyd."""
    from scipy.spatial.distance import cdist
    from sklearn.utils.extmath import randomized_svd

    if len(X) <= k:
        return X.copy()
    _, _, Vt = randomized_svd(X, n_components=k, random_state=int(rng.integers(2**31)))
    V = Vt.T[:, :k]
    Y = X @ V
    seeds = _kmeanspp(Y, k, rng)
    pd = cdist(seeds, Y)
    init = np.empty((k, k))
    for r in range(k):
        others = pd[np.arange(k) != r]
        Sr = np.all(others >= 3 * pd[r], axis=0)
        init[r] = Y[Sr].mean(axis=0) if Sr.any() else seeds[r]
    return KMeans(k, init=init @ V.T, n_init=1, random_state=int(rng.integers(2**31))).fit(X).cluster_centers_


def kfed(sites: list[np.ndarray], k: int, *, k_local: int | None = None, seed: int = 0, variant: str = "margin"
         ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Returns (global centres (k, m), per-site labels). ``k_local`` = k′ (default k)."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown k-FED variant '{variant}'; choose one of {', '.join(VARIANTS)}")
    kl = int(k_local or k)
    if kl * len(sites) < k:
        raise ConfigError("k-FED needs k' × number of sites ≥ k")
    rng = np.random.default_rng(seed)
    local_step = _awasthi_sheffet if variant == "margin" else _official_local
    local = [local_step(X, kl, rng) for X in sites]
    U = np.vstack(local)
    M = list(local[0][: min(k, len(local[0]))])
    while len(M) < k:
        dist = ((U[:, None, :] - np.array(M)[None]) ** 2).sum(-1).min(axis=1)
        M.append(U[int(dist.argmax())])
    M = np.array(M)
    if variant == "official":
        M = KMeans(k, init=M, n_init=1).fit(U).cluster_centers_
    else:
        assign = _nearest(U, M)  # one Lloyd iteration over the uploaded centres
        M = np.array([U[assign == j].mean(axis=0) if (assign == j).any() else M[j] for j in range(k)])
    owner = _nearest(U, M)
    labels, start = [], 0
    for X, C in zip(sites, local, strict=True):
        labels.append(owner[start:start + len(C)][_nearest(X, C)])
        start += len(C)
    return M, labels
