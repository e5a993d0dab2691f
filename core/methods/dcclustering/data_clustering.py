"""Clustering of the rows of a (collaborative) representation: k-means and spectral clustering.

DC-Clustering (Kawamata, Kamijo et al.) clusters the collaborative representation X̂ with either
* k-means (§3.1.1, Algorithm 1): k-means++ seeding, eq. (1) Pr(θ_j = x_i) = D_i² / Σ D², then R = 300
  Lloyd iterations; the best of ``n_init`` seeded restarts (lowest inertia) is kept; or
* spectral clustering (§3.1.2, Algorithm 2): binary k-nearest-neighbour affinity (w_ij = 1 if x_j is among
  the ``n_neighbors`` nearest neighbours of x_i, the point itself included, then W ← ½(W + Wᵀ), as
  scikit-learn's ``affinity="nearest_neighbors"``), L = D − W (eq. 2), L_sym = I − D^{-1/2} W D^{-1/2}
  (eq. 3; the paper prints D^{1/2} on the right, a typo), E = the k eigenvectors of L_sym with the
  smallest eigenvalues, then k-means on E.
The clustering representation is Z = X̂ for k-means and Z = E for spectral clustering (eq. 12); the
centroids θ live in Z. ``embedding="sklearn"`` (default) divides E's rows by √degree as scikit-learn's
``spectral_embedding`` does (the paper used scikit-learn 1.2.2); ``"sym"`` keeps the plain eigenvectors.

:func:`k_curve` scores a range of k by the silhouette (on X̂) and the within-cluster sum of squares
(on X̂; the k-means inertia for k-means), for choosing k when it is not known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError

if TYPE_CHECKING:  # scipy is imported where a graph is built: sites import this module and never need it
    from scipy import sparse

ALGORITHMS = ("kmeans", "spectral")
EMBEDDINGS = ("sklearn", "sym")


def kmeans(Z: np.ndarray, k: int, *, n_init: int = 10, max_iter: int = 300, random_state: int = 0
           ) -> tuple[np.ndarray, np.ndarray, float]:
    """k-means++ then Lloyd (Algorithm 1); returns (labels, centroids θ, inertia)."""
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=k, init="k-means++", n_init=n_init, max_iter=max_iter, random_state=random_state)
    labels = km.fit_predict(Z)
    return labels.astype(np.int64), km.cluster_centers_.astype(np.float64), float(km.inertia_)


def knn_affinity(X: np.ndarray, n_neighbors: int = 10) -> sparse.csr_matrix:
    """Binary kNN graph, self included, symmetrised: W = ½(K + Kᵀ) (Algorithm 2, step 1)."""
    from sklearn.neighbors import kneighbors_graph

    nn = min(int(n_neighbors), X.shape[0])
    K = kneighbors_graph(X, nn, mode="connectivity", include_self=True)
    return (0.5 * (K + K.T)).tocsr()


def spectral_embedding(W: sparse.spmatrix, k: int, *, embedding: str = "sklearn", random_state: int = 0
                       ) -> np.ndarray:
    """E ∈ R^{n×k}: eigenvectors of L_sym for the k smallest eigenvalues (ascending), each column signed so
    that its largest-magnitude entry is positive; ``"sklearn"`` divides row i by √d_i.

    The eigenvalue 0 has one eigenvector per connected component of the graph, D^{1/2}·1_component; these
    are taken exactly (largest components first) and the rest is found on their orthogonal complement, so
    a disconnected graph is handled exactly (Lanczos alone can miss copies of a repeated eigenvalue). With
    as many components as k or more, E holds the k largest components' vectors.
    """
    from scipy import sparse  # noqa: F811
    from scipy.sparse.csgraph import connected_components, laplacian
    from scipy.sparse.linalg import LinearOperator, eigsh

    if embedding not in EMBEDDINGS:
        raise ConfigError(f"unknown spectral embedding '{embedding}'; choose one of {', '.join(EMBEDDINGS)}")
    n = W.shape[0]
    L, dd = laplacian(W, normed=True, return_diag=True)
    n_comp, comp = connected_components(W, directed=False)
    order = np.argsort(-np.bincount(comp, minlength=n_comp), kind="stable")
    N = np.zeros((n, min(n_comp, k)))
    for col, c in enumerate(order[: N.shape[1]]):
        N[comp == c, col] = dd[comp == c]
        N[:, col] /= np.linalg.norm(N[:, col])
    rest = k - N.shape[1]
    if rest > 0:
        # on N^⊥ the largest eigenvalues of 2I − L_sym (spectrum in [0, 2]) are 2 − the smallest non-zero
        # eigenvalues of L_sym; Lanczos on it needs no factorisation
        M = (sparse.identity(n, format="csr") * 2.0 - L).tocsr()

        def project(x: np.ndarray) -> np.ndarray:
            return x - N @ (N.T @ x)

        if n <= max(200, 5 * k + 1):
            P = np.eye(n) - N @ N.T
            vals, vecs = np.linalg.eigh(P @ M.toarray() @ P)
            vecs = vecs[:, np.argsort(-vals)[:rest]]
        else:
            op = LinearOperator((n, n), matvec=lambda x: project(M @ project(np.ravel(x))), dtype=np.float64)
            v0 = project(np.random.default_rng(random_state).uniform(-1, 1, n))
            vals, vecs = eigsh(op, k=rest, which="LA", tol=0.0, v0=v0)
            vecs = vecs[:, np.argsort(-vals)]
        N = np.hstack([N, vecs])
    E = N / dd[:, None] if embedding == "sklearn" else N
    signs = np.sign(E[np.abs(E).argmax(axis=0), np.arange(E.shape[1])])
    return E * np.where(signs == 0, 1.0, signs)


def graph_components(W: sparse.spmatrix) -> int:
    """Number of connected components of an affinity graph (more than k makes spectral clustering arbitrary)."""
    from scipy.sparse.csgraph import connected_components

    return int(connected_components(W, directed=False)[0])


def within_ss(X: np.ndarray, labels: np.ndarray) -> float:
    """Σ_c Σ_{i∈c} ‖x_i − mean_c‖² (the k-means inertia of a labelling)."""
    total = 0.0
    for c in np.unique(labels):
        rows = X[labels == c]
        total += float(((rows - rows.mean(axis=0)) ** 2).sum())
    return total


def silhouette(X: np.ndarray, labels: np.ndarray, *, max_rows: int = 5000, random_state: int = 0) -> float:
    """Mean silhouette on X (a seeded sample of ``max_rows`` rows when larger); −1 for a single cluster."""
    from sklearn.metrics import silhouette_score

    if len(np.unique(labels)) < 2 or len(np.unique(labels)) >= X.shape[0]:
        return -1.0
    size = None if X.shape[0] <= max_rows else int(max_rows)
    return float(silhouette_score(X, labels, sample_size=size, random_state=random_state))


class DataClustering:
    """Cluster the rows of a representation X̂ into k clusters (k-means or spectral).

    Parameters
    ----------
    k : number of clusters (< number of rows).
    algorithm : "kmeans" or "spectral".
    n_init, max_iter : k-means restarts and Lloyd iterations (R = 300 in the paper).
    n_neighbors : kNN size of the spectral affinity (10, scikit-learn's default; the paper does not state it).
    embedding : "sklearn" or "sym" (see the module docstring).
    random_state : seed of the k-means restarts and the eigensolver's start vector.

    Attributes
    ----------
    labels_ : (n,) cluster of every row.
    representation_ : Z, the clustering representation (X̂ for k-means, E for spectral).
    cluster_centers_ : θ, (k, dim Z).
    inertia_ : within-cluster sum of squares on X̂.
    sizes_ : rows per cluster.
    graph_components_ : spectral only: connected components of the kNN graph (None for k-means).
    """

    def __init__(self, k: int, algorithm: str = "kmeans", *, n_init: int = 10, max_iter: int = 300,
                 n_neighbors: int = 10, embedding: str = "sklearn", random_state: int = 0):
        self.k = k
        self.algorithm = algorithm
        self.n_init = n_init
        self.max_iter = max_iter
        self.n_neighbors = n_neighbors
        self.embedding = embedding
        self.random_state = random_state

    def _check(self, n: int) -> int:
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"unknown clustering algorithm '{self.algorithm}'; choose one of {', '.join(ALGORITHMS)}")
        k = int(self.k)
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if k >= n:
            raise ConfigError(f"k = {k} clusters need more than {k} rows; only {n} row(s) could be clustered")
        return k

    def fit(self, X: np.ndarray, *, embedding_cache: np.ndarray | None = None) -> DataClustering:
        """``embedding_cache``: a precomputed spectral embedding with ≥ k columns (its first k are used)."""
        X = np.asarray(X, dtype=np.float64)
        k = self._check(X.shape[0])
        self.graph_components_ = None
        if self.algorithm == "kmeans":
            Z = X
        elif embedding_cache is not None:
            Z = embedding_cache[:, :k]
        else:
            W = knn_affinity(X, self.n_neighbors)
            self.graph_components_ = graph_components(W)
            Z = spectral_embedding(W, k, embedding=self.embedding, random_state=self.random_state)
        labels, centers, inertia = kmeans(Z, k, n_init=self.n_init, max_iter=self.max_iter,
                                          random_state=self.random_state)
        self.labels_ = labels
        self.representation_ = Z
        self.cluster_centers_ = centers
        self.inertia_ = inertia if self.algorithm == "kmeans" else within_ss(X, labels)
        self.sizes_ = np.bincount(labels, minlength=k)
        return self


def k_curve(X: np.ndarray, ks: list[int], algorithm: str = "kmeans", *, silhouette_rows: int = 5000,
            control: JobControl | None = None, **kwargs) -> dict[int, dict[str, float]]:
    """{k: {"silhouette": s, "inertia": w}} for every k in ``ks`` (each 2 ≤ k < n), both measured on X."""
    control = ensure(control)
    X = np.asarray(X, dtype=np.float64)
    ks = sorted({int(k) for k in ks if 2 <= int(k) < X.shape[0]})
    cache = None
    if algorithm == "spectral" and ks:
        cache = spectral_embedding(knn_affinity(X, kwargs.get("n_neighbors", 10)), max(ks),
                                   embedding=kwargs.get("embedding", "sklearn"),
                                   random_state=kwargs.get("random_state", 0))
    out = {}
    for j, k in enumerate(ks):
        control.step(j / max(1, len(ks)), f"trying k = {k}")
        dc = DataClustering(k, algorithm, **kwargs).fit(X, embedding_cache=cache)
        out[k] = {"silhouette": silhouette(X, dc.labels_, max_rows=silhouette_rows,
                                           random_state=kwargs.get("random_state", 0)),
                  "inertia": dc.inertia_}
    control.step(1.0, "k curve done")
    return out


def best_k(curve: dict[int, dict[str, float]]) -> int:
    """The k with the highest silhouette (ties → the smaller k)."""
    if not curve:
        raise ConfigError("no k in the range could be tried (too few rows)")
    return max(curve, key=lambda k: (round(curve[k]["silhouette"], 12), -k))
