"""FedDAG in one round, computed at the analyst on what a DC-CFL bundle already holds (algorithms.md §4).

Every site ships its reduced rows X̃ᵢ, its anchor image and its labels (the DC-CFL bundle; nothing more).
The analyst aligns all sites once into the common space (affine DC alignment, §1.4), standardises the pooled
aligned rows, and there computes everything FedDAG's server and clients compute over many rounds:

* data distance (Eqs. 4–6): per (site i, class c) the top-p left singular vectors Uᶜᵢ of the uncentred
  class matrix (p = ``n_basis``, capped at the class size); V′ᵢⱼ꜀ = min_{v∈Uᶜᵢ,x∈Uᶜⱼ} arccos|vᵀx| in degrees,
  90° if c is held by one of the two sites only, 0° if by neither; Wᵢⱼ꜀ = max(ln(nᵢ꜀+ε), ln(nⱼ꜀+ε)) / min(…)
  min–max normalised over all defined (i, j, c) into [1−δ, 1+δ] (weight 1 where undefined);
  Vᵢⱼ = (1/K) Σ꜀ min(V′ᵢⱼ꜀ W′ᵢⱼ꜀, 90°);
* gradient distance (Eq. 3): every site trains the same θ⁰ (an MLP in the common space) for ``warmup_rounds``
  rounds of ``warmup_epochs`` epochs; Δᵢ = the last round's parameter change, kept on one shared random
  ``mask_fraction`` of the coordinates (the official code's 1/50); Gᵢⱼ = arccos cos(Δ̃ᵢ, Δ̃ⱼ) in degrees;
* fusion (Eqs. 7–8): Ĝ, V̂ min–max normalised off the diagonal; Aᵢⱼ = wᵢĜᵢⱼ + (1−wᵢ)V̂ᵢⱼ for i < j, mirrored,
  Aᵢᵢ = 0; w ∈ [0,1]ᴺ minimises L_en = −(1/N) Σᵢ Σⱼ Ãᵢⱼ log Ãᵢⱼ, Ã = row-softmax(s·A), by projected Adam on w
  (the paper's Algorithm 2; the code uses an MLP gate). s = +1 is the printed and coded form; s = −1 (softmax of
  −A, "keep the strongest neighbours") is ``fusion_sign = "minus"``;
* clustering (Eqs. 9–10): agglomerative clustering of A cut at every α of the grid (merges of height ≤ α);
  the paper's loss L = L₁ + λL₂, L₁ = Σ_z |C_z|⁻² Σ_{i,j∈C_z} Aᵢⱼ, L₂ = (1/Z) Σ_z exp(max{0, C̄ − γσ_C − |C_z|}/τ)
  is reported per α; α itself is chosen as DC-CFL's ``t = "auto"`` (issue #15): every distinct cluster over
  the grid and each site's own-rows models are cross-validated on the received rows, α maximises the mean over
  sites of max(cluster accuracy, own accuracy), ties → larger α (α = 1 is the global model); the global model
  is offered to each site only after α is chosen (``alpha_rule``, :func:`choose_alpha`);
* CC-graph (Eqs. 11–14) and dual-encoder training (Eqs. 15–22) of every cluster, done centrally: the primary
  encoder φ¹ and head ψ are trained on the cluster's rows (φ² frozen), the secondary encoder φ² on the rows
  of its top-k source clusters (φ¹, ψ frozen), alternating batch by batch; φ¹ starts from the members'
  averaged warm-up encoders (Eq. 22). ``sharing = False`` (FedDAG†) trains φ² on the cluster's own rows.
  A cluster with no source cluster has no φ² to train and keeps its one-encoder model; a cluster with one
  uses its dual encoder only where that cross-validates better over its members (``sharing_selection``).
* each site is then sent its cluster's model, the global model, or its own rows' model — whichever
  cross-validates best (the global one only when strictly better than its cluster's), with
  the estimates (n, 95 % CI) DC-CFL shows (:mod:`core.learn.cluster_models`, shared with DC-CFL).

One-encoder cluster models (FedDAG*), the cross-validation and the per-site choice are DC-CFL's per-cluster
alignment, batched training and per-site class-prior correction (core.learn.cluster_models).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError
from ...learn.alignment import AnchorBasis
from ...learn.client_clustering import cut_tree
from ...learn.clinical_metrics import selection_score
from ...learn.cluster_models import (
    ALIGNMENT_DEFAULTS,
    LEARNER_DEFAULTS,
    PRIOR_DEFAULTS,
    SELECTION_DEFAULTS,
    Selection,
    adjust_proba,
    bundle_own_cv,
    cross_validate,
    cross_validate_linear,
    cross_validate_si,
    fit_groups,
    fit_site_intercept_groups,
    is_si_key,
    new_selection,
    oof_proba,
    opt_int,
    pick_own,
    prior_logit,
    shared_key,
    si_key,
    site_estimates,
)
from ...learn.mlp import BatchedMLP, MLPWeights, init_weights
from ..dc_analysis import chosen_oof, site_gate

ALPHA_GRID = tuple(round(0.05 * i, 2) for i in range(1, 21))
LINKAGES = ("single", "complete", "weighted", "average")
VIEWS = ("fused", "data", "gradient", "pacfl")

DEFAULTS: dict = {
    # data distance (Eqs. 4–6)
    "n_basis": 3, "delta": 0.5, "epsilon": 1.0, "angle": "basis",
    # gradient distance (Eq. 3): official code's local optimiser
    "warmup_rounds": 2, "warmup_epochs": 10, "warmup_lr": 0.01, "warmup_momentum": 0.5,
    "warmup_weight_decay": 1e-4, "warmup_batch_size": 32, "mask_fraction": 0.02,
    # fusion (Eqs. 7–8)
    "view": "fused", "fusion_sign": "plus", "fusion_steps": 100, "fusion_lr": 0.05,
    # clustering (Eqs. 9–10)
    "alpha": "auto", "alpha_grid": list(ALPHA_GRID), "linkage": "weighted", "holdout": 0.2,
    "loss_lambda": 0.01, "loss_gamma": 1.0, "loss_tau": 1.0,
    # models: "single" = FedDAG*, "dual" = FedDAG (sharing) / FedDAG† (no sharing)
    "encoder": "dual", "sharing": True, "top_k": 2, "warm_start": True, "sharing_selection": True,
    "global_candidate": True, "alpha_rule": "cluster",
    "seed": 0, **SELECTION_DEFAULTS, **PRIOR_DEFAULTS, **ALIGNMENT_DEFAULTS, **LEARNER_DEFAULTS,
}



def _stage(control: JobControl, start: float, stop: float, words: str) -> JobControl:
    """A sub-control whose progress lines start with the stage in plain words ("choosing the groups of sites:
    epoch 204 of 800"), so a long inner loop still says what it is for."""
    sub = control.sub(start, stop)
    sub.phase(words)
    return sub

def settings_with(**overrides) -> dict:
    """DEFAULTS updated by ``overrides`` (unknown keys are an error)."""
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"unknown FedDAG setting(s): {', '.join(sorted(unknown))}")
    s = {**DEFAULTS, **overrides}
    if s["view"] not in VIEWS:
        raise ConfigError(f"view must be one of {', '.join(VIEWS)}")
    if s["linkage"] not in LINKAGES:
        raise ConfigError(f"linkage must be one of {', '.join(LINKAGES)}")
    if s["fusion_sign"] not in ("plus", "minus"):
        raise ConfigError("fusion_sign must be 'plus' (softmax of +A, as printed) or 'minus'")
    if s["angle"] not in ("basis", "subspace"):
        raise ConfigError("angle must be 'basis' (Eq. 4 as printed) or 'subspace' (smallest principal angle)")
    if s["alpha_rule"] not in ALPHA_RULES:
        raise ConfigError(f"alpha_rule must be one of {', '.join(ALPHA_RULES)}")
    if s["encoder"] not in ("single", "dual"):
        raise ConfigError("encoder must be 'single' (FedDAG*) or 'dual'")
    return s


