"""Private dimensionality reductions f_i (algorithms.md §1.2).

Every reduction here is an affine map after fitting, ``f(x) = (x − offset) F`` with ``F ∈ R^{m×m̃}``,
so a fitted map is stored as two arrays in the site's workspace and never leaves the site. The default
is the papers' choice — standardise with the site's own mean and std, then PCA to ``m̃ = m − 1`` — except on
small tables, which keep every dimension, and at sites of few rows, which keep at most n − 1
(:func:`default_dimension`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, FormatError
from ..parallel import ROW_BLOCK, for_row_blocks

REDUCTIONS = ("pca", "lpp", "random")
_CHUNK = ROW_BLOCK  # rows per block of the moments and the reduction


@dataclass
class AffineMap:
    """A fitted private map f(x) = (x − offset) @ matrix."""

    offset: np.ndarray  # (m,)
    matrix: np.ndarray  # (m, m̃)

    @property
    def n_features(self) -> int:
        return self.matrix.shape[0]

    @property
    def n_components(self) -> int:
        return self.matrix.shape[1]

    def transform(self, X: np.ndarray, dtype=np.float64, rows: np.ndarray | None = None) -> np.ndarray:
        """f(X[rows]) (all rows by default), in row blocks on two threads, so a million-row matrix needs only
        the output as extra memory. ``rows`` = a permutation gives the shuffled output without a second copy:
        each block of X is reduced in order and scattered to the places the permutation sends it."""
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise FormatError(f"expected {self.n_features} columns, got {X.shape[1] if X.ndim == 2 else X.ndim}")
        n = X.shape[0] if rows is None else len(rows)
        out = np.empty((n, self.n_components), dtype=dtype)
        place = None if rows is None else _inverse_permutation(rows, X.shape[0])
        if rows is not None and place is None:  # a selection, not a permutation: gather the rows
            for start in range(0, n, _CHUNK):
                out[start:start + _CHUNK] = (X[rows[start:start + _CHUNK]] - self.offset) @ self.matrix
            return out

        def reduce_block(start: int, stop: int) -> None:
            target = slice(start, stop) if place is None else place[start:stop]
            out[target] = (X[start:stop] - self.offset) @ self.matrix

        for_row_blocks(X.shape[0], reduce_block, block=_CHUNK)
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"f_offset": self.offset, "f_matrix": self.matrix}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> AffineMap:
        offset = np.asarray(arrays["f_offset"], dtype=np.float64)
        matrix = np.asarray(arrays["f_matrix"], dtype=np.float64)
        if offset.ndim != 1 or matrix.ndim != 2 or matrix.shape[0] != offset.shape[0]:
            raise FormatError("stored private map has inconsistent shapes")
        return cls(offset, matrix)


def _moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and the population covariance C = (1/n) Σ (x − μ)(x − μ)ᵀ, accumulated over row blocks
    (on two threads; the blocks' partial sums are added in block order, so the result never depends on the
    threads' timing) — a million-row matrix needs no centred copy."""
    n, m = X.shape
    sums = for_row_blocks(n, lambda start, stop: X[start:stop].sum(axis=0), block=_CHUNK)
    mean = np.sum(sums, axis=0) / n

    def scatter(start: int, stop: int) -> np.ndarray:
        B = X[start:stop] - mean
        return B.T @ B

    C = np.zeros((m, m))
    for part in for_row_blocks(n, scatter, block=_CHUNK):
        C += part
    return mean, C / n


def _inverse_permutation(rows: np.ndarray, n: int) -> np.ndarray | None:
    """place with place[rows[i]] = i when ``rows`` is a permutation of range(n); else None."""
    rows = np.asarray(rows)
    if len(rows) != n or rows.dtype.kind not in "iu":
        return None
    place = np.full(n, -1, dtype=np.int64)
    place[rows] = np.arange(n)
    return place if (place >= 0).all() else None


def _std(C: np.ndarray) -> np.ndarray:
    std = np.sqrt(np.clip(np.diag(C), 0.0, None))
    std[~(std > 1e-12)] = 1.0  # constant columns: keep them centred, do not divide by zero
    return std


FULL_DIMENSION_MAX = 15  # tables of at most this many columns keep every dimension (default_dimension)


def default_dimension(n_features: int, n_rows: int | None = None) -> int:
    """m̃ = m for a table of m ≤ FULL_DIMENSION_MAX columns, else m − 1 (the papers' default); with ``n_rows`` = n,
    at most n − 1 (n centred rows span at most n − 1 directions: a further one carries none of their variance), so
    every site can export by default; at least 1. Sites of one round may thus keep
    different m̃: the DC alignment maps each site's own width to the common space (algorithms.md §1.3).

    On a small table the one dropped direction can carry much of what predicts the outcome (measured in
    docs/results/clinical/dimension.md); a full-dimension PCA is a rotation of the standardised rows, and no
    secret one: its axes are the eigenvectors of the columns' correlation, which anyone with rows like these can
    estimate (the eigenvector attack, core.privacy.attacks), so the rows' protection rests on noise or on what
    the assessment measures, at m − 1 as at m (docs/privacy-and-security.md)."""
    rule = n_features if n_features <= FULL_DIMENSION_MAX else n_features - 1
    return max(1, rule if n_rows is None else min(rule, n_rows - 1))


def resolved_dimension(asked: int | None, n_features: int, n_rows: int | None = None, *,
                       papers: bool = False) -> int:
    """The numbers per row a site's export keeps: ``asked`` when the site chose one, else the default for its
    m = ``n_features`` encoded columns and n = ``n_rows`` rows — :func:`default_dimension`, or with ``papers`` the
    papers' m − 1 (DC-Clustering) — at most n − 1 and at least 1. The one value the kit page, the privacy page and
    the bundle all show (a choice the rows cannot give is refused at export, not here)."""
    if asked is not None:
        return int(asked)
    if not papers:
        return default_dimension(n_features, n_rows)
    return max(1, min(n_features - 1, n_rows - 1) if n_rows is not None else n_features - 1)


