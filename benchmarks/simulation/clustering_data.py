"""Data for the DC-Clustering experiments (Kawamata, Kamijo et al. §5): synthetic blobs/circles and the grid.

Synthetic data (§5.2.1): two *major* features carry three clusters of ``per_cluster`` points (Blobs for
k-means, concentric Circles for spectral clustering); four *minor* features are Gaussian noise N(0, S),
S = 0.1 on the diagonal and 0.01 off it. Column block 1 holds major 1 and minors 1–2, block 2 holds major 2
and minors 3–4 (columns ``[major1, minor1, minor2, major2, minor3, minor4]``). Rows go to c = 2 row groups:
IID (at random, half each) or non-IID (group 1 holds cluster 0 and half of cluster 1, group 2 the other
half of cluster 1 and cluster 2: each group sees two clusters, one of which the other never sees).

Details the paper does not give and that are chosen here [X]: the blob centres (−5, −5), (0, 5), (5, −5)
with unit standard deviation; three circles of radii 1, 2, 3 (× ``scale``) with Gaussian radial noise of
0.1 × ``scale`` (scikit-learn's ``make_circles`` draws only two).
"""

from __future__ import annotations

import numpy as np

BLOB_CENTERS = ((-5.0, -5.0), (0.0, 5.0), (5.0, -5.0))
SYNTH_BLOCKS = {"block1": [0, 1, 2], "block2": [3, 4, 5]}  # column positions in the synthetic matrix


def _minor(n: int, rng: np.random.Generator) -> np.ndarray:
    S = np.full((4, 4), 0.01) + np.eye(4) * 0.09
    return rng.multivariate_normal(np.zeros(4), S, size=n)


def _groups(y: np.ndarray, non_iid: bool, rng: np.random.Generator) -> np.ndarray:
    g = np.empty(len(y), dtype=np.int64)
    if non_iid:
        g[y == 0], g[y == 2] = 0, 1
        mid = rng.permutation(np.flatnonzero(y == 1))
        g[mid[: len(mid) // 2]], g[mid[len(mid) // 2:]] = 0, 1
    else:
        perm = rng.permutation(len(y))
        g[perm[: len(y) // 2]], g[perm[len(y) // 2:]] = 0, 1
    return g


def _assemble(major: np.ndarray, y: np.ndarray, non_iid: bool, rng: np.random.Generator):
    minor = _minor(len(y), rng)
    X = np.column_stack([major[:, 0], minor[:, 0], minor[:, 1], major[:, 1], minor[:, 2], minor[:, 3]])
    return X, y, _groups(y, non_iid, rng)


def synthetic_blobs(per_cluster: int = 500, *, seed: int = 0, non_iid: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X (3·per_cluster, 6), cluster y, row group 0/1): Blobs with the paper's minor-feature noise."""
    from sklearn.datasets import make_blobs

    rng = np.random.default_rng(seed)
    major, y = make_blobs(n_samples=[per_cluster] * 3, centers=np.array(BLOB_CENTERS), cluster_std=1.0,
                          random_state=int(rng.integers(2**31)))
    return _assemble(major, y.astype(np.int64), non_iid, rng)


def synthetic_circles(per_cluster: int = 500, *, seed: int = 0, non_iid: bool = False, scale: float = 1.0,
                      noise: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, row group): three concentric circles of radii (1, 2, 3)·scale as the major features."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), per_cluster)
    angle = rng.uniform(0, 2 * np.pi, y.size)
    radius = (y + 1.0 + rng.normal(0, noise, y.size)) * scale
    major = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    return _assemble(major, y, non_iid, rng)


def grid_split(n: int, m: int, c: int, d: int, rng: np.random.Generator
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random equal row groups (c) and column blocks (d), as in §5.3.1: (row index arrays, column index
    arrays); sizes differ by at most one, columns of a block keep their original order."""
    rows = [np.sort(r) for r in np.array_split(rng.permutation(n), c)]
    cols = [np.sort(b) for b in np.array_split(rng.permutation(m), d)]
    return rows, cols