# ---------------------------------------------------------------------------------------------- data distance
def class_subspaces(X: np.ndarray, y: np.ndarray, n_classes: int, n_basis: int) -> list[np.ndarray | None]:
    """Uᶜ per class c: top-min(p, n꜀) left singular vectors of the uncentred d × n꜀ matrix Xᶜᵀ (Eq. 4 input)."""
    out: list[np.ndarray | None] = []
    for c in range(n_classes):
        Xc = np.asarray(X[y == c], np.float64)
        if Xc.shape[0] == 0:
            out.append(None)
            continue
        U, _, _ = np.linalg.svd(Xc.T, full_matrices=False)
        out.append(U[:, :min(int(n_basis), Xc.shape[0])])
    return out


def principal_angle(U: np.ndarray, V: np.ndarray, angle: str = "basis") -> float:
    """Eq. 4 for one pair: min over basis vectors v ∈ U, x ∈ V of arccos(|vᵀx| / ‖v‖‖x‖), in degrees
    (``angle = "subspace"``: the smallest principal angle arccos σ_max(UᵀV) of orthonormal U, V)."""
    Un = U / np.linalg.norm(U, axis=0, keepdims=True)
    Vn = V / np.linalg.norm(V, axis=0, keepdims=True)
    M = Un.T @ Vn
    cos = np.linalg.svd(M, compute_uv=False)[0] if angle == "subspace" else np.max(np.abs(M))
    return float(np.degrees(np.arccos(np.clip(cos, 0.0, 1.0))))


def class_angles(subspaces: list[list[np.ndarray | None]], n_classes: int, angle: str = "basis") -> np.ndarray:
    """V′ (N, N, K) in degrees: Eq. 4 where both sites hold c, 90° where one does, 0° where neither.

    ``angle = "basis"``: Eq. 4 as printed and coded, the smallest angle between two basis vectors (an upper bound
    of the smallest principal angle that depends on the bases chosen); ``"subspace"``: the smallest principal
    angle arccos σ_max(UᵀV), the same for any orthonormal bases of the two subspaces."""
    N = len(subspaces)
    out = np.zeros((N, N, n_classes))
    for c in range(n_classes):
        holders = [i for i in range(N) if subspaces[i][c] is not None]
        has = np.zeros(N, bool)
        has[holders] = True
        out[:, :, c] = 90.0 * (has[:, None] ^ has[None, :])
        if len(holders) < 2:
            continue
        d = subspaces[holders[0]][c].shape[0]
        p = max(subspaces[i][c].shape[1] for i in holders)
        S = np.zeros((len(holders), d, p))
        for a, i in enumerate(holders):
            U = subspaces[i][c]
            S[a, :, :U.shape[1]] = U / np.linalg.norm(U, axis=0, keepdims=True)
        M = np.einsum("adp,bdq->abpq", S, S)
        cos = np.linalg.svd(M, compute_uv=False)[..., 0] if angle == "subspace" else np.abs(M).max(axis=(2, 3))
        ang = np.degrees(np.arccos(np.clip(cos, 0.0, 1.0)))
        np.fill_diagonal(ang, 0.0)
        out[np.ix_(holders, holders, [c])] = ang[:, :, None]
    return out


