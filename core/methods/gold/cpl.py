"""GOLD: one-shot federated clustering of Non-ICD data (Zhang, Cai, Yang, Feng, Ji, Zhang).

Sites run FCPL (fine-grained competitive penalised learning) on their own rows and ship only micro-cluster
centroids; the analyst runs MCPL (multi-granular CPL) over all shipped centroids and REMC (a weighted
k-modes on the stacked granularity labels) to get k global clusters. Semantics follow the authors' code
(``hongdream/Fed-HIRE``; reference notes §1(a)) — the paper text lost its symbols, so equation numbers below
are the paper's and the behaviour is the code's.

CPL engine (:func:`cpl`), per row x, in index order, online:
  s_j = exp(−½ Σ_r W_jr (x_r − C_jr)²), s̃ = s / Σ s                         (Eqs. 8, 22)
  g_j = 1 / (1 + exp(−10 β_j + 5)),  γ_j = n_j / Σ n,  q_j = (1 − γ_j) g_j s̃_j  (Eqs. 15, 10, 9)
  winner v = argmax q, rival ρ = runner-up;  β_v += η,  β_ρ −= η q_ρ / q_v,  n_v += 1  (Eqs. 11–14)
  the row moves to v at once (running sums and counts: centroids are running means).
After an epoch with changes, feature weights (Eqs. 16–21) per cluster j and feature r:
  M_jr = mean_{x∈j} exp(−½ (x_r − C_jr)²);  F_jr = Hellinger distance between N(μ_in, σ²_in) and
  N(μ_out, σ²_out) of the members / non-members (unbiased variances);  W_jr = M_jr F_jr / Σ_t M_jt F_jt.
Implicit elimination (kept): a singleton has σ²_in = 0/0, so its weights are undefined and its similarity
is 0 from then on; empty clusters likewise; clusters whose β falls stop winning. ≤ 31 epochs.

Cost: the authors' code recomputes the n×k membership sums for every row (O(n²k) per epoch). Here every
cluster keeps a running sum and count, and Σ_r W_jr (x_r − C_jr)² = a_j − 2 (W_j∘C_j)·x + W_j·x², so a
row costs one (k × 2d) mat-vec: O(n k d) per epoch, linear in n; the weight update is O(n d).

Deviations from the code (each changes nothing unless the case occurs): similarities are normalised in
the log domain (the code's exp underflows to 0/0 for a row far from every centroid); a feature with zero
spread inside and outside a cluster gets F = 1 if the two means differ and 0 if not (the limits of the
Hellinger distance; the code gives 0/0 and kills the cluster — or, after z-scoring, floating-point noise).
Exact ties of q (identical candidates, e.g. two seeds on duplicate rows) go to the lowest index; the code's
``np.argsort`` orders ties arbitrarily (platform-dependent). With ties broken alike, FCPL, MCPL and REMC give
the code's labels exactly (checked on LE clients of 698 and 2 747 rows and on the analyst's step); random
tie-breaking changed no statistic measurably (docs/results/gold/README.md §2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError

ETA = 0.05  # learning rate η [code]
K0 = 0.5  # initial candidates at a site = round(K0 · n_i) [code]
K1 = 0.5  # initial candidates at the analyst = round(K1 · N_T) [code]
MAX_EPOCHS = 30  # the code stops after epoch 31
REMC_MAX_ITER = 30
MIN_SIZE = 5  # product guard: no shipped centroid is the mean of fewer rows
GUARDS = ("pool", "merge", "ward", "drop")
SERVER_STEPS = ("kmeans", "mcpl")  # analyst's step: the product's default first; "mcpl" = the paper's MCPL + REMC
GUARD_DEFAULT = "ward"  # the product's and the bench's guard (chosen on the bench: docs/results/gold/README.md)


# --------------------------------------------------------------------------------------------- CPL engine
@dataclass
class CPLResult:
    """Output of :func:`cpl`: non-empty clusters relabelled 0..k′−1 in index order."""

    centroids: np.ndarray  # (k′, d)
    labels: np.ndarray  # (n,) in 0..k′−1
    counts: np.ndarray  # (k′,)
    k_init: int
    epochs: int
    row_visits: int  # rows processed (operation count for the linear-time check)


def _log_sigmoid(z: float) -> float:
    return -math.log1p(math.exp(-z)) if z > -30 else z - math.log1p(math.exp(z))


def _feature_weights(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """W (k, d) by Eqs. 16–21; rows with an undefined entry are NaN (the cluster is eliminated)."""
    n, d = X.shape
    cnt = np.bincount(labels[labels >= 0], minlength=k).astype(np.float64)
    valid = labels >= 0
    lab, Xv = labels[valid], X[valid]
    S1 = np.zeros((k, d))
    np.add.at(S1, lab, Xv)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu_in = S1 / cnt[:, None]
        dev = Xv - mu_in[lab]
        E = np.exp(-0.5 * dev**2)  # the centroid is the members' mean
        M = np.zeros((k, d))
        np.add.at(M, lab, E)
        M /= cnt[:, None]
        Q_in = np.zeros((k, d))
        np.add.at(Q_in, lab, dev**2)
        var_in = Q_in / (cnt - 1)[:, None]
        m = X.mean(axis=0)
        tot = ((X - m) ** 2).sum(axis=0)
        Qm = np.zeros((k, d))
        np.add.at(Qm, lab, (Xv - m) ** 2)
        n_out = (n - cnt)[:, None]
        mu_out = (X.sum(axis=0) - S1) / n_out
        q_out = np.maximum(tot - Qm - n_out * (mu_out - m) ** 2, 0.0)
        var_out = q_out / (n_out - 1)
        var_in = np.where(np.isfinite(var_in), np.maximum(var_in, 0.0), var_in)
        ssum = var_in + var_out
        scale = np.maximum(tot / max(n, 1), 1e-300)
        flat = np.isfinite(ssum) & (ssum <= 1e-12 * scale)
        bc = np.sqrt(2 * np.sqrt(var_in) * np.sqrt(var_out) / ssum) * np.exp(-((mu_in - mu_out) ** 2) / (4 * ssum))
        F = np.sqrt(np.maximum(1 - bc, 0.0))
        F = np.where(flat, (np.abs(mu_in - mu_out) > 1e-9 * np.sqrt(scale)).astype(np.float64), F)
        H = M * F
        W = H / H.sum(axis=1, keepdims=True)
    return W


def cpl(X: np.ndarray, k: int, *, eta: float = ETA, max_epochs: int = MAX_EPOCHS,
        rng: np.random.Generator | int | None = 0) -> CPLResult:
    """Competitive penalised learning with k initial candidates (see the module docstring)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if n == 0:
        raise ConfigError("CPL needs at least one row")
    k = int(min(max(k, 1), n))
    if k == 1:
        return CPLResult(X.mean(axis=0, keepdims=True), np.zeros(n, np.int64), np.array([n]), 1, 0, 0)
    seeds = rng.choice(n, k, replace=False)
    labels = np.full(n, -1, dtype=np.int64)
    labels[seeds] = np.arange(k)
    S = X[seeds].copy()
    c = np.ones(k)
    wins = np.ones(k)
    total_wins = float(k)
    beta = np.ones(k)
    lg = np.full(k, _log_sigmoid(10.0 - 5.0))
    W = np.full((k, d), 1.0 / d)
    A = np.zeros((k, 2 * d))  # [W_j, W_j∘C_j]
    a = np.zeros(k)  # Σ_r W_jr C_jr²
    V = np.hstack([X * X, -2.0 * X])  # per row [x², −2x]: dist_j = A_j·V_i + a_j
    alive = np.ones(k, dtype=bool)

    def refresh(j: int) -> None:
        if not alive[j] or c[j] <= 0:
            alive[j] = False
            A[j] = 0.0
            a[j] = np.inf
            return
        C = S[j] / c[j]
        A[j, :d] = W[j]
        A[j, d:] = W[j] * C
        a[j] = float(W[j] @ (C * C))

    for j in range(k):
        refresh(j)
    epochs, visits = 0, 0
    while True:
        epochs += 1
        changed = False
        for i in range(n):
            visits += 1
            score = np.log(total_wins - wins) + lg - 0.5 * (A @ V[i] + a)
            v = int(score.argmax())
            sv = score[v]
            if sv == -np.inf:  # every cluster eliminated: nothing can win this row
                continue
            score[v] = -np.inf
            r = int(score.argmax())
            ratio = math.exp(score[r] - sv) if score[r] > -np.inf else 0.0
            beta[v] += eta
            lg[v] = _log_sigmoid(10.0 * beta[v] - 5.0)
            if ratio > 0.0:
                beta[r] -= eta * ratio
                lg[r] = _log_sigmoid(10.0 * beta[r] - 5.0)
            wins[v] += 1.0
            total_wins += 1.0
            old = labels[i]
            if old != v:
                changed = True
                labels[i] = v
                S[v] += X[i]
                c[v] += 1.0
                refresh(v)
                if old >= 0:
                    S[old] -= X[i]
                    c[old] -= 1.0
                    refresh(old)
        if not changed:
            break
        W = _feature_weights(X, labels, k)
        alive &= np.all(np.isfinite(W), axis=1)
        W = np.where(alive[:, None], W, 0.0)
        S = np.zeros((k, d))
        np.add.at(S, labels[labels >= 0], X[labels >= 0])  # drop the running sums' rounding drift
        c = np.bincount(labels[labels >= 0], minlength=k).astype(np.float64)
        for j in range(k):
            refresh(j)
        if epochs > max_epochs:
            break
    used = np.unique(labels[labels >= 0])
    remap = np.full(k, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    out = np.where(labels >= 0, remap[np.maximum(labels, 0)], -1)
    cnt = np.bincount(out[out >= 0], minlength=len(used))
    cents = np.zeros((len(used), d))
    np.add.at(cents, out[out >= 0], X[out >= 0])
    cents /= np.maximum(cnt, 1)[:, None]
    return CPLResult(cents, out, cnt, k, epochs, visits)


class CPL:
    """Scikit-learn-style wrapper of :func:`cpl`: k = ``n_candidates`` or round(``k0`` · n) candidates.

    Attributes after ``fit``: ``labels_`` (n,), ``cluster_centers_`` (k′, d), ``counts_``, ``n_epochs_``.
    """

    def __init__(self, n_candidates: int | None = None, *, k0: float = K0, eta: float = ETA,
                 max_epochs: int = MAX_EPOCHS, random_state: int = 0):
        self.n_candidates = n_candidates
        self.k0 = k0
        self.eta = eta
        self.max_epochs = max_epochs
        self.random_state = random_state

    def fit(self, X: np.ndarray, y=None) -> CPL:
        X = np.asarray(X, dtype=np.float64)
        k = self.n_candidates if self.n_candidates else max(1, int(round(self.k0 * len(X))))
        res = cpl(X, k, eta=self.eta, max_epochs=self.max_epochs, rng=self.random_state)
        self.labels_, self.cluster_centers_, self.counts_, self.n_epochs_ = (res.labels, res.centroids,
                                                                            res.counts, res.epochs)
        return self

    def fit_predict(self, X: np.ndarray, y=None) -> np.ndarray:
        return self.fit(X).labels_


# ----------------------------------------------------------------------------------------- scaling
def column_stats(X: np.ndarray) -> dict[str, np.ndarray]:
    """What a site ships for federated scaling: row count and per-column Σx and Σx²."""
    X = np.asarray(X, dtype=np.float64)
    return {"n": np.array([X.shape[0]], dtype=np.float64), "sum": X.sum(axis=0), "sumsq": (X * X).sum(axis=0)}


def pooled_scaler(stats: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Pooled mean and population std (ddof 0) of the union of the sites' rows; a zero std becomes 1."""
    n = sum(float(s["n"][0]) for s in stats)
    if n <= 0:
        raise ConfigError("the sites hold no rows")
    mean = sum(s["sum"] for s in stats) / n
    var = np.maximum(sum(s["sumsq"] for s in stats) / n - mean**2, 0.0)
    std = np.sqrt(var)
    return mean, np.where(std > 1e-12 * np.maximum(np.abs(mean), 1.0), std, 1.0)


def _own_scaler(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return pooled_scaler([column_stats(X)])


# ------------------------------------------------------------------------------------------- site
@dataclass
class SiteResult:
    """What FCPL at a site produces. ``centroids`` (raw units) and ``counts`` and ``stats`` are shipped;
    ``labels`` (row → shipped micro-cluster, −1 for a dropped row) stay at the site."""

    centroids: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    stats: dict[str, np.ndarray]
    k_found: int  # micro-clusters FCPL found before the guard
    k_init: int
    guard_rows: int  # rows whose micro-cluster was merged or dropped by the guard
    guard_clusters: int
    epochs: int
    row_visits: int


def fcpl_site(X: np.ndarray, *, mean: np.ndarray | None = None, std: np.ndarray | None = None,
              standardise: bool = True, eta: float = ETA, k0: float = K0, max_candidates: int | None = None,
              max_epochs: int = MAX_EPOCHS, min_size: int = 0, guard: str = GUARD_DEFAULT, noise: float = 0.0,
              seed: int = 0, init_labels: np.ndarray | None = None) -> SiteResult:
    """FCPL at one site: k = round(k0 · n) candidates (capped at ``max_candidates``), CPL, then the guard.

    Units: rows are standardised with the given (pooled) ``mean``/``std``, else with the site's own
    statistics when ``standardise``, else used raw; centroids are means, so they are mapped back to raw
    units exactly. ``min_size`` > 0: the guard (:func:`_guard`, in working units) leaves no micro-cluster of
    fewer rows (merged, pooled or dropped, ``guard``). ``noise``: Gaussian noise of that std (working units)
    on shipped centroids.
    ``init_labels``: skip CPL and use these micro-clusters (ablation: k-means at the site).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if mean is not None and std is not None:
        mu, sd = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    elif standardise:
        mu, sd = _own_scaler(X)
    else:
        mu, sd = np.zeros(d), np.ones(d)
    Z = (X - mu) / sd
    rng = np.random.default_rng(seed)
    if init_labels is None:
        k = int(round(k0 * n))
        if max_candidates:
            k = min(k, int(max_candidates))
        res = cpl(Z, max(k, 1), eta=eta, max_epochs=max_epochs, rng=rng)
        labels, k_init, epochs, visits = res.labels.copy(), res.k_init, res.epochs, res.row_visits
    else:
        labels = np.unique(np.asarray(init_labels), return_inverse=True)[1].astype(np.int64)
        k_init, epochs, visits = int(labels.max()) + 1, 0, 0
    k_found = int(labels.max()) + 1 if n else 0
    touched, clusters = 0, 0
    if min_size > 0 and n:
        labels, touched, clusters = _guard(Z, labels, k_found, min_size, guard)
    kk = int(labels.max()) + 1 if (labels >= 0).any() else 0
    counts = np.bincount(labels[labels >= 0], minlength=kk)
    cz = np.zeros((kk, d))
    np.add.at(cz, labels[labels >= 0], Z[labels >= 0])
    cz /= np.maximum(counts, 1)[:, None]
    if noise > 0 and kk:
        cz = cz + rng.normal(0.0, noise, cz.shape)
    return SiteResult(mu + sd * cz, counts, labels, column_stats(X), k_found, k_init, touched, clusters,
                      epochs, visits)




def _guard(Z: np.ndarray, labels: np.ndarray, k: int, min_size: int, how: str) -> tuple[np.ndarray, int, int]:
    """The minimum-size guard: afterwards every micro-cluster holds ≥ ``min_size`` rows (or is dropped).

    Greedy, smallest group first (ties: lowest index), centroids updated as count-weighted means c = Σx / n:
    * ``"merge"``: every small group joins the nearest group of ≥ ``min_size`` rows (as FCPL left them);
    * ``"pool"``: the smallest group joins the nearest group of any size, ‖c_a − c_b‖ least — neighbouring
      small groups pool together instead of each reshaping a distant large one;
    * ``"ward"``: the smallest group joins the group with the least Ward cost n_a n_b/(n_a+n_b)·‖c_a − c_b‖²
      (the least increase of the within-group sum of squares), whatever its size;
    * ``"drop"``: small groups' rows are left out (label −1).
    With no group of ``min_size`` rows and fewer than ``min_size`` rows in all, nothing is kept.
    Returns (labels relabelled 0..p−1, rows in small groups, small groups)."""
    ok = labels >= 0
    cnt = np.bincount(labels[ok], minlength=k).astype(np.int64)
    small = np.flatnonzero(cnt < min_size)
    touched, clusters = int(cnt[small].sum()), len(small)
    if not len(small):
        return labels, touched, clusters
    d = Z.shape[1]
    S = np.zeros((k, d))
    np.add.at(S, labels[ok], Z[ok])
    target = np.arange(k)
    big = np.flatnonzero(cnt >= min_size)
    if how == "drop" or (not len(big) and cnt.sum() < min_size):
        target[small if len(big) else np.arange(k)] = -1
    elif how == "merge":
        cen = S / np.maximum(cnt, 1)[:, None]
        if len(big):
            dd = ((cen[small][:, None, :] - cen[big][None]) ** 2).sum(-1)
            target[small] = big[dd.argmin(axis=1)]
        else:
            target[:] = 0
    elif how in ("pool", "ward"):
        n_, S_ = cnt.copy(), S.copy()
        alive = n_ > 0
        while True:
            low = np.flatnonzero(alive & (n_ < min_size))
            if not len(low) or alive.sum() < 2:
                break
            a = low[np.argmin(n_[low])]
            ca = S_[a] / n_[a]
            cand = np.flatnonzero(alive)
            cand = cand[cand != a]
            if how == "pool":
                cost = ((S_[cand] / n_[cand][:, None] - ca) ** 2).sum(-1)
            else:
                cost = n_[cand] * n_[a] / (n_[cand] + n_[a]) * ((S_[cand] / n_[cand][:, None] - ca) ** 2).sum(-1)
            b = cand[np.argmin(cost)]
            S_[b] += S_[a]
            n_[b] += n_[a]
            n_[a], alive[a] = 0, False
            target[target == a] = b
    else:
        raise ConfigError(f"unknown guard {how!r}; choose from {', '.join(GUARDS)}")
    labels = np.where(ok, target[np.maximum(labels, 0)], -1)
    keep = np.unique(labels[labels >= 0])
    remap = np.full(k, -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    return np.where(labels >= 0, remap[np.maximum(labels, 0)], -1), touched, clusters


# ----------------------------------------------------------------------------------------- analyst
def mcpl(T: np.ndarray, *, eta: float = ETA, k1: float = K1, max_epochs: int = MAX_EPOCHS,
         rng: np.random.Generator | int | None = 0, max_stages: int = 1000) -> tuple[list[np.ndarray], list[int]]:
    """MCPL: CPL with k = round(k1 · N_T), then again with k = the number of clusters that survived (fresh
    seeds, weights and β; Remark 4) until nothing is eliminated or fewer than 2 survive. Returns the level
    labellings L^(h) and their sizes (the first stage is kept even if nothing was eliminated)."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    k = int(round(k1 * len(T)))
    levels: list[np.ndarray] = []
    sizes: list[int] = []
    for stage in range(max_stages):
        if k < 2:
            if not levels:
                levels, sizes = [np.zeros(len(T), np.int64)], [1]
            break
        res = cpl(T, k, eta=eta, max_epochs=max_epochs, rng=rng)
        kk = len(res.counts)
        if kk == k:
            if stage == 0:
                levels.append(res.labels)
                sizes.append(kk)
            break
        levels.append(res.labels)
        sizes.append(kk)
        k = kk
    return levels, sizes


class REMCFailure(Exception):
    """REMC cannot form k clusters: fewer distinct granularity-label vectors than k."""


def _modes(E: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Column-wise mode of each cluster's rows; ties go to the value seen first (``statistics.mode``)."""
    H = E.shape[1]
    Q = np.full((k, H), -1, dtype=np.int64)
    for j in range(k):
        rows = E[labels == j]
        if len(rows) == 0:
            continue
        for h in range(H):
            vals, first, cnt = np.unique(rows[:, h], return_index=True, return_counts=True)
            best = np.flatnonzero(cnt == cnt.max())
            Q[j, h] = vals[best[np.argmin(first[best])]]
    return Q


def _remc_weights(E: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """W_jh = α_jh β_jh / (Σ_h α β + 1e-10): α = √(½ Σ_t (P_in(t) − P_out(t))²) (the code's form of Eq. 26),
    β = mean over members of (members sharing its value) / |C_j| (Eqs. 27–28)."""
    N, H = E.shape
    W = np.zeros((k, H))
    for j in range(k):
        inn = labels == j
        ni = int(inn.sum())
        if ni == 0 or ni == N:
            continue
        for h in range(H):
            top = int(E[:, h].max()) + 1
            pin = np.bincount(E[inn, h], minlength=top)
            pout = np.bincount(E[~inn, h], minlength=top) / (N - ni)
            alpha = math.sqrt(float(((pin / ni - pout) ** 2).sum()) / 2)
            beta = float(pin[E[inn, h]].mean() / ni)
            W[j, h] = alpha * beta
    return W / (W.sum(axis=1, keepdims=True) + 1e-10)


def _assign(E: np.ndarray, Q: np.ndarray, W: np.ndarray) -> np.ndarray:
    sim = ((E[:, None, :] == Q[None]) * W[None]).sum(axis=2)  # Eqs. 24–25
    return sim.argmax(axis=1)


def remc(E: np.ndarray, k: int, *, rng: np.random.Generator | int | None = 0,
         max_iter: int = REMC_MAX_ITER) -> np.ndarray:
    """REMC (Eqs. 23–29): weighted k-modes of the granularity-label matrix E (N_T × H) into k clusters.
    Raises :class:`REMCFailure` when E has fewer than k distinct rows (the code returns "error")."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    E = np.asarray(E, dtype=np.int64)
    uniq = np.unique(E, axis=0)
    if k > len(uniq):
        raise REMCFailure(f"{len(uniq)} distinct granularity-label vectors, fewer than k = {k}")
    Q = uniq[rng.choice(len(uniq), k, replace=False)]
    W = np.full((k, E.shape[1]), 1.0 / E.shape[1])
    labels = _assign(E, Q, W)
    for _ in range(max_iter + 1):
        old = labels
        Q = _modes(E, old, k)
        W = _remc_weights(E, old, k)
        labels = _assign(E, Q, W)
        if np.array_equal(labels, old):
            break
    return labels


@dataclass
class GoldModel:
    """The analyst's result. Centroids in the analyst's working (pooled standardised) units and raw units."""

    k: int
    centroids: np.ndarray  # (k, d) working units; a cluster without members is NaN
    centroids_raw: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    micro_global: list[np.ndarray]  # per site: global cluster of each shipped micro-cluster
    micro_levels: list[np.ndarray]  # per site: (k′_i, H) multi-granular labels
    level_sizes: list[int]  # how k shrinks stage by stage (the candidate levels)
    remc_failures: int
    auto: dict = field(default_factory=dict)  # k = auto: the candidates and their scores


def gold_fit(sites: list[SiteResult], k: int | str, *, mean: np.ndarray | None = None,
             std: np.ndarray | None = None, eta: float = ETA, k1: float = K1, max_epochs: int = MAX_EPOCHS,
             seed: int = 0, max_retries: int = 20, server: str = "mcpl", weighted_centroids: bool = False,
             count_weighted: bool = True) -> GoldModel:
    """The analyst's step over every site's shipped centroids: ``server="mcpl"`` (this function's default, the
    paper's MCPL + REMC, as the GOLD bench runs it) or ``"kmeans"`` (the product's default, below).

    Units: the centroids are standardised with ``mean``/``std`` if given, else with the pooled statistics
    the sites shipped (:func:`pooled_scaler`). ``k = "auto"``: REMC is run for every k in 2..10 and every MCPL
    level size (up to the largest level and the number of distinct label vectors); the k whose partition of
    the shipped centroids has the highest count-weighted silhouette is kept (ties → smaller k). A REMC
    failure restarts MCPL + REMC with the next seed (at most ``max_retries`` times) and is counted. Global
    centroid = the unweighted mean of its micro-cluster centroids (the code), or the count-weighted mean with
    ``weighted_centroids`` (= the mean of the rows).
    ``server="kmeans"`` (the product's default, :func:`separated_kmeans`): k-means on the centroids, each
    weighted by its row count, the best-separated of 11 runs (``count_weighted``; False = the unweighted
    least-sum-of-squares k-means of the bench's Table V ablation, :func:`kmeans_server`),
    instead of MCPL + REMC; ``k = "auto"`` then picks k in 2..10 by the silhouette of the rows estimated
    from the centroids and the shipped column sums (:func:`_auto_k_kmeans`).
    """
    if mean is None or std is None:
        mean, std = pooled_scaler([s.stats for s in sites])
    mean, std = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    parts = [(s.centroids - mean) / std for s in sites]
    T = np.vstack(parts)
    counts = np.concatenate([s.counts for s in sites]).astype(np.float64)
    if len(T) < 2:
        raise ConfigError("the sites shipped fewer than two micro-clusters")
    failures, auto_info = 0, {}
    levels, sizes = [], []
    if server not in SERVER_STEPS:
        raise ConfigError(f"unknown server step {server!r}; choose from {', '.join(SERVER_STEPS)}")
    if server == "kmeans":
        if k == "auto":
            kk, labels, auto_info = _auto_k_kmeans(T, counts if count_weighted else np.ones(len(T)), seed,
                                                   within_spread(sites, mean, std, T, counts))
        else:
            kk = min(int(k), len(T))
            labels = (separated_kmeans(T, counts, kk, seed, within_spread(sites, mean, std, T, counts))
                      if count_weighted else kmeans_server(T, None, kk, seed))
    else:
        for attempt in range(max_retries + 1):
            rng = np.random.default_rng([seed, attempt])
            levels, sizes = mcpl(T, eta=eta, k1=k1, max_epochs=max_epochs, rng=rng)
            E = np.stack(levels, axis=1)
            try:
                if k == "auto":
                    kk, labels, auto_info = _auto_k(T, E, sizes, counts, rng)
                else:
                    kk = int(k)
                    labels = remc(E, kk, rng=rng)
                break
            except REMCFailure:
                failures += 1
        else:
            raise ConfigError(f"REMC could not form k = {k} clusters in {max_retries + 1} attempts (the sites "
                              f"shipped {len(T)} micro-clusters)")
    cent = np.full((kk, T.shape[1]), np.nan)
    for j in range(kk):
        m = labels == j
        if m.any():
            cent[j] = (np.average(T[m], axis=0, weights=counts[m]) if weighted_centroids else T[m].mean(axis=0))
    micro_global, micro_levels, start = [], [], 0
    E = np.stack(levels, axis=1) if levels else np.zeros((len(T), 0), np.int64)
    for p in parts:
        micro_global.append(labels[start:start + len(p)].astype(np.int64))
        micro_levels.append(E[start:start + len(p)])
        start += len(p)
    return GoldModel(kk, cent, mean + std * cent, mean, std, micro_global, micro_levels, sizes, failures, auto_info)


AUTO_MAX_K = 10
KMEANS_RESTARTS = 10


def kmeans_server(T: np.ndarray, w: np.ndarray | None, k: int, seed: int, restarts: int = KMEANS_RESTARTS
                  ) -> np.ndarray:
    """Count-weighted k-means of the shipped centroids: minimises Σ_i w_i ‖T_i − c_{l(i)}‖² (w_i = the rows of
    micro-cluster i, so each centroid stands for its rows: the within-cluster sum of squares of the rows,
    less their spread inside the micro-clusters, which no partition changes); k-means++ seeding, the best
    of ``restarts`` seeded runs by that sum. Used for k = auto (:func:`_auto_k_kmeans`) and, with ``w=None``
    (every centroid counts once), for the bench's ablation; k given uses :func:`separated_kmeans`."""
    from sklearn.cluster import KMeans

    km = KMeans(int(k), init="k-means++", n_init=restarts, random_state=int(seed))
    return km.fit(T, sample_weight=None if w is None else np.asarray(w, np.float64)).labels_.astype(np.int64)


SILHOUETTE_TIE = 1e-3  # estimated silhouettes this close count as equal (→ the smaller sum of squares)


def farthest_first(T: np.ndarray, w: np.ndarray, k: int) -> np.ndarray | None:
    """k starting centres: the heaviest average, then again and again the average farthest from those chosen
    (k-FED's server seeding, started from the most rows instead of the first site). None if fewer than k
    distinct averages."""
    idx = [int(np.argmax(w))]
    d2 = ((T - T[idx[0]]) ** 2).sum(1)
    while len(idx) < k:
        j = int(d2.argmax())
        if d2[j] <= 0.0:
            return None
        idx.append(j)
        d2 = np.minimum(d2, ((T - T[j]) ** 2).sum(1))
    return T[idx]


def separated_kmeans(T: np.ndarray, w: np.ndarray, k: int, seed: int, spread2: float,
                     restarts: int = KMEANS_RESTARTS) -> np.ndarray:
    """The product's server step: count-weighted k-means of the shipped centroids (Lloyd on Σ_i w_i ‖T_i −
    c_{l(i)}‖², as :func:`kmeans_server`) from ``restarts`` k-means++ seedings (drawn from ``seed``) and from
    :func:`farthest_first`; of these candidates the one with the highest estimated silhouette of the rows
    (:func:`weighted_silhouette`, σ² = ``spread2``) is kept, candidates within ``SILHOUETTE_TIE`` of it tie
    and the smallest sum of squares among them wins (then the earlier candidate).
    Why not the smallest sum of squares alone: with k above the number of well-separated groups (EC: 8 kinds,
    three of 2–5 rows) it splits the large kinds before it separates the small distinct ones; those splits
    lower the silhouette (docs/results/gold/README.md §5, "Choosing among the restarts")."""
    from sklearn.cluster import KMeans

    w = np.asarray(w, np.float64)
    k = int(k)
    states = np.random.default_rng(int(seed)).integers(2**31 - 1, size=restarts)
    fits = [KMeans(k, init="k-means++", n_init=1, random_state=int(s)).fit(T, sample_weight=w) for s in states]
    start = farthest_first(T, w, k)
    if start is not None:
        fits.append(KMeans(k, init=start, n_init=1).fit(T, sample_weight=w))
    sil = np.array([weighted_silhouette(T, f.labels_, w, spread2) for f in fits])
    tied = np.flatnonzero(sil >= sil.max() - SILHOUETTE_TIE)
    best = min(tied, key=lambda i: (fits[i].inertia_, i))
    return fits[best].labels_.astype(np.int64)


def within_spread(sites: list[SiteResult], mean: np.ndarray, std: np.ndarray, T: np.ndarray, w: np.ndarray
                  ) -> float:
    """σ² = (Σ_rows ‖(x − μ)/σ‖² − Σ_i w_i ‖T_i‖²) / Σ_i w_i: the rows' mean squared distance to their
    micro-cluster's centroid, in working units, from the shipped column sums (Σ_rows ‖(x − μ)/σ‖² =
    Σ_r (Σx² − 2μ_r Σx + n μ_r²) / σ_r²) and the centroids (the within/between split of the sum of squares)."""
    total = sum(float(((s.stats["sumsq"] - 2 * mean * s.stats["sum"] + float(s.stats["n"][0]) * mean**2)
                       / std**2).sum()) for s in sites)
    return max(total - float((w[:, None] * T**2).sum()), 0.0) / max(float(w.sum()), 1.0)


def _auto_k_kmeans(T: np.ndarray, w: np.ndarray, seed: int, spread2: float) -> tuple[int, np.ndarray, dict]:
    """k = auto with the k-means server step: :func:`kmeans_server` for every k in 2..min(10, N − 1); the
    highest estimated silhouette of the rows (:func:`weighted_silhouette` with σ² = ``spread2``) wins, ties
    to the smaller k. (The centroids' own silhouette, σ² = 0, ignores the spread inside the micro-clusters,
    sees them far apart and picks too many clusters on small sites: docs/results/gold/server-step.md.)
    Each k's partition is the smallest sum of squares, not :func:`separated_kmeans`: choosing it by the
    silhouette as well makes the silhouettes of different k incomparable (EC's k = auto fell from .593 to .270).
    """
    cands = list(range(2, min(AUTO_MAX_K, len(T) - 1) + 1)) or [min(2, len(T))]
    scores, labs = {}, {}
    for c in cands:
        labs[c] = kmeans_server(T, w, c, seed)
        scores[c] = weighted_silhouette(T, labs[c], w, spread2)
    best = max(cands, key=lambda c: (round(scores[c], 12), -c))
    return best, labs[best], {"candidates": cands, "silhouette": scores, "chosen": best}


def weighted_silhouette(T: np.ndarray, labels: np.ndarray, w: np.ndarray, spread2: float = 0.0) -> float:
    """Silhouette of the shipped centroids with each centroid standing for its w rows: a(i), b(i) are
    w-weighted mean distances (a point's own weight minus one counts in a(i)); s̄ = Σ w s(i) / Σ w.
    ``spread2`` = σ², the rows' mean squared distance to their micro-cluster's centroid (:func:`within_spread`):
    two rows of micro-clusters i, j then lie E‖x − x′‖² = ‖T_i − T_j‖² + 2σ² apart, and d_ij = √(that)
    (also for two rows of one micro-cluster, √(2σ²)) — the silhouette of the rows, estimated from what the
    sites ship. 0: the centroids' own silhouette (the MCPL + REMC path's k = auto)."""
    D2 = np.maximum((T**2).sum(1)[:, None] - 2 * T @ T.T + (T**2).sum(1)[None], 0.0)
    D = np.sqrt(D2 + 2.0 * spread2)
    ks = np.unique(labels)
    if len(ks) < 2:
        return -1.0
    Wsum = np.stack([(D * (w * (labels == c))[None]).sum(1) for c in ks], axis=1)  # Σ_j∈c w_j d_ij
    size = np.array([w[labels == c].sum() for c in ks])
    own = np.searchsorted(ks, labels)
    Wsum[np.arange(len(T)), own] -= math.sqrt(2.0 * spread2)  # a row is no distance from itself
    n_own = size[own] - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(n_own > 0, Wsum[np.arange(len(T)), own] / n_own, 0.0)
        mean_other = Wsum / size[None]
        mean_other[np.arange(len(T)), own] = np.inf
        b = mean_other.min(axis=1)
        s = np.where(n_own > 0, (b - a) / np.maximum(a, b), 0.0)
    return float((w * s).sum() / w.sum())


def _auto_k(T: np.ndarray, E: np.ndarray, sizes: list[int], counts: np.ndarray, rng: np.random.Generator
            ) -> tuple[int, np.ndarray, dict]:
    """k = auto: REMC for every k in 2..min(10, largest level, distinct label vectors) and for every level
    size in that range; the k with the highest count-weighted silhouette of the centroids wins."""
    n_unique = len(np.unique(E, axis=0))
    top = min(n_unique, len(T) - 1, max(sizes))
    cands = sorted({c for c in [*range(2, min(AUTO_MAX_K, top) + 1), *sizes] if 2 <= c <= top})
    if not cands:
        raise REMCFailure("no k between 2 and the number of distinct granularity-label vectors")
    scores, labs = {}, {}
    for c in cands:
        lab = remc(E, c, rng=rng)
        labs[c] = lab
        scores[c] = weighted_silhouette(T, lab, counts)
    best = max(cands, key=lambda c: (round(scores[c], 12), -c))
    return best, labs[best], {"candidates": cands, "level_sizes": list(sizes), "silhouette": scores, "chosen": best}


# ------------------------------------------------------------------------------------------- apply
def site_labels(site: SiteResult, micro_global: np.ndarray) -> np.ndarray:
    """Global cluster of each of the site's rows, in its row order (−1 for rows the guard dropped)."""
    if len(micro_global) == 0:
        return np.full(len(site.labels), -1, dtype=np.int64)
    return np.where(site.labels >= 0, micro_global[np.maximum(site.labels, 0)], -1)


def nearest_centroid(X: np.ndarray, model: GoldModel) -> np.ndarray:
    """New rows: the nearest global centroid in the analyst's working units (clusters without members skipped)."""
    Z = (np.asarray(X, np.float64) - model.mean) / model.std
    C = model.centroids
    d = (Z**2).sum(1)[:, None] - 2 * Z @ np.nan_to_num(C).T + (np.nan_to_num(C) ** 2).sum(1)[None]
    d[:, ~np.all(np.isfinite(C), axis=1)] = np.inf
    return d.argmin(axis=1)


__all__ = ["ETA", "K0", "K1", "MIN_SIZE", "GUARDS", "GUARD_DEFAULT",
           "CPLResult", "cpl", "CPL", "column_stats", "pooled_scaler", "SiteResult",
           "fcpl_site", "mcpl", "REMCFailure", "remc", "GoldModel", "gold_fit", "site_labels", "nearest_centroid",
           "SERVER_STEPS", "kmeans_server", "separated_kmeans", "farthest_first", "SILHOUETTE_TIE"]