def largest_dimension(method: str, n_rows: int, n_features: int) -> int:
    """The largest m̃ a reduction can fit: m for every reduction, and at most n rows for PCA (its k directions
    are eigenvectors of a covariance of rank ≤ n)."""
    return min(n_rows, n_features) if method == "pca" else n_features


class PrivateReduction:
    """Standardise with the site's own statistics (or only centre), then reduce (PCA, LPP or Gaussian
    random projection).

    Parameters
    ----------
    method : "pca" (default), "lpp" (locality preserving projections, He & Niyogi 2003) or "random"
        (Gaussian random projection).
    n_components : m̃; ``None`` means :func:`default_dimension` (m for small tables, else m − 1; at most n − 1).
    n_neighbors : kNN graph size for LPP.
    standardise : divide by the site's own standard deviations (default). False: only centre, so PCA keeps
        the directions of largest variance in the data's own units (DC-Clustering's ``scaling="raw"``).
    max_fit_rows : LPP builds a kNN graph, so it is fitted on at most this many rows (a seeded sample).
    random_state : seed for the projection and for any sampling.

    Attributes
    ----------
    map_ : AffineMap, the fitted f_i.
    variance_kept_ : for PCA, tr(WᵀRW)/tr(R) — the share of the (standardised, or with ``standardise=False``
        raw) variance the m̃ kept directions carry; 1 − it bounds the share of squared distances the site's
        reduction discards. None for LPP and random projections (not orthogonal projections).
    """

    def __init__(self, method: str = "pca", n_components: int | None = None, *, n_neighbors: int = 10,
                 max_fit_rows: int = 5000, random_state: int | None = None, standardise: bool = True):
        self.method = method
        self.standardise = standardise
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.max_fit_rows = max_fit_rows
        self.random_state = random_state

    def fit(self, X: np.ndarray) -> PrivateReduction:
        if self.method not in REDUCTIONS:
            raise ConfigError(f"unknown reduction '{self.method}'; choose one of {', '.join(REDUCTIONS)}")
        n, m = X.shape
        k = default_dimension(m, n) if self.n_components is None else int(self.n_components)
        top = largest_dimension(self.method, n, m)
        if not 1 <= k <= top:
            raise ConfigError(f"reduced dimension must be between 1 and {top} ({m} columns, {n} rows), got {k}")
        mean, C = _moments(X)
        std = _std(C) if self.standardise else np.ones(m)
        rng = np.random.default_rng(self.random_state)
        self.variance_kept_ = None
        if self.method == "pca":
            R = C / np.outer(std, std)
            W = _pca_from_covariance(R, k)
            total = float(np.trace(R))
            self.variance_kept_ = float(np.trace(W.T @ R @ W)) / total if total > 0 else 1.0
        elif self.method == "random":
            from sklearn.random_projection import GaussianRandomProjection

            grp = GaussianRandomProjection(n_components=k, random_state=rng.integers(2**31))
            W = grp.fit(np.zeros((1, m))).components_.T
        else:
            rows = X if n <= self.max_fit_rows else X[rng.choice(n, self.max_fit_rows, replace=False)]
            W = _lpp((rows - mean) / std, k, self.n_neighbors)
        self.map_ = AffineMap(mean, W / std[:, None])
        return self

    def transform(self, X: np.ndarray, dtype=np.float64, rows: np.ndarray | None = None) -> np.ndarray:
        return self.map_.transform(X, dtype=dtype, rows=rows)


def _pca_from_covariance(R: np.ndarray, k: int) -> np.ndarray:
    """PCA of standardised data: the k leading eigenvectors of its covariance (the correlation matrix R),
    each signed so that its largest-magnitude loading is positive (a deterministic choice of sign)."""
    vals, vecs = np.linalg.eigh(R)  # numpy's LAPACK: sites need not import scipy (~0.4 s)
    W = vecs[:, np.argsort(vals)[::-1][:k]]
    signs = np.sign(W[np.abs(W).argmax(axis=0), np.arange(k)])
    return W * np.where(signs == 0, 1.0, signs)


def _lpp(Z: np.ndarray, k: int, n_neighbors: int) -> np.ndarray:
    """LPP: minimise Σ_ij W_ij‖aᵀz_i − aᵀz_j‖² s.t. aᵀZᵀDZa = 1, i.e. the k smallest generalised
    eigenvectors of Zᵀ L Z a = λ Zᵀ D Z a with a heat-kernel kNN graph (He & Niyogi 2003)."""
    from scipy import linalg
    from sklearn.neighbors import kneighbors_graph

    n, m = Z.shape
    nn = min(n_neighbors, n - 1)
    G = kneighbors_graph(Z, nn, mode="distance", include_self=False)
    G = G.maximum(G.T).tocsr()
    sigma2 = np.mean(G.data**2) if G.nnz else 1.0
    G.data = np.exp(-(G.data**2) / sigma2)
    d = np.asarray(G.sum(axis=1)).ravel()
    ZtDZ = (Z * d[:, None]).T @ Z
    ZtWZ = Z.T @ (G @ Z)
    ZtLZ = ZtDZ - ZtWZ
    ridge = 1e-9 * np.trace(ZtDZ) / m
    _, vecs = linalg.eigh(ZtLZ, ZtDZ + ridge * np.eye(m))
    return vecs[:, :k]