def data_distance(angles: np.ndarray, counts: np.ndarray, delta: float = 0.5, epsilon: float = 1.0) -> np.ndarray:
    """Eqs. 5–6: Vᵢⱼ = (1/K) Σ꜀ min(V′ᵢⱼ꜀ W′ᵢⱼ꜀, 90°), W′ = min–max of the log-count ratio into [1−δ, 1+δ]."""
    N, _, K = angles.shape
    counts = np.asarray(counts, np.float64)
    lg = np.log(counts + float(epsilon))
    both = (counts[:, None, :] > 0) & (counts[None, :, :] > 0) & ~np.eye(N, dtype=bool)[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.maximum(lg[:, None, :], lg[None, :, :]) / np.minimum(lg[:, None, :], lg[None, :, :])
    W = np.ones_like(angles)
    if both.any():
        r = ratio[both]
        lo, hi = float(r.min()), float(r.max())
        W[both] = 1.0 if hi - lo <= 1e-12 else (1.0 - delta) + 2.0 * delta * (r - lo) / (hi - lo)
    V = np.minimum(angles * W, 90.0).sum(axis=2) / K
    np.fill_diagonal(V, 0.0)
    return V


def whole_client_distance(rows: list[np.ndarray], n_basis: int) -> np.ndarray:
    """PACFL-style proximity: top-p left singular vectors of each site's whole uncentred matrix, no labels;
    Pᵢⱼ = arccos max|uᵀv| in degrees (the smallest angle between basis vectors)."""
    subs = [[np.linalg.svd(np.asarray(X, np.float64).T, full_matrices=False)[0][:, :min(n_basis, len(X))]]
            for X in rows]
    P = class_angles(subs, 1)[:, :, 0]
    return P


# ---------------------------------------------------------------------------------------------- gradient distance
def _flat(m: MLPWeights) -> np.ndarray:
    return np.concatenate([np.concatenate([w.ravel(), b.ravel()]) for w, b in zip(m.weights, m.biases, strict=True)])


def warmup_updates(groups: list[tuple[np.ndarray, np.ndarray]], n_classes: int, s: dict,
                   control: JobControl | None = None) -> tuple[np.ndarray, list[MLPWeights], np.ndarray]:
    """Eq. 3 inputs: all sites start from one θ⁰, train ``warmup_rounds`` × ``warmup_epochs`` epochs; returns
    (Δ̃ (N, k): last round's change on the shared mask, the warmed-up models, the mask)."""
    control = ensure(control)
    d = groups[0][0].shape[1]
    layers = [d, *[int(h) for h in s["hidden"]], n_classes]
    theta0 = init_weights(layers, int(s["seed"]), 10_007)
    models = [theta0] * len(groups)
    before = models
    R = int(s["warmup_rounds"])
    for r in range(R):
        before = models
        learner = BatchedMLP(tuple(s["hidden"]), lr=float(s["warmup_lr"]), momentum=float(s["warmup_momentum"]),
                             weight_decay=float(s["warmup_weight_decay"]), batch_size=int(s["warmup_batch_size"]),
                             epochs=int(s["warmup_epochs"]), random_state=int(s["seed"]) * 31 + r)
        models = learner.fit(groups, n_classes, init=models, control=control.sub(r / R, (r + 1) / R)).models_
    D = _flat(theta0).size
    k = max(1, int(round(float(s["mask_fraction"]) * D)))
    mask = np.sort(np.random.default_rng([int(s["seed"]), 7]).choice(D, size=k, replace=False))
    delta = np.stack([(_flat(a) - _flat(b))[mask] for a, b in zip(models, before, strict=True)])
    return delta.astype(np.float64), models, mask


def gradient_distance(delta: np.ndarray) -> np.ndarray:
    """Eq. 3: Gᵢⱼ = arccos(⟨Δ̃ᵢ, Δ̃ⱼ⟩ / ‖Δ̃ᵢ‖‖Δ̃ⱼ‖) in degrees (a zero update counts as orthogonal)."""
    norms = np.linalg.norm(delta, axis=1)
    unit = delta / np.where(norms > 0, norms, 1.0)[:, None]
    G = np.degrees(np.arccos(np.clip(unit @ unit.T, -1.0, 1.0)))
    zero = norms <= 0
    G[zero, :] = G[:, zero] = 90.0
    np.fill_diagonal(G, 0.0)
    return G


# ---------------------------------------------------------------------------------------------- fusion
def minmax_offdiag(M: np.ndarray) -> np.ndarray:
    """Min–max normalise the off-diagonal entries into [0, 1]; the diagonal is 0."""
    M = np.asarray(M, np.float64)
    off = ~np.eye(len(M), dtype=bool)
    out = np.zeros_like(M)
    if off.any():
        lo, hi = M[off].min(), M[off].max()
        out[off] = 0.0 if hi - lo <= 1e-12 else (M[off] - lo) / (hi - lo)
    return out


def fusion_entropy(w: np.ndarray, G_hat: np.ndarray, V_hat: np.ndarray,
                   sign: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Eq. 8 and its gradient in w: (L_en, ∂L_en/∂w, A). With z = s·A and row entropies Hᵢ,
    ∂Hᵢ/∂zᵢⱼ = −Ãᵢⱼ(log Ãᵢⱼ + Hᵢ); A depends on wᵢ through the entries (i, j > i) and their mirrors."""
    U = np.triu(w[:, None] * G_hat + (1.0 - w[:, None]) * V_hat, k=1)
    A = U + U.T
    z = sign * A
    z = z - z.max(axis=1, keepdims=True)
    P = np.exp(z)
    P /= P.sum(axis=1, keepdims=True)
    logP = np.log(np.maximum(P, 1e-300))
    Hrow = -(P * logP).sum(axis=1)
    N = len(w)
    M = sign * (-P * (logP + Hrow[:, None])) / N
    grad = np.triu((M + M.T) * (G_hat - V_hat), k=1).sum(axis=1)
    return float(Hrow.sum() / N), grad, A


def fuse(G_hat: np.ndarray, V_hat: np.ndarray, *, sign: str = "plus", steps: int = 100,
         lr: float = 0.05) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Eqs. 7–8: learn w ∈ [0,1]ᴺ (start 0.5; Adam, β = (0.9, 0.999), projected onto [0, 1] after every step)
    minimising the row-softmax entropy of s·A; returns (A, w, the loss after every step)."""
    G_hat, V_hat = np.asarray(G_hat, np.float64), np.asarray(V_hat, np.float64)
    sg = 1.0 if sign == "plus" else -1.0
    w = np.full(len(G_hat), 0.5)
    m, v = np.zeros_like(w), np.zeros_like(w)
    b1, b2, eps = 0.9, 0.999, 1e-8
    history = []
    for t in range(1, int(steps) + 1):
        loss, g, _ = fusion_entropy(w, G_hat, V_hat, sg)
        history.append(loss)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = np.clip(w - float(lr) * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps), 0.0, 1.0)
    loss, _, A = fusion_entropy(w, G_hat, V_hat, sg)
    history.append(loss)
    return A, w, history


# ---------------------------------------------------------------------------------------------- clustering
def partitions(A: np.ndarray, grid: list[float], method: str = "weighted") -> dict[float, np.ndarray]:
    """Agglomerative clustering of the distance matrix A, cut at every α (merges of height ≤ α kept)."""
    N = len(A)
    if N < 2:
        return {float(a): np.zeros(N, np.int64) for a in grid}
    sym = 0.5 * (A + A.T)
    np.fill_diagonal(sym, 0.0)
    from scipy.cluster.hierarchy import linkage  # (scipy: not on a site's export path)
    from scipy.spatial.distance import squareform

    Z = linkage(squareform(sym, checks=False), method=method)
    return {float(a): cut_tree(Z, N, float(a)) for a in grid}


def paper_loss(A: np.ndarray, labels: np.ndarray, lam: float = 0.01, gamma: float = 1.0,
               tau: float = 1.0) -> tuple[float, float, float]:
    """Eqs. 9–10: (L, L₁, L₂)."""
    labels = np.asarray(labels)
    ids = np.unique(labels)
    sizes = np.array([np.sum(labels == z) for z in ids], np.float64)
    L1 = float(sum(A[np.ix_(labels == z, labels == z)].sum() / n ** 2 for z, n in zip(ids, sizes, strict=True)))
    cbar, sd = len(labels) / len(ids), float(sizes.std())
    L2 = float(np.mean(np.exp(np.maximum(0.0, cbar - gamma * sd - sizes) / tau)))
    return L1 + lam * L2, L1, L2


def groups_of(labels: np.ndarray) -> list[tuple[int, ...]]:
    labels = np.asarray(labels)
    return [tuple(np.flatnonzero(labels == z).tolist()) for z in range(int(labels.max()) + 1)]


def _rows_of(g: Geometry, ys: list[np.ndarray], sites, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Stacked common-space rows and labels of ``sites`` (``rows[i]``: site i's subset; ``None`` = all)."""
    sel = [np.arange(len(ys[i])) if rows is None else np.asarray(rows[i]) for i in sites]
    return (np.vstack([g.rows[i][r] for i, r in zip(sites, sel, strict=True)]).astype(np.float32),
            np.concatenate([ys[i][r] for i, r in zip(sites, sel, strict=True)]))


def dual_inputs(g: Geometry, ys: list[np.ndarray], clusters: list[tuple[int, ...]], sources: list[list[int]],
                z: int, sharing: bool, rows=None) -> tuple[tuple[np.ndarray, np.ndarray], tuple | None]:
    """(own rows, secondary-encoder rows) of cluster z: the secondary trains on its source clusters' rows when
    ``sharing`` (None when it has no source), else on its own rows (FedDAG†)."""
    own = _rows_of(g, ys, clusters[z], rows)
    if not sharing:
        return own, own
    if not sources[z]:
        return own, None
    return own, _rows_of(g, ys, [i for q in sources[z] for i in clusters[q]], rows)


def cross_validate_dual(sel: Selection, g: Geometry, bundles, clusters: list[tuple[int, ...]],
                        sources: list[list[int]], candidates: list[int], n_classes: int, s: dict,
                        control: JobControl | None = None) -> dict[int, np.ndarray]:
    """Correct predictions per site (summed over ``sel``'s splits) of cluster z's dual encoder, for every z in
    ``candidates``: trained on the training folds of its members (and of its sources' members), scored on the
    members' test folds with the same prior correction as :func:`~core.learn.cluster_models.cross_validate`
    (their probabilities kept in ``sel.oof`` under :func:`dual_key`). One batched :func:`train_dual` over all
    (split, cluster) pairs; no warm start (the warm-up saw every row)."""
    ys = [b.arrays["y"].astype(np.int64) for b in bundles]
    jobs, own, src = [], [], []
    for si, (tr, _) in enumerate(sel.splits):
        for z in candidates:
            o, sp = dual_inputs(g, ys, clusters, sources, z, bool(s["sharing"]), tr)
            if len(o[1]) == 0:
                continue
            jobs.append((si, z))
            own.append(o)
            src.append(sp)
    out = {z: np.zeros(len(bundles)) for z in candidates}
    for z in candidates:   # a cached selection may hold another fit's dual encoders under the same key
        for i in clusters[z]:
            sel.oof.pop((dual_key(z), i), None)
    if not jobs:
        return out
    models = train_dual(own, src, n_classes, s, control=control)
    use_prior = s["prior_correction"] and s["prior_in_selection"]
    for (si, z), model, (_, yo) in zip(jobs, models, own, strict=True):
        tr, te = sel.splits[si]
        trained = np.bincount(yo, minlength=n_classes)
        for i in clusters[z]:
            if len(te[i]) == 0:
                continue
            p = model.predict_proba(g.rows[i][te[i]])
            if use_prior:
                p = adjust_proba(p.astype(np.float64), prior_logit(np.bincount(ys[i][tr[i]], minlength=n_classes),
                                                                   trained, float(s["prior_smoothing"])))
            out[z][i] += float(np.sum(p.argmax(axis=1) == ys[i][te[i]]))
            sel.oof.setdefault((dual_key(z), i), []).append((te[i], p.astype(np.float32)))
    return out


def dual_score(sel: Selection, bundles, z: int, sites: list[int]) -> np.ndarray:
    """Per site of ``sites``, ``sel.metric`` of cluster z's dual encoder on its out-of-fold predictions."""
    out = []
    for i in sites:
        got = oof_proba(sel, dual_key(z), i, sel.n_classes)
        out.append(0.0 if got is None else selection_score(sel.metric, bundles[i].arrays["y"][got[0]], got[1]))
    return np.asarray(out)


def dual_key(z: int) -> tuple:
    """The key of cluster z's dual encoder among the selection's out-of-fold predictions."""
    return ("dual", z)


# ---------------------------------------------------------------------------------------------- CC-graph
def cc_graph(clusters: list[tuple[int, ...]], counts: np.ndarray, angles: np.ndarray,
             top_k: int = 2) -> tuple[np.ndarray, list[list[int]]]:
    """Eqs. 11–14: H_pq = Σ꜀ d_p꜀ s_q꜀ Γ̄_pq꜀ (H_pp = −∞); each p keeps its top-k q with H_pq > 0 as sources."""
    counts = np.asarray(counts)
    N, K = counts.shape
    rank = np.zeros((N, K))
    present = counts > 0
    for i in range(N):
        cls = np.flatnonzero(present[i])
        order = cls[np.argsort(counts[i, cls], kind="stable")]
        rank[i, order] = np.arange(len(order))
    m = present.sum(axis=1)
    demand_i = np.where(present, m[:, None] - rank, 0.0)
    supply_i = np.where(present, rank + 1.0, 0.0)
    Z = len(clusters)
    d = np.stack([demand_i[list(c)].sum(axis=0) for c in clusters])
    sup = np.stack([supply_i[list(c)].mean(axis=0) for c in clusters])
    gamma = 1.0 - np.clip(angles, 0.0, 90.0) / 90.0
    H = np.full((Z, Z), -np.inf)
    for p in range(Z):
        for q in range(Z):
            if p != q:
                gbar = gamma[np.ix_(clusters[p], clusters[q])].mean(axis=(0, 1))
                H[p, q] = float(np.sum(d[p] * sup[q] * gbar))
    sources = []
    for p in range(Z):
        order = [q for q in np.argsort(-H[p], kind="stable") if q != p and H[p, q] > 0]
        sources.append([int(q) for q in order[:int(top_k)]])
    return H, sources


# ---------------------------------------------------------------------------------------------- dual encoder
@dataclass
class DualEncoder:
    """F(x) = softmax(ψ([φ¹(x), φ²(x)])) with φ = ReLU MLP encoders (Eq. 15); float32 numpy weights."""

    enc1: list[tuple[np.ndarray, np.ndarray]]
    enc2: list[tuple[np.ndarray, np.ndarray]]
    head: tuple[np.ndarray, np.ndarray]

    @staticmethod
    def _enc(X: np.ndarray, layers) -> np.ndarray:
        h = X
        for W, b in layers:
            h = np.maximum(h @ W + b, 0.0)
        return h

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, np.float32)
        z = np.hstack([self._enc(X, self.enc1), self._enc(X, self.enc2)]) @ self.head[0] + self.head[1]
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


def _ce(logits, y, mask):
    """Σ_groups of the masked mean cross-entropy of each group's batch."""
    import torch

    ce = -torch.log_softmax(logits, dim=2).gather(2, y[:, :, None])[:, :, 0]
    return ((ce * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1.0)).sum()


def _uniform(rng: np.random.Generator, fan_in: int, shape) -> np.ndarray:
    b = 1.0 / math.sqrt(fan_in)
    return rng.uniform(-b, b, size=shape).astype(np.float32)


def dual_grads(x, y, mask, act, p1: list, p2: list, ph: list, with_loss: bool = False):
    """Hand-written backward pass of one parallel primary + secondary step (Eqs. 17 and 20).

    x, y: (G, 2B, d) and (G, 2B), the first B slots the clusters' own rows, the last B their source rows;
    mask/act: (G, B) weights of the own/source slots. Loss = Σ_g [mean CE of F_g on own rows, gradient to φ¹, ψ
    only] + [mean CE on source rows, gradient to φ² only]. Returns the gradients of p1 + ph + p2, in that order
    (and, ``with_loss``, the (G,) mean CE on the own rows).
    """
    import torch

    B = mask.shape[1]

    def forward(P, inp):
        acts = [inp]
        for li in range(0, len(P), 2):
            acts.append(torch.relu(torch.baddbmm(P[li + 1][:, None, :], acts[-1], P[li])))
        return acts

    def backward(P, acts, dh):
        grads = [None] * len(P)
        for li in reversed(range(0, len(P), 2)):
            dpre = dh * (acts[li // 2 + 1] > 0)
            grads[li] = torch.bmm(acts[li // 2].transpose(1, 2), dpre)
            grads[li + 1] = dpre.sum(dim=1)
            if li:
                dh = torch.bmm(dpre, P[li].transpose(1, 2))
        return grads

    a1, a2 = forward(p1, x), forward(p2, x)
    H = a1[-1].shape[2]
    Wc, bc = ph
    K = Wc.shape[2]

    losses = []

    def dlogits(feat, yy, w):
        logits = torch.baddbmm(bc[:, None, :], feat, Wc)
        prob = torch.softmax(logits, dim=2)
        wn = w / w.sum(dim=1, keepdim=True).clamp_min(1.0)
        losses.append(-(prob.gather(2, yy[:, :, None])[:, :, 0].clamp_min(1e-30).log() * wn).sum(dim=1))
        prob -= torch.nn.functional.one_hot(yy, K).to(prob.dtype)
        return prob * wn[:, :, None]

    f_own = torch.cat([a1[-1][:, :B], a2[-1][:, :B]], dim=2)
    d_own = dlogits(f_own, y[:, :B], mask)
    gWc, gbc = torch.bmm(f_own.transpose(1, 2), d_own), d_own.sum(dim=1)
    g1 = backward(p1, [t[:, :B] for t in a1], torch.bmm(d_own, Wc[:, :H].transpose(1, 2)))
    f_src = torch.cat([a1[-1][:, B:], a2[-1][:, B:]], dim=2)
    d_src = dlogits(f_src, y[:, B:], act)
    g2 = backward(p2, [t[:, B:] for t in a2], torch.bmm(d_src, Wc[:, H:].transpose(1, 2)))
    if with_loss:
        return [*g1, gWc, gbc, *g2], losses[0]
    return [*g1, gWc, gbc, *g2]


def train_dual(own: list[tuple[np.ndarray, np.ndarray]], source: list[tuple[np.ndarray, np.ndarray] | None],
               n_classes: int, s: dict, *, init_primary: list[list[tuple[np.ndarray, np.ndarray]]] | None = None,
               control: JobControl | None = None, on_epoch=None) -> list[DualEncoder]:
    """Centralised Eqs. 16–21 for Z clusters at once. Per epoch, cluster z takes ⌈n_z/B⌉ steps; each step is
    one primary SGD step on a batch of its own rows (φ¹, ψ; φ² frozen) and, if it has sources, one secondary
    step on a batch of its source rows (φ²; φ¹, ψ frozen). Momentum SGD; clusters with no batch left sit out.
    ``on_epoch(epoch, losses)``: after each epoch, the (Z,) mean cross-entropy on the clusters' own rows."""
    import torch

    control = ensure(control)
    Zc = len(own)
    d = own[0][0].shape[1]
    hidden = [int(h) for h in s["hidden"]]
    B, lr, mom, E = int(s["batch_size"]), float(s["lr"]), float(s["momentum"]), int(s["epochs"])
    seed = int(s["seed"])
    n = np.array([len(y) for _, y in own])
    order = np.argsort(-n, kind="stable")           # largest first: active clusters are a prefix
    own = [own[z] for z in order]
    source = [source[z] for z in order]
    n = n[order]
    dims = [d, *hidden]

    def enc_init(z: int, stream: int, start=None):
        rng = np.random.default_rng([seed, int(order[z]), stream])
        layers = []
        for li, (fi, fo) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
            if start is not None:
                layers.append((np.asarray(start[li][0], np.float32), np.asarray(start[li][1], np.float32)))
            else:
                layers.append((_uniform(rng, fi, (fi, fo)), _uniform(rng, fi, (fo,))))
        return layers

    e1 = [enc_init(z, 0, None if init_primary is None else init_primary[order[z]]) for z in range(Zc)]
    e2 = [enc_init(z, 1) for z in range(Zc)]
    hd = []
    for z in range(Zc):
        rng = np.random.default_rng([seed, int(order[z]), 2])
        hd.append((_uniform(rng, 2 * dims[-1], (2 * dims[-1], n_classes)), _uniform(rng, 2 * dims[-1], (n_classes,))))

    def stack(get):
        return torch.tensor(np.stack([get(z) for z in range(Zc)]))

    P1 = [stack(lambda z, li=li, k=k: e1[z][li][k]) for li in range(len(dims) - 1) for k in (0, 1)]
    P2 = [stack(lambda z, li=li, k=k: e2[z][li][k]) for li in range(len(dims) - 1) for k in (0, 1)]
    PH = [stack(lambda z, k=k: hd[z][k]) for k in (0, 1)]
    bufs = {id(p): torch.zeros_like(p) for p in P1 + P2 + PH}

    def pad(parts):
        m = max(len(y) for _, y in parts)
        X = np.zeros((Zc, m + 1, d), np.float32)
        Y = np.zeros((Zc, m + 1), np.int64)
        for z, (x, y) in enumerate(parts):
            X[z, :len(y)] = x
            Y[z, :len(y)] = y
        return torch.from_numpy(X), torch.from_numpy(Y)

    Xo, Yo = pad(own)
    has_src = np.array([sp is not None and len(sp[1]) > 0 for sp in source])
    Xs, Ys = pad([sp if sp is not None and len(sp[1]) else own[z] for z, sp in enumerate(source)])
    ns = np.array([len(sp[1]) if sp is not None and len(sp[1]) else 1 for sp in source])

    def sgd(params, grads, a):
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                buf = bufs[id(p)]
                buf[:a].mul_(mom).add_(g[:a])
                p[:a].sub_(lr * buf[:a])

    steps = np.ceil(n / B).astype(int)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        S = int(steps.max())
        dummy = Xo.shape[1] - 1
        src_on = torch.from_numpy(has_src.astype(np.float32))
        for ep in range(E):
            control.step(ep / E, f"dual-encoder training, epoch {ep + 1}/{E}")
            ep_loss, ep_steps = np.zeros(Zc), np.zeros(Zc)
            idx = np.full((Zc, S * B), dummy, np.int64)
            msk = np.zeros((Zc, S * B), np.float32)
            sidx = np.zeros((Zc, S * B), np.int64)
            for z in range(Zc):
                idx[z, :n[z]] = np.random.default_rng([seed, int(order[z]), 3, ep]).permutation(n[z])
                msk[z, :n[z]] = 1.0
                take = steps[z] * B
                sidx[z, :take] = np.random.default_rng([seed, int(order[z]), 4, ep]).permutation(
                    np.resize(np.arange(ns[z]), max(ns[z], take)))[:take]
            idx_t, msk_t, sidx_t = torch.from_numpy(idx), torch.from_numpy(msk), torch.from_numpy(sidx)
            for st in range(S):
                a = int(np.sum(steps > st))
                sl = slice(st * B, (st + 1) * B)
                ar = torch.arange(a)[:, None]
                ti, tsi = idx_t[:a, sl], sidx_t[:a, sl]
                x = torch.cat([Xo[:a][ar, ti], Xs[:a][ar, tsi]], dim=1)
                y = torch.cat([Yo[:a][ar, ti], Ys[:a][ar, tsi]], dim=1)
                mask = msk_t[:a, sl]
                act = src_on[:a, None].expand(a, B)
                p1, p2, ph = [p[:a] for p in P1], [p[:a] for p in P2], [p[:a] for p in PH]
                grads, loss = dual_grads(x, y, mask, act, p1, p2, ph, with_loss=True)
                sgd(P1 + PH + P2, grads, a)
                ep_loss[:a] += loss.detach().numpy()
                ep_steps[:a] += 1
            if on_epoch is not None:
                back = np.empty(Zc)
                back[order] = ep_loss / np.maximum(ep_steps, 1)
                on_epoch(ep, back)
    finally:
        torch.set_num_threads(threads)
    out: list[DualEncoder | None] = [None] * Zc
    for z in range(Zc):
        def lay(P, z=z):
            return [(P[li][z].detach().numpy().copy(), P[li + 1][z].detach().numpy().copy())
                    for li in range(0, len(P), 2)]
        out[int(order[z])] = DualEncoder(lay(P1), lay(P2), (PH[0][z].detach().numpy().copy(),
                                                            PH[1][z].detach().numpy().copy()))
    return out  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------- the pipeline
@dataclass
class Geometry:
    """The common space and the three distance matrices (computed once, shared by every variant)."""

    basis: AnchorBasis
    maps: dict
    mean: np.ndarray
    scale: np.ndarray
    rows: list[np.ndarray]          # standardised aligned rows per site
    counts: np.ndarray              # (N, K)
    angles: np.ndarray              # V′ (N, N, K)
    V: np.ndarray
    G: np.ndarray
    P: np.ndarray                   # PACFL-style whole-client distance
    warm: list[MLPWeights]
    seconds: dict = field(default_factory=dict)


def geometry(bundles, n_classes: int, s: dict, control: JobControl | None = None, *,
             with_pacfl: bool = False) -> Geometry:
    """Align every site into one common space and compute V (Eqs. 4–6), G (Eq. 3) and, optionally, PACFL's P."""
    control = ensure(control)
    t0 = time.perf_counter()
    basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=s["alignment"] == "affine")
    everyone = tuple(range(len(bundles)))
    maps = basis.align(everyone, s)
    aligned = [maps[i].transform(b.arrays["x_tilde"].astype(np.float64)) for i, b in enumerate(bundles)]
    pooled = np.vstack(aligned)
    mean, scale = pooled.mean(axis=0), pooled.std(axis=0)
    scale[~(scale > 1e-12)] = 1.0
    rows = [((a - mean) / scale) for a in aligned]
    ys = [b.arrays["y"].astype(np.int64) for b in bundles]
    counts = np.stack([np.bincount(y, minlength=n_classes) for y in ys])
    control.step(0.05, "class-wise principal vectors")
    subs = [class_subspaces(X, y, n_classes, int(s["n_basis"])) for X, y in zip(rows, ys, strict=True)]
    angles = class_angles(subs, n_classes, s["angle"])
    V = data_distance(angles, counts, float(s["delta"]), float(s["epsilon"]))
    t1 = time.perf_counter()
    control.step(0.1, "warm-up training for the gradient distance")
    delta, warm, _ = warmup_updates([(X.astype(np.float32), y) for X, y in zip(rows, ys, strict=True)], n_classes, s,
                                    control=control.sub(0.1, 0.95))
    G = gradient_distance(delta)
    t2 = time.perf_counter()
    P = whole_client_distance(rows, int(s["n_basis"])) if with_pacfl else np.zeros_like(V)
    return Geometry(basis, maps, mean, scale, rows, counts, angles, V, G, P, warm,
                    {"align_and_data": t1 - t0, "warmup_and_gradient": t2 - t1})


@dataclass
class FedDAGResult:
    """Clusters, the curve behind α, the paper's loss per α, the cluster models and what each site is sent.

    ``site_models[i]`` = (kind, model): ``"single"`` (its cluster's one-encoder model, a ClusterModel),
    ``"dual"`` (its cluster's dual encoder), ``"global"`` (the model of all sites), ``"site-intercepts"`` /
    ``"global-si"`` (its cluster's or all sites' linear model with site intercepts); all but ``"dual"`` are
    ClusterModels. The shared model is always sent: the site compares it with its own (issue #37).
    ``site_info[i]``: the cross-validated estimates of site i (expected, cluster_model, own_model; may be empty).
    ``oof[i]``: (rows, float32 probabilities) of the model site i is sent, out-of-fold over the selection's splits
    (:func:`~core.methods.dc_analysis.chosen_oof`), or None without a selection."""

    view: str
    matrix: np.ndarray              # the distance the clustering used (A, V̂, Ĝ or P̂)
    weights: np.ndarray | None      # learned w (fused view)
    alpha: float
    clusters: list[tuple[int, ...]]
    curve: dict[float, float]
    loss: dict[float, tuple[float, float, float]]
    n_clusters: dict[float, int]
    alpha_min_loss: float
    sources: list[list[int]]
    H: np.ndarray
    cluster_kind: list[str]         # "single" or "dual" per cluster (dual only where it cross-validated better)
    site_models: list[tuple[str, object]]
    site_info: list[dict]
    selection: dict
    encoder: str
    geometry: Geometry
    settings: dict
    seconds: dict
    oof: list | None = None         # per site, (rows, probabilities) out-of-fold of the model it is sent

    def predict_proba(self, site: int, X_tilde: np.ndarray, site_counts: np.ndarray | None = None) -> np.ndarray:
        """Class probabilities for site ``site``'s reduced rows with the model it is sent, prior-corrected to
        ``site_counts`` if given."""
        kind, model = self.site_models[site]
        s = self.settings
        smooth = float(s["prior_smoothing"])
        if kind != "dual":
            prior = None
            if s["prior_correction"] and site_counts is not None:
                prior = prior_logit(site_counts, model.class_counts, smooth)
            return model.predict_proba(site, np.asarray(X_tilde, np.float64), prior)
        g = self.geometry
        z = next(k for k, c in enumerate(self.clusters) if site in c)
        Zx = (g.maps[site].transform(np.asarray(X_tilde, np.float64)) - g.mean) / g.scale
        proba = model.predict_proba(Zx).astype(np.float64)
        if s["prior_correction"] and site_counts is not None:
            cc = g.counts[list(self.clusters[z])].sum(axis=0)
            proba = adjust_proba(proba, prior_logit(site_counts, cc, smooth))
        return proba


# How α is chosen (``alpha_rule``). "cluster": DC-CFL's rule — per site, the CV accuracy of its cluster's model
# (or its own-rows model under Selection.keeps_own); the model of all sites is offered per site only after α is
# chosen. "best_per_site": per site the better of its cluster's and the all-sites model before averaging (the
# rule of the first record: optimistic, since max(cluster, global) ≥ global makes every finer α score at least
# as well as α = 1). "_1se": Breiman's one-standard-error rule on top.
ALPHA_RULES = ("cluster", "cluster_1se", "best_per_site", "best_per_site_1se")


def choose_alpha(site_curve: dict[float, np.ndarray], rule: str) -> float:
    """α from the per-site CV accuracies s_α (one entry per site) under each α: the largest mean, ties → larger
    α; with a ``_1se`` rule the largest α whose mean is within one standard error of the best's, the SE of the
    paired per-site differences, sd(s_best − s_α)/√S (Breiman's one-standard-error rule)."""
    alphas = sorted(site_curve)
    mean = {a: float(site_curve[a].mean()) for a in alphas}
    best = max(alphas, key=lambda a: (round(mean[a], 12), a))
    if not rule.endswith("_1se"):
        return best
    S = len(site_curve[best])
    ok = []
    for a in alphas:
        d = site_curve[best] - site_curve[a]
        se = float(np.std(d, ddof=1) / math.sqrt(S)) if S > 1 else 0.0
        if mean[a] >= mean[best] - se - 1e-12:
            ok.append(a)
    return max(ok)


def view_matrix(g: Geometry, s: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """The distance the clustering runs on for ``s["view"]``: A (fused), V̂, Ĝ or P̂, all in [0, 1]."""
    if s["view"] == "data":
        return minmax_offdiag(g.V), None
    if s["view"] == "gradient":
        return minmax_offdiag(g.G), None
    if s["view"] == "pacfl":
        return minmax_offdiag(g.P), None
    A, w, _ = fuse(minmax_offdiag(g.G), minmax_offdiag(g.V), sign=s["fusion_sign"], steps=int(s["fusion_steps"]),
                   lr=float(s["fusion_lr"]))
    return A, w


def _cross_validate_candidates(bundles, keyed: dict, g: Geometry, s: dict, K: int, cache: dict, maps: dict,
                               control: JobControl) -> tuple[Selection | None, dict, np.ndarray | None]:
    """Cross-validate every candidate model over the sites' received rows, when there is a choice to make (more
    than one partition over the α grid, or the sites' own-rows models): every distinct cluster (and all sites
    with ``global_candidate``), each group's linear model with site intercepts, the sites' own linear models.
    Returns (the selection, or None without a choice; per α the per-site scores s_α the rule averages; the
    per-site score of the model of all sites, or None without that candidate)."""
    S = len(bundles)
    own_on = bool(s["own_model"])
    everyone = tuple(range(S))
    glob_on = bool(s["global_candidate"]) and S > 1
    seed = int(s["seed"])
    if not (len({tuple(p) for p in keyed.values()}) > 1 or own_on):
        return None, {}, None
    sel = cache.get("selection")
    if sel is None:
        n_rows = [int(b.arrays["y"].shape[0]) for b in bundles]
        sel = cache["selection"] = new_selection(n_rows, s, seed, [bundle_own_cv(b, K) for b in bundles], K)
    distinct = sorted({c for p in keyed.values() for c in p}
                      | ({everyone} if glob_on else set()))
    control.step(0.2, f"cross-validating {len(distinct)} candidate model(s) over {len(sel.splits)} split(s)")
    cross_validate(sel, bundles, distinct, K, s, g.basis, seed=seed, maps=maps,
                   control=_stage(control, 0.2, 0.5, "choosing the groups of sites"))
    if s.get("site_intercepts", True):  # each group's linear model with one intercept per site
        cross_validate_si(sel, bundles, distinct, K, s, g.basis, seed=seed, maps=maps)
    if own_on:
        cross_validate_linear(sel, bundles, K, s, g.basis, maps)
    # the model of all sites: its MLP, or its linear model with site intercepts where that scores better
    g_score = np.array([sel.score_of(shared_key(sel, everyone, i))[i] for i in range(S)]) if glob_on else None
    floor = g_score if s["alpha_rule"].startswith("best_per_site") else None
    site_curve = {a: sel.site_scores(p, own_on, floor) for a, p in keyed.items()} if len(keyed) > 1 else {}
    return sel, site_curve, g_score


def _cluster_encoders(sel: Selection | None, g: Geometry, bundles, clusters, sources, K: int, s: dict,
                      control: JobControl) -> tuple[list[str], dict[int, np.ndarray]]:
    """Each cluster's encoder, "single" or "dual" (``encoder = "dual"``: a cluster with a secondary encoder to train
    — a source cluster when ``sharing``, any without it — and, with ``sharing_selection``, only where its CV score
    over the members is strictly higher), and the dual encoders' per-site correct counts by cluster."""
    Z = len(clusters)
    kind = ["single"] * Z
    dual_correct: dict[int, np.ndarray] = {}
    if s["encoder"] != "dual":
        return kind, dual_correct
    cand = [z for z in range(Z) if sources[z] or not s["sharing"]]
    if sel is None or not cand:
        for z in cand:
            kind[z] = "dual"
        return kind, dual_correct
    # cross-validated also when kept anyway: its sites' numbers are honest
    control.step(0.5, f"cross-validating {len(cand)} dual encoder(s)")
    dual_correct = cross_validate_dual(sel, g, bundles, clusters, sources, cand, K, s,
                                       _stage(control, 0.5, 0.7, "checking the shared encoders"))
    for z in cand:
        m = list(clusters[z])
        if sel.metric == "accuracy":
            better = dual_correct[z][m].sum() > sel.correct[clusters[z]][m].sum()
        else:   # the members' mean metric, as the threshold's rule averages it
            better = dual_score(sel, bundles, z, m).mean() > sel.score_of(clusters[z])[m].mean() + 1e-12
        if not s["sharing_selection"] or better:
            kind[z] = "dual"
    return kind, dual_correct


def _sent_models(sel: Selection, bundles, clusters, kind: list[str], dual_correct: dict, g_score, own_on: bool,
                 glob_on: bool) -> tuple:
    """Which shared model each site is sent, by CV: its cluster's (one-encoder or dual), the model of all sites
    where that scores strictly better, and either's linear model with site intercepts where that does. Returns
    (the cluster model's per-site accuracy, the sent model's, whether each site is sent the model of all sites,
    each site's candidate key — None for a dual encoder —, the analyst's guess of the sites keeping their own)."""
    S = len(bundles)
    everyone = tuple(range(S))
    cluster_of = {i: z for z, c in enumerate(clusters) for i in c}
    cluster_acc = np.array([(dual_correct[cluster_of[i]][i] / max(sel.tested[i], 1)) if kind[cluster_of[i]] ==
                            "dual" else sel.acc(clusters[cluster_of[i]])[i] for i in range(S)])
    # the same in the selection's metric (accuracy by default): what the choices below compare
    cluster_score = cluster_acc if sel.metric == "accuracy" else np.array(
        [dual_score(sel, bundles, cluster_of[i], [i])[0] if kind[cluster_of[i]] == "dual"
         else sel.score_of(clusters[cluster_of[i]])[i] for i in range(S)])
    # the global model is a further candidate of every site: sent where it cross-validates strictly better
    use_global = [bool(glob_on and len(clusters[cluster_of[i]]) < S and g_score[i] > cluster_score[i] + 1e-12)
                  for i in range(S)]
    group_acc = np.where(use_global, sel.acc(everyone), cluster_acc) if glob_on else cluster_acc.copy()
    group_score = np.where(use_global, g_score, cluster_score) if glob_on else cluster_score.copy()
    keys = [shared_key(sel, everyone, i) if use_global[i] else None if kind[cluster_of[i]] == "dual"
            else shared_key(sel, clusters[cluster_of[i]], i)
            for i in range(S)]   # (no paired CV rows are kept for a dual encoder: strict comparison there)
    for i, key in enumerate(keys):   # a group's linear model with site intercepts, where it scores better
        if key is not None and is_si_key(key):
            group_acc[i], group_score[i] = sel.acc(key)[i], sel.score_of(key)[i]
    own_pick, _ = pick_own(sel, group_score, own_on, keys)  # the analyst's guess, for an old workspace
    return cluster_acc, group_acc, use_global, keys, own_pick


def _site_model(i: int, z: int, si: bool, use_global: bool, kind: list[str], keys: list, finals: dict,
                duals: dict, clusters) -> tuple[str, object]:
    """Site i's (kind, model) as :class:`FedDAGResult` ``site_models`` holds it: site intercepts, the model of all
    sites, its cluster ``z``'s dual encoder or its one-encoder model."""
    if si:
        return ("global-si" if use_global else "site-intercepts", finals[keys[i]][i])
    if use_global:
        return ("global", finals[tuple(range(len(keys)))])
    if kind[z] == "dual":
        return ("dual", duals[z])
    return ("single", finals[clusters[z]])


def _site_estimates(sel: Selection | None, i: int, group_acc: float, cluster_acc: float, own_on: bool,
                    own_pick: bool) -> dict:
    """Site i's cross-validated estimates (:func:`site_estimates`, with ``own_pick`` when the analyst guesses it
    keeps its own model); empty without a selection."""
    info: dict = {}
    if sel is not None:
        info = site_estimates(sel, i, group_acc, cluster_acc, own_on)
        if own_pick:
            info.update({"own_pick": True})
    return info


def fit(bundles, classes: list[str], settings: dict | None = None, control: JobControl | None = None,
        geo: Geometry | None = None, cache: dict | None = None, on_epoch=None) -> FedDAGResult:
    """The whole analyst side: geometry → matrix → α (cross-validated, DC-CFL's rule) → CC-graph → cluster models
    → each site's model (its cluster's, or its own rows' when that cross-validates better, as DC-CFL).

    Candidates are cross-validated over every site's received rows (:mod:`core.learn.cluster_models`): every
    distinct cluster over the α grid (α = 1 is the one global cluster) and each site's own-rows models; α
    maximises the mean over sites of the cluster's CV accuracy or the own model's where the site keeps it
    (DC-CFL's rule, ``alpha_rule = "cluster"``; see :func:`choose_alpha` for the others), ties → larger α. With
    ``encoder = "dual"`` a cluster's dual encoder is a further candidate only where it has a secondary encoder to
    train (a source cluster when ``sharing``; always for FedDAG†) and is kept only where its CV accuracy over
    the cluster's members is strictly higher than the one-encoder model's (``sharing_selection``; off: always).
    With ``global_candidate`` the global model (all sites) is a further candidate of every site once α is chosen,
    sent where it cross-validates strictly better than its cluster's, so each site's pick is never below DC's
    model by CV. (Scoring each α with that per-site best, ``"best_per_site"``, made every finer α score at least
    as well as α = 1 and picked 30–60 clusters on pendigits; docs/results/feddag/feddag.md.)
    Every comparison above is in the selection's ``metric`` (accuracy, balanced accuracy or AUC of the
    out-of-fold predictions; a dual encoder's from its own out-of-fold predictions), as DC-CFL's; the summary's
    expected and own-model numbers stay accuracies, and ``oof`` holds what each site is sent, out-of-fold.
    ``cache`` (a dict) shares the selection and the final one-encoder models between fits on the same bundles
    and seed (the benchmark's rows); ``on_epoch(epoch, losses)`` reports the final training epoch by epoch."""
    control = ensure(control)
    s = settings_with(**(settings or {}))
    K = len(classes)
    if len(bundles) < 1:
        raise ConfigError("no bundles to analyse")
    caller_cache = cache is not None   # a selection shared with further fits keeps its out-of-fold predictions
    cache = {} if cache is None else cache
    seed = int(s["seed"])
    t0 = time.perf_counter()
    measuring = _stage(control, 0.0, 0.2, "measuring how alike the sites are")
    g = geo if geo is not None else geometry(bundles, K, s, measuring, with_pacfl=s["view"] == "pacfl")
    t1 = time.perf_counter()
    M, w = view_matrix(g, s)
    grid = [float(a) for a in s["alpha_grid"]]
    parts = partitions(M, grid, s["linkage"])
    loss = {a: paper_loss(M, lab, float(s["loss_lambda"]), float(s["loss_gamma"]), float(s["loss_tau"]))
            for a, lab in parts.items()}
    nclus = {a: int(lab.max()) + 1 for a, lab in parts.items()}
    alpha_min_loss = min(loss, key=lambda a: (round(loss[a][0], 12), -a))
    t2 = time.perf_counter()
    if s["alpha"] != "auto":
        a = float(s["alpha"])
        parts = {a: parts[a] if a in parts else partitions(M, [a], s["linkage"])[a]}
    keyed = {a: groups_of(lab) for a, lab in parts.items()}
    S = len(bundles)
    own_on = bool(s["own_model"])
    maps = cache.setdefault("maps", {})
    everyone = tuple(range(S))
    glob_on = bool(s["global_candidate"]) and S > 1
    sel, site_curve, g_score = _cross_validate_candidates(bundles, keyed, g, s, K, cache, maps, control)
    curve = {a: float(v.mean()) for a, v in site_curve.items()}
    alpha = choose_alpha(site_curve, s["alpha_rule"]) if curve else max(keyed)
    clusters = keyed[alpha]
    t3 = time.perf_counter()
    H, sources = cc_graph(clusters, g.counts, g.angles, int(s["top_k"]))
    if not s["sharing"]:
        sources = [[] for _ in clusters]
    Z = len(clusters)
    kind, dual_correct = _cluster_encoders(sel, g, bundles, clusters, sources, K, s, control)
    cluster_of = {i: z for z, c in enumerate(clusters) for i in c}
    if sel is not None:
        cluster_acc, group_acc, use_global, keys, own_pick = _sent_models(sel, bundles, clusters, kind, dual_correct,
                                                                          g_score, own_on, glob_on)
    else:
        cluster_acc, own_pick = np.zeros(S), [False] * S
        group_acc, use_global = cluster_acc, [False] * S
        keys = [None] * S
    t4 = time.perf_counter()
    # ---- final models: one-encoder clusters and own MLPs (cached by members), dual encoders, linear own models
    finals = cache.setdefault("final", {})
    si = [keys[i] is not None and is_si_key(keys[i]) for i in range(S)]
    sent_cluster = [not use_global[i] and not si[i] for i in range(S)]
    need = [clusters[z] for z in range(Z) if kind[z] == "single" and any(sent_cluster[i] for i in clusters[z])]
    if any(use_global[i] and not si[i] for i in range(S)) and everyone not in need:
        need.append(everyone)
    todo = [c for c in need if c not in finals]
    si_todo = sorted({keys[i][1] for i in range(S) if si[i]} - {k[1] for k in finals if is_si_key(k)})
    for c, per_site in zip(si_todo, fit_site_intercept_groups(bundles, [(c, None) for c in si_todo], K, s, g.basis,
                                                              seed=seed, maps=maps), strict=True):
        finals[si_key(c)] = per_site
    dual_z = [z for z in range(Z) if kind[z] == "dual" and any(sent_cluster[i] for i in clusters[z])]
    losses_single: list[np.ndarray] = []

    def single_epoch(ep, lv):
        losses_single.append(np.asarray(lv, np.float64))
        if on_epoch is not None:
            on_epoch(ep, lv)

    control.step(0.7, f"training {len(todo) + len(dual_z)} final model(s)")
    if todo:
        trained = fit_groups(bundles, [(c, None) for c in todo], K, s, g.basis, seed=seed, maps=maps,
                             epoch_rows=opt_int(s["max_epoch_rows"]),
                             control=_stage(control, 0.7, 0.85, "training the final models"),
                             on_epoch=single_epoch)
        finals.update(zip(todo, trained, strict=True))
    duals: dict[int, DualEncoder] = {}
    if dual_z:
        ys = [b.arrays["y"].astype(np.int64) for b in bundles]
        inputs = [dual_inputs(g, ys, clusters, sources, z, bool(s["sharing"])) for z in dual_z]
        init = None
        if s["warm_start"]:
            init = [[(np.mean([g.warm[i].weights[li] for i in clusters[z]], axis=0),
                      np.mean([g.warm[i].biases[li] for i in clusters[z]], axis=0)) for li in range(len(s["hidden"]))]
                    for z in dual_z]

        def dual_epoch(ep, lv):
            if on_epoch is not None:   # groups after the one-encoder models (their last loss at this epoch)
                prev = losses_single[min(ep, len(losses_single) - 1)] if losses_single else np.zeros(0)
                on_epoch(ep, np.concatenate([prev, lv]))

        models = train_dual([x for x, _ in inputs], [sp for _, sp in inputs], K, s, init_primary=init,
                            control=_stage(control, 0.85, 1.0, "training the final shared-encoder models"),
                            on_epoch=dual_epoch)
        duals = dict(zip(dual_z, models, strict=True))
    site_models = [_site_model(i, cluster_of[i], si[i], use_global[i], kind, keys, finals, duals, clusters)
                   for i in range(S)]
    site_info = [_site_estimates(sel, i, group_acc[i], cluster_acc[i], own_on, own_pick[i]) for i in range(S)]
    oof = None
    if sel is not None:
        sent = [keys[i] if keys[i] is not None else dual_key(cluster_of[i]) for i in range(S)]
        for i in range(S):   # the analyst's half of each site's paired comparison (issue #37)
            gate = site_gate(sel, bundles, i, sent[i], K, s, g.basis, maps) if own_on else None
            if gate is not None:
                site_info[i]["gate_arrays"], gate_info = gate
                site_info[i].update(gate_info)
        oof = chosen_oof(sel, bundles, sent, K, s, g.basis, maps, keep=caller_cache)
    t5 = time.perf_counter()
    selection = {"kind": ("cv" if sel.folds > 1 else "holdout") if sel else "none",
                 "folds": sel.folds if sel else 0, "repeats": sel.repeats if sel else 0, "own_model": own_on,
                 "metric": sel.metric if sel else "accuracy"}
    return FedDAGResult(s["view"], M, w, alpha, clusters, curve, loss, nclus, alpha_min_loss, sources, H, kind,
                        site_models, site_info, selection, s["encoder"], g, s,
                        {**g.seconds, "geometry": t1 - t0, "matrix_and_partitions": t2 - t1,
                         "alpha_selection": t3 - t2, "sharing_selection": t4 - t3, "final_training": t5 - t4,
                         "total": t5 - t0}, oof)
