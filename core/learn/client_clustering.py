"""Clustering clients by their label distributions (DC-CFL, algorithms.md §2.1 steps 2–4).

pᵢ(k) = nᵢₖ / nᵢ;  Dᵢⱼ = ½ Σₖ |pᵢ(k) − pⱼ(k)| ∈ [0, 1] (total variation);
complete-linkage agglomerative clustering cut at height t, so every cluster's diameter is ≤ t.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError

T_GRID = tuple(round(0.1 * i, 1) for i in range(1, 10))


def label_histograms(counts: np.ndarray) -> np.ndarray:
    """Row-normalise per-site class counts (c, K) into distributions."""
    counts = np.asarray(counts, dtype=np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ConfigError("a site has no labelled rows")
    return counts / totals


def tv_distances(P: np.ndarray, block: int = 256) -> np.ndarray:
    """Pairwise total-variation distances between the rows of P, a block of rows at a time (the (S, S, K)
    differences of every pair at once would be 5.6 GB at 10,000 sites)."""
    P = np.asarray(P, dtype=np.float64)
    D = np.empty((P.shape[0], P.shape[0]))
    for lo in range(0, P.shape[0], block):
        D[lo:lo + block] = 0.5 * np.abs(P[lo:lo + block, None, :] - P[None, :, :]).sum(axis=2)
    return D


def linkage_matrix(D: np.ndarray, method: str = "complete") -> np.ndarray:
    """scipy linkage of a square distance matrix (empty for fewer than two sites)."""
    from scipy.cluster.hierarchy import linkage  # imported here: sites import this module and never need it
    from scipy.spatial.distance import squareform

    if D.shape[0] < 2:
        return np.zeros((0, 4))
    return linkage(squareform(D, checks=False), method=method)


def cut_tree(Z: np.ndarray, n_sites: int, t: float) -> np.ndarray:
    """Cluster labels 0..L−1 for a cut at height t (merges of height ≤ t are kept)."""
    from scipy.cluster.hierarchy import fcluster

    if n_sites < 2:
        return np.zeros(n_sites, dtype=np.int64)
    labels = fcluster(Z, t=t, criterion="distance")
    # relabel in order of first appearance so labels are stable and start at 0
    _, first = np.unique(labels, return_index=True)
    order = {lab: i for i, lab in enumerate(labels[np.sort(first)])}
    return np.array([order[lab] for lab in labels], dtype=np.int64)


class LabelDistributionClustering:
    """TV distance + complete linkage + cut at t.

    Attributes
    ----------
    histograms_ : (c, K) label distributions; distances_ : (c, c) TV matrix;
    linkage_ : scipy linkage matrix; labels_ : cluster of each site at ``t``.
    """

    def __init__(self, t: float = 0.2, method: str = "complete"):
        self.t = t
        self.method = method

    def fit(self, counts: np.ndarray) -> LabelDistributionClustering:
        self.histograms_ = label_histograms(counts)
        self.distances_ = tv_distances(self.histograms_)
        self.linkage_ = linkage_matrix(self.distances_, self.method)
        self.labels_ = self.cut(self.t)
        return self

    def cut(self, t: float) -> np.ndarray:
        return cut_tree(self.linkage_, len(self.histograms_), t)
