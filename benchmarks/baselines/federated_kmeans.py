"""Horizontal federated-clustering baselines of the DC-Clustering experiments (paper §5.3.1), simulated in
process: federated k-means (Kumar et al. 2020; multi-round) and k-FED (Dennis, Li & Smith 2021; one shot).

Both see only horizontally split sites that hold the same columns (in the paper, the sites of column 1:
institutions (1, 1) … (c, 1)) and cluster raw features, so every site must scale its features the same
way: callers pass rows already scaled with public statistics (e.g. the kit's ranges).

Federated k-means [X: reconstructed from the paper's description; Kumar et al. give no pseudo-code we
could check]: step 1, every site runs k-means++ on its rows and sends its k centroids and their counts; the
server runs a count-weighted k-means on the pooled centroids to get k global centroids. Each further
federation step: the server sends the global centroids, every site runs Lloyd iterations from them on its
rows and sends back the new centroids and counts, the server averages them index by index weighted by
count (an empty local cluster keeps the global centroid). 10 steps, as in the paper's experiments.

k-FED (:mod:`benchmarks.baselines.kfed`, its ``"margin"`` variant; algorithms.md §6.10): every site runs
k-means with k' clusters seeded as Awasthi & Sheffet (top-k' SVD projection, k-means there, keep points whose
nearest projected centre is ≤ 0.9 × the second nearest, seed with their means, then Lloyd); the server starts
from the first site's centres, adds the uploaded centre farthest from the set until it has k, then runs one
Lloyd step over all uploaded centres. A row takes the global cluster of its local centre.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from core.api import ConfigError


def _nearest(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    d = (X**2).sum(1)[:, None] - 2 * X @ C.T + (C**2).sum(1)[None, :]
    return d.argmin(axis=1)


def federated_kmeans(sites: list[np.ndarray], k: int, *, steps: int = 10, local_iters: int = 300, seed: int = 0
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Returns (global centroids (k, m), per-site labels). Every site needs ≥ k rows."""
    if any(len(X) < k for X in sites):
        raise ConfigError(f"every site needs at least k = {k} rows for federated k-means")
    rng = np.random.default_rng(seed)
    cents, counts = [], []
    for X in sites:
        km = KMeans(k, n_init=1, max_iter=local_iters, random_state=int(rng.integers(2**31))).fit(X)
        cents.append(km.cluster_centers_)
        counts.append(np.bincount(km.labels_, minlength=k))
    P, w = np.vstack(cents), np.concatenate(counts).astype(np.float64)
    keep = w > 0
    G = KMeans(k, n_init=1, random_state=int(rng.integers(2**31))).fit(P[keep], sample_weight=w[keep]).cluster_centers_
    for _ in range(steps - 1):
        num, den = np.zeros_like(G), np.zeros(k)
        for X in sites:
            C = G.copy()
            for _ in range(local_iters):
                lab = _nearest(X, C)
                new = np.array([X[lab == j].mean(axis=0) if (lab == j).any() else C[j] for j in range(k)])
                if np.allclose(new, C):
                    break
                C = new
            cnt = np.bincount(_nearest(X, C), minlength=k).astype(np.float64)
            num += C * cnt[:, None]
            den += cnt
        G = np.where(den[:, None] > 0, num / np.maximum(den, 1)[:, None], G)
    return G, [_nearest(X, G) for X in sites]
