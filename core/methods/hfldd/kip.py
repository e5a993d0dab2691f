"""Kernel Inducing Points (KIP; Nguyen, Chen & Lee, ICLR 2021) and the HFLDD pieces around it.

KIP (HFLDD Eq. 1; algorithms.md §7.2) learns a small support set (X_s, Y_s) by minimising

    L(X_s) = ½ · mean( (K_ts (K_ss + λ̃ I)⁻¹ Y_s − Y_t)² ),   λ̃ = λ · tr(K_ss) / |S|   (scale-invariant ridge)

over target minibatches (X_t, Y_t) of the local rows, with Adam, in float64. Labels are one-hot centred
(y − 1/K) and fixed (the KIP notebook's default; ``learn_labels`` exists for the ablation only). Kernels:
the depth-1 fully connected ReLU NTK in the NTK parameterisation (σ_w² = 2, σ_b² = 0.01; the recursion of
algorithms.md §7.2, as neural-tangents' stax.Dense/Relu) or an RBF kernel exp(−‖x−x'‖²/(2ℓ²)).
Rows are centred and divided by one global scale (``scale="global"``, keeps the PCA geometry) or per
column (``scale="column"``) before the kernel; the distilled rows are returned in the caller's space.

With ``kip_weight = 0`` and ``mmd_weight > 0`` the same loop does class-wise distribution matching: it minimises
Σ_c MMD²(X_s^c, X_t^c) over target minibatches, with an RBF kernel (a mean of RBFs for several ``mmd_scales``) or
the energy-distance kernel k = −‖x − x'‖ (``mmd_kernel="energy"``: MMD² is then the energy distance, whose
minimisers are support points, Mak & Joseph 2018), started from a kernel-herding choice of real rows
(``init="herding"``, :func:`kernel_herding`, same kernel). The self term is the V-statistic (1/k²) Σ k(s, s') or,
with ``mmd_unbiased``, the U-statistic over pairs s ≠ s'. ``match_spread`` finally rescales each class's rows
about the real class mean so that mean‖z̃ − μ_c‖² equals the real rows' (the best k-point set is narrower than
the class it summarises). The distillation mode's default is energy matching with ``match_spread``.

Besides the distiller: soft labels of a local model on the site's anchor image (HFLDD §III-B), the
analyst's KL matrix M_ij = (1/r) Σ_k Σ_c S_ik^c log(S_ik^c / S_jk^c) (HFLDD Eq. 4) with k-means on its rows,
and a disclosure measure (each distilled row's nearest real row, in units of the real rows' own median
nearest-neighbour spacing).

Several sites can be distilled in one batched run (:func:`distill_sites`); each site draws from its own
seeded streams, so a site distilled alone or in a batch gives the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError

SIGMA_W2 = 2.0   # W_std = √2
SIGMA_B2 = 0.01  # b_std = 0.1


# ------------------------------------------------------------------------------------------------ kernels
def ntk_fc1(A, B, diag_a=None, diag_b=None):
    """Depth-1 FC ReLU NTK between the rows of A (…, n, d) and B (…, p, d) (algorithms.md §7.2):

    Σ⁰ = σ_w² x·x'/d + σ_b²;  cos θ = Σ⁰/√(Σ⁰(x,x)Σ⁰(x',x'));
    Σ¹ = σ_w² √(Σ⁰(x,x)Σ⁰(x',x')) (sin θ + (π − θ) cos θ)/(2π) + σ_b²;  Θ = Σ¹ + σ_w² Σ⁰ (π − θ)/(2π).
    """
    import torch

    d = A.shape[-1]
    s_ab = SIGMA_W2 * (A @ B.transpose(-1, -2)) / d + SIGMA_B2
    s_a = SIGMA_W2 * (A * A).sum(-1) / d + SIGMA_B2 if diag_a is None else diag_a
    s_b = SIGMA_W2 * (B * B).sum(-1) / d + SIGMA_B2 if diag_b is None else diag_b
    norm = torch.sqrt(s_a.unsqueeze(-1) * s_b.unsqueeze(-2) + 1e-12)
    cos = (s_ab / norm).clamp(-1.0 + 1e-9, 1.0 - 1e-9)
    theta = torch.arccos(cos)
    sin = torch.sqrt(1.0 - cos * cos)
    nngp = SIGMA_W2 * norm * (sin + (math.pi - theta) * cos) / (2 * math.pi) + SIGMA_B2
    return nngp + SIGMA_W2 * s_ab * (math.pi - theta) / (2 * math.pi)


def rbf(A, B, length2: float):
    """exp(−‖a − b‖² / (2ℓ²)) between the rows of A (…, n, d) and B (…, p, d)."""
    import torch

    d2 = (A * A).sum(-1).unsqueeze(-1) + (B * B).sum(-1).unsqueeze(-2) - 2 * A @ B.transpose(-1, -2)
    return torch.exp(-d2.clamp(min=0.0) / (2.0 * length2))


# ------------------------------------------------------------------------------------------------ settings
@dataclass
class KIPSettings:
    """Every knob of :func:`distill_sites` (defaults: see :class:`KIPDistiller`)."""

    rows_per_class: int = 5
    rows_share: float = 0.0        # per-class budget: max(rows_per_class, ⌈share · n_c⌉) rows for a class of n_c rows
    steps: int = 300
    lr: float = 0.01
    kernel: str = "ntk"            # "ntk" | "rbf"
    rbf_length2: float | None = None  # ℓ²; None → d (rows are scaled to unit mean variance)
    ridge: float = 1e-6            # λ of the scale-invariant ridge
    init: str = "real"             # "real" | "means" | "kmeans" | "herding"
    init_noise: float = 0.1        # "means": noise sd in units of the class's per-column sd
    learn_labels: bool = False
    target_batch: int = 256
    holdout: float = 0.2
    eval_every: int = 10
    patience: int = 10             # evaluations without improvement before a site stops counting
    scale: str = "global"          # "global" | "column" | "anchor" (whiten by the site's anchor image)
    mmd_weight: float = 0.0        # β of the class-wise MMD² term that keeps each class's rows representative
    kip_weight: float = 1.0        # weight of the KRR loss (0 with mmd_weight > 0: class-wise distribution matching)
    mmd_length2: float | None = None  # ℓ² of the MMD's RBF kernel; None → scale · d for each of mmd_scales
    mmd_scales: tuple[float, ...] = (1.0,)  # the MMD (and herding) kernel is the mean of RBFs with ℓ² = scale · d
    mmd_kernel: str = "rbf"        # "rbf" | "energy" (k = −‖x − x'‖: MMD² = energy distance, support points)
    match_spread: bool = False     # rescale each class's rows about the class mean to the real rows' spread
    mmd_unbiased: bool = False     # the shipped rows' self term as a U-statistic (pairs s ≠ s'), not a V-statistic
    anchor_targets: int = 0        # anchor-image rows added to every target batch with the neutral label 0
    n_classes: int | None = None
    random_state: int = 0

    def check(self) -> None:
        if self.rows_per_class < 1 or self.steps < 0 or not self.lr > 0 or not 0 <= self.rows_share <= 1:
            raise ConfigError("KIP needs rows_per_class ≥ 1, steps ≥ 0 and a positive learning rate")
        if self.kernel not in ("ntk", "rbf"):
            raise ConfigError(f"unknown KIP kernel '{self.kernel}'; use 'ntk' or 'rbf'")
        if self.init not in ("real", "means", "kmeans", "herding"):
            raise ConfigError(f"unknown KIP initialisation '{self.init}'; use 'real', 'means', 'kmeans' or 'herding'")
        if self.scale not in ("global", "column", "anchor"):
            raise ConfigError(f"unknown KIP scaling '{self.scale}'; use 'global', 'column' or 'anchor'")
        if self.mmd_kernel not in ("rbf", "energy"):
            raise ConfigError(f"unknown matching kernel '{self.mmd_kernel}'; use 'rbf' or 'energy'")
        if not 0 <= self.holdout < 1 or self.ridge < 0 or self.target_batch < 1 or self.eval_every < 1:
            raise ConfigError("KIP needs 0 ≤ holdout < 1, ridge ≥ 0, target_batch ≥ 1 and eval_every ≥ 1")


@dataclass
class DistilledSet:
    """One site's result: rows in the caller's space, their integer labels, the label matrix used by KIP."""

    X: np.ndarray          # (s, d) float64
    y: np.ndarray          # (s,) int64
    Y: np.ndarray          # (s, K) float64, centred one-hot (or learned)
    loss_curve: np.ndarray  # training loss per step
    val_curve: np.ndarray   # (evaluations, 2): step, hold-out loss
    best_step: int
    shift: np.ndarray | None = None   # the site's kernel space: z = (x − shift) @ whiten
    whiten: np.ndarray | None = None


def _init_rows(Z: np.ndarray, y: np.ndarray, s: KIPSettings, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Start rows for every class present: min(max(rows_per_class, ⌈rows_share · n_c⌉), n_c) of a class with
    n_c (fit) rows."""
    Xs, ys = [], []
    for c in np.unique(y):
        Zc = Z[y == c]
        k = min(max(s.rows_per_class, math.ceil(s.rows_share * len(Zc) - 1e-9)), len(Zc))
        if s.init == "real":
            Xs.append(Zc[rng.choice(len(Zc), size=k, replace=False)])
        elif s.init == "means":
            sd = Zc.std(axis=0) if len(Zc) > 1 else np.ones(Z.shape[1])
            Xs.append(Zc.mean(axis=0) + s.init_noise * sd * rng.standard_normal((k, Z.shape[1])))
        elif s.init == "herding":
            Xs.append(Zc[kernel_herding(Zc, k, _mmd_length2s(s, Z.shape[1]), energy=s.mmd_kernel == "energy")])
        else:
            from sklearn.cluster import KMeans

            km = KMeans(n_clusters=k, n_init=3, random_state=int(rng.integers(2**31))).fit(Zc)
            Xs.append(km.cluster_centers_)
        ys.append(np.full(k, c, dtype=np.int64))
    return np.vstack(Xs), np.concatenate(ys)


def _mmd_length2s(s: KIPSettings, d: int) -> tuple[float, ...]:
    if s.mmd_length2 is not None:
        return (float(s.mmd_length2),)
    return tuple(float(c) * d for c in s.mmd_scales)


def kernel_herding(Z: np.ndarray, k: int, length2: float | Sequence[float] | None = None,
                   energy: bool = False) -> np.ndarray:
    """Indices of k rows of Z chosen by kernel herding (Chen, Welling & Smola 2010) with an RBF kernel
    (ℓ² = number of columns by default; a sequence of ℓ² takes the mean of their RBFs):
    row t+1 = argmax_x  mean_i k(x, z_i) − (1/(t+1)) Σ_{j≤t} k(x, s_j), a greedy minimiser of the MMD between
    the chosen rows and all rows."""
    Z = np.asarray(Z, np.float64)
    n = len(Z)
    if k >= n:
        return np.arange(n)
    l2s = [float(Z.shape[1])] if length2 is None else [float(v) for v in np.atleast_1d(length2)]
    sq = (Z * Z).sum(1)
    D2 = np.clip(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0, None)
    Kz = -np.sqrt(D2) if energy else np.mean([np.exp(-D2 / (2 * l2)) for l2 in l2s], axis=0)
    mean = Kz.mean(axis=1)
    acc = np.zeros(n)
    chosen: list[int] = []
    for t in range(k):
        score = mean - acc / (t + 1)
        score[chosen] = -np.inf
        j = int(np.argmax(score))
        chosen.append(j)
        acc += Kz[:, j]
    return np.array(chosen)


def anchor_whitening(A: np.ndarray, floor: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(μ, W, W⁻¹) with z = (x − μ) W: centre at the anchor image's mean and whiten by its covariance
    (eigen-directions with variance below ``floor``·max are left unscaled). Two sites whose anchor images are
    affine images of the same anchor get coordinates equal up to a rotation, which a dot-product or distance
    kernel cannot see: the kernel the site distils with is the kernel the analyst can use after alignment."""
    A = np.asarray(A, np.float64)
    mu = A.mean(axis=0)
    w, V = np.linalg.eigh(np.cov(A, rowvar=False).reshape(A.shape[1], A.shape[1]))
    w = np.where(w > floor * max(w.max(), 1e-300), w, 1.0)
    return mu, (V / np.sqrt(w)) @ V.T, (V * np.sqrt(w)) @ V.T


def distill_sites(sites: Sequence[tuple[np.ndarray, np.ndarray]], settings: KIPSettings | None = None,
                  control: JobControl | None = None, site_ids: Sequence[int] | None = None,
                  anchors: Sequence[np.ndarray] | None = None) -> list[DistilledSet]:
    """KIP for several independent sites at once (batched linear algebra; each site its own support set).

    Site i's randomness (hold-out split, initialisation, target batches) comes from
    ``default_rng([random_state, site_ids[i], ·])``. Early stopping: every ``eval_every`` steps the KRR
    loss on the site's hold-out rows is measured and the best support set so far is kept; the run ends
    when no site has improved for ``patience`` evaluations.
    """
    import torch

    s = settings or KIPSettings()
    s.check()
    control = ensure(control)
    if not sites:
        raise ConfigError("there is no site to distil")
    ids = list(range(len(sites))) if site_ids is None else [int(i) for i in site_ids]
    K = s.n_classes or 1 + max(int(np.max(y)) for _, y in sites)
    if K < 2:
        raise ConfigError("KIP needs at least two classes in the class list")
    dt = torch.float64
    G = len(sites)
    if s.scale == "anchor" and (anchors is None or len(anchors) != len(sites)):
        raise ConfigError("scale='anchor' needs every site's anchor image")
    prep = [_prepare_site(X, y, sid, None if anchors is None or g >= len(anchors) else anchors[g], s, K)
            for g, ((X, y), sid) in enumerate(zip(sites, ids, strict=True))]
    d_max = {p["Z"].shape[1] for p in prep}
    if len(d_max) != 1:
        raise ConfigError("batched KIP needs every site to have the same number of columns")
    d = d_max.pop()
    Xs0, Ys0, mask = _padded_support(prep, K, d)
    S = mask.shape[1]
    M = torch.from_numpy(mask)
    MM = M.unsqueeze(-1) * M.unsqueeze(-2)
    pad_eye = torch.diag_embed(1.0 - M)
    n_real = M.sum(-1)
    Xs = torch.nn.Parameter(torch.from_numpy(Xs0.copy()))
    Ys0_t = torch.from_numpy(Ys0)
    Ys = torch.nn.Parameter(torch.from_numpy(Ys0.copy())) if s.learn_labels else Ys0_t
    params = [Xs, Ys] if s.learn_labels else [Xs]
    opt = torch.optim.Adam(params, lr=s.lr)
    length2 = float(s.rbf_length2 if s.rbf_length2 is not None else d)

    def kern(A, B):
        return ntk_fc1(A, B) if s.kernel == "ntk" else rbf(A, B, length2)

    mmd_l2s = _mmd_length2s(s, d)

    def mmd_kern(A, B):
        if s.mmd_kernel == "energy":
            d2 = (A * A).sum(-1).unsqueeze(-1) + (B * B).sum(-1).unsqueeze(-2) - 2 * A @ B.transpose(-1, -2)
            return -torch.sqrt(d2.clamp(min=0.0) + 1e-6 * d)
        return sum(rbf(A, B, l2) for l2 in mmd_l2s) / len(mmd_l2s)

    def mmd(Xt, Yt, Wt):
        """Σ_c MMD²(X_s^c, X_t^c) with ``mmd_kern``, per site (classes present in both sets)."""
        Ps = (Ys0_t > 0).to(dt) * M.unsqueeze(-1)                       # (G, S, K) class indicators
        Pt = (Yt > 0).to(dt) * Wt.unsqueeze(-1)                          # (G, B, K)
        ns, nt = Ps.sum(1), Pt.sum(1)                                    # (G, K)
        kss = torch.einsum("gsk,gst,gtk->gk", Ps, mmd_kern(Xs, Xs), Ps)
        kst = torch.einsum("gsk,gsb,gbk->gk", Ps, mmd_kern(Xs, Xt), Pt)
        both = (ns > 0) & (nt > 0)
        if s.mmd_unbiased:   # (1/(k(k−1))) Σ_{s≠s'} k(s, s'): an iid sample of the class is optimal in expectation
            diag = torch.einsum("gsk,gs->gk", Ps, torch.diagonal(mmd_kern(Xs, Xs), dim1=-2, dim2=-1))
            self_term = (kss - diag) / (ns * (ns - 1)).clamp(min=1)
        else:
            self_term = kss / ns.clamp(min=1) ** 2
        val = self_term - 2 * kst / (ns.clamp(min=1) * nt.clamp(min=1))
        return torch.where(both, val, torch.zeros_like(val)).sum(-1)

    def krr_loss(Xt, Yt, Wt):
        """Σ_g ½ · mean over the site's valid target entries of the squared KRR error (Eq. 1)."""
        Kss = kern(Xs, Xs) * MM
        lam = s.ridge * (torch.diagonal(Kss, dim1=-2, dim2=-1).sum(-1) / n_real)
        A = Kss + lam[:, None, None] * torch.eye(S, dtype=dt) + pad_eye
        Kts = kern(Xt, Xs) * M.unsqueeze(-2)
        try:
            L = torch.linalg.cholesky(A)
            alpha = torch.cholesky_solve(Ys * M.unsqueeze(-1), L)
        except RuntimeError:
            jitter = 1e-8 * torch.diagonal(A, dim1=-2, dim2=-1).mean(-1)
            alpha = torch.linalg.solve(A + jitter[:, None, None] * torch.eye(S, dtype=dt), Ys * M.unsqueeze(-1))
        err = (Kts @ alpha - Yt) ** 2
        per_site = 0.5 * (err.sum(-1) * Wt).sum(-1) / (Wt.sum(-1).clamp(min=1.0) * K)
        return per_site

    def batch(indices_of) -> tuple:
        rows = [indices_of(p) for p in prep]
        B = max(1, max(len(r) for r in rows))
        Xt = np.zeros((G, B, d))
        Yt = np.zeros((G, B, K))
        Wt = np.zeros((G, B))
        for g, (p, r) in enumerate(zip(prep, rows, strict=True)):
            Xt[g, : len(r)] = p["Z"][r]
            Yt[g, : len(r)] = p["Y"][r]
            Wt[g, : len(r)] = 1.0
        return torch.from_numpy(Xt), torch.from_numpy(Yt), torch.from_numpy(Wt)

    def draw(p):
        f = p["fit"]
        f = f if len(f) <= s.target_batch else p["rng"].choice(f, size=s.target_batch, replace=False)
        a = p["anc"]
        if len(a):
            f = np.concatenate([f, a if len(a) <= s.anchor_targets else
                                p["rng"].choice(a, size=s.anchor_targets, replace=False)])
        return f

    has_val = np.array([len(p["val"]) > 0 for p in prep])
    val_batch = batch(lambda p: p["val"]) if has_val.any() else None
    best = Xs.detach().clone()
    best_Y = Ys.detach().clone()
    best_val = np.full(G, np.inf)
    best_step = np.zeros(G, dtype=np.int64)
    since = np.zeros(G, dtype=np.int64)
    losses = np.zeros((s.steps, G))
    vals: list[tuple[int, np.ndarray]] = []

    def evaluate(step: int) -> bool:
        if val_batch is None:
            return False
        with torch.no_grad():
            v = krr_loss(*val_batch).numpy()
        vals.append((step, v.copy()))
        # A site whose patience ran out is frozen, so its result does not depend on the other sites.
        better = has_val & (since < s.patience) & (v < best_val - 1e-12)
        for g in np.flatnonzero(better):
            best[g] = Xs.detach()[g]
            best_Y[g] = Ys.detach()[g]
            best_val[g] = v[g]
            best_step[g] = step
        since[:] = np.where(better, 0, since + 1)
        return bool(np.all(since[has_val] >= s.patience))

    control.step(0.0, "distilling")
    evaluate(0)
    last = 0
    for step in range(s.steps):
        Xt, Yt, Wt = batch(draw)
        opt.zero_grad()
        # The loss curve records the KRR loss, or the MMD² when only distribution matching is asked (no KRR work).
        if s.kip_weight > 0:
            per_site = krr_loss(Xt, Yt, Wt)
            total = s.kip_weight * per_site.sum()
        else:
            per_site, total = None, 0.0
        if s.mmd_weight > 0:
            m = mmd(Xt, Yt, Wt)
            total = total + s.mmd_weight * m.sum()
            per_site = m if per_site is None else per_site
        if per_site is None:
            raise ConfigError("KIP needs kip_weight > 0 or mmd_weight > 0")
        total.backward()
        opt.step()
        losses[step] = per_site.detach().numpy()
        last = step + 1
        if last % s.eval_every == 0 or last == s.steps:
            stop = evaluate(last)
            control.step(last / max(s.steps, 1), f"KIP step {last}/{s.steps}")
            if stop:
                break
    final_X, final_Y = Xs.detach().numpy(), Ys.detach().numpy()
    out = [_distilled_set(p, s, best[g].numpy(), best_Y[g].numpy(), int(best_step[g]), [(st, v[g]) for st, v in vals],
                          losses[:last, g])
           if has_val[g] else _distilled_set(p, s, final_X[g], final_Y[g], last, None, losses[:last, g])
           for g, p in enumerate(prep)]
    control.step(1.0, "distilled")
    return out


def _prepare_site(X: np.ndarray, y: np.ndarray, sid: int, anchor: np.ndarray | None, s: KIPSettings, K: int) -> dict:
    """One site's rows checked and scaled (z = (x − μ) W, by ``s.scale``), its centred one-hot targets (and the
    anchor image's rows as unlabelled targets with ``anchor_targets``), its hold-out split and initial support set,
    each from the site's own seed streams ``default_rng([random_state, sid, ·])``."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    if X.ndim != 2 or len(X) != len(y) or len(X) < 2:
        raise ConfigError("each site needs a 2-D array of at least two rows and one label per row")
    if y.min() < 0 or y.max() >= K:
        raise ConfigError(f"labels must lie in [0, {K})")
    if not np.all(np.isfinite(X)):
        raise ConfigError("the rows hold NaN or infinite values")
    rng_split, rng_init, rng_batch = (np.random.default_rng([s.random_state, sid, k]) for k in range(3))
    mu = X.mean(axis=0)
    if s.scale == "anchor":
        mu, W, W_inv = anchor_whitening(anchor)
    elif s.scale == "global":
        sd = np.full(X.shape[1], math.sqrt(max(float(X.var(axis=0).mean()), 1e-24)))
        W, W_inv = np.diag(1.0 / sd), np.diag(sd)
    else:
        sd = X.std(axis=0)
        sd[~(sd > 1e-12)] = 1.0
        W, W_inv = np.diag(1.0 / sd), np.diag(sd)
    Z = (X - mu) @ W
    n = len(y)
    Yall = np.eye(K)[y] - 1.0 / K
    n_anc = 0
    if s.anchor_targets > 0:
        if anchor is None:
            raise ConfigError("anchor_targets needs every site's anchor image")
        Za = (np.asarray(anchor, np.float64) - mu) @ W
        n_anc = len(Za)
        Z = np.vstack([Z, Za])
        Yall = np.vstack([Yall, np.zeros((n_anc, K))])
    n_val = int(round(s.holdout * n)) if n >= 10 else 0
    perm = rng_split.permutation(n)
    val, fit = perm[:n_val], perm[n_val:]
    X0, y0 = _init_rows(Z[fit], y[fit], s, rng_init)
    return dict(Z=Z, Y=Yall, anc=np.arange(n, n + n_anc), y=y, mu=mu, W=W, W_inv=W_inv, val=val, fit=fit, X0=X0,
                y0=y0, rng=rng_batch)


def _padded_support(prep: list[dict], K: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every site's initial support set padded to S rows, the most any site has: (rows (G, S, d), centred one-hot
    labels (G, S, K), mask (G, S)); a padded row has mask 0 (an identity block in K_ss) and zero labels."""
    G, S = len(prep), max(len(p["y0"]) for p in prep)
    Xs0, Ys0, mask = np.zeros((G, S, d)), np.zeros((G, S, K)), np.zeros((G, S))
    for g, p in enumerate(prep):
        k = len(p["y0"])
        Xs0[g, :k] = p["X0"]
        Ys0[g, :k] = np.eye(K)[p["y0"]] - 1.0 / K
        mask[g, :k] = 1.0
    return Xs0, Ys0, mask


def _distilled_set(p: dict, s: KIPSettings, Xs: np.ndarray, Ys: np.ndarray, step: int,
                   vals: list[tuple[int, float]] | None, losses: np.ndarray) -> DistilledSet:
    """One site's result in its own units: the support set kept (the best on its hold-out rows at ``step``, or the
    last), spread-matched with ``match_spread``, mapped back by x = z W⁻¹ + μ, with its loss and hold-out curves."""
    k = len(p["y0"])
    Zs, Yg = Xs[:k], Ys[:k]
    if s.match_spread:
        Zs = _match_spread(Zs, p["y0"], p["Z"][p["fit"]], p["y"][p["fit"]])
    vc = np.array([[st, v] for st, v in vals]) if vals is not None else np.zeros((0, 2))
    return DistilledSet(Zs @ p["W_inv"] + p["mu"], p["y0"].copy(), Yg.copy(), losses.copy(), vc, step, p["mu"], p["W"])


def _match_spread(Zs: np.ndarray, ys: np.ndarray, Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per class c: z̃ ← μ_c + a_c (z̃ − μ_c) with a_c² = mean_i ‖z_i − μ_c‖² / mean_j ‖z̃_j − μ_c‖² (μ_c the mean of
    the class's real rows), so the shipped rows spread around the class mean as widely as the real rows do."""
    Zs = Zs.copy()
    for c in np.unique(ys):
        rows, mine = Z[y == c], ys == c
        mu = rows.mean(axis=0)
        real = float(((rows - mu) ** 2).sum(1).mean())
        have = float(((Zs[mine] - mu) ** 2).sum(1).mean())
        if have > 0 and real > 0:
            Zs[mine] = mu + math.sqrt(real / have) * (Zs[mine] - mu)
    return Zs


class KIPDistiller:
    """Sklearn-style KIP for one site: ``KIPDistiller(rows_per_class=5).fit(X, y)``.

    Parameters (see :class:`KIPSettings`): rows_per_class, steps, lr (Adam), kernel ("ntk" | "rbf"),
    rbf_length2, ridge (λ), init ("real" | "means" | "kmeans"), init_noise, learn_labels, target_batch,
    holdout, eval_every, patience, scale ("global" | "column"), n_classes (K of the class list; default
    max(y) + 1), random_state.

    Attributes after fit: ``X_distilled_`` (s, d), ``y_distilled_`` (s,), ``Y_distilled_`` (s, K) centred
    labels, ``loss_curve_`` (per step), ``val_curve_`` ((evaluations, 2): step, hold-out loss), ``best_step_``.
    """

    def __init__(self, **kwargs):
        self.settings = KIPSettings(**kwargs)
        self.settings.check()

    def fit(self, X: np.ndarray, y: np.ndarray, control: JobControl | None = None) -> KIPDistiller:
        r = distill_sites([(X, y)], self.settings, control)[0]
        self.X_distilled_, self.y_distilled_, self.Y_distilled_ = r.X, r.y, r.Y
        self.loss_curve_, self.val_curve_, self.best_step_ = r.loss_curve, r.val_curve, r.best_step
        self.shift_, self.whiten_ = r.shift, r.whiten
        return self

    def krr_predict(self, X: np.ndarray) -> np.ndarray:
        """Class scores K_xs (K_ss + λ̃I)⁻¹ Y_s of kernel ridge regression on the distilled set (the model KIP
        optimises for), in the kernel space the site distilled in."""
        s = self.settings
        W = self.whiten_
        Zs = (np.asarray(self.X_distilled_, np.float64) - self.shift_) @ W
        Zx = (np.asarray(X, np.float64) - self.shift_) @ W
        return krr_predict(Zs, self.Y_distilled_, Zx, kernel=s.kernel, ridge=s.ridge, rbf_length2=s.rbf_length2)


def krr_predict(X_train: np.ndarray, Y_train: np.ndarray, X_test: np.ndarray, *, kernel: str = "ntk",
                ridge: float = 1e-6, rbf_length2: float | None = None) -> np.ndarray:
    """Kernel ridge regression K_*s (K_ss + λ̃I)⁻¹ Y_s with the scale-invariant ridge λ̃ = λ·tr(K_ss)/n — the
    model KIP distils for (Eq. 1), usable by the analyst on the union of aligned distilled sets."""
    import torch

    A = torch.from_numpy(np.asarray(X_train, np.float64))
    B = torch.from_numpy(np.asarray(X_test, np.float64))
    length2 = float(rbf_length2 if rbf_length2 is not None else A.shape[1])
    k = (lambda P, Q: ntk_fc1(P, Q)) if kernel == "ntk" else (lambda P, Q: rbf(P, Q, length2))
    Kss = k(A, A)
    lam = max(ridge * float(torch.trace(Kss)) / Kss.shape[0], 1e-12)
    alpha = torch.linalg.solve(Kss + lam * torch.eye(Kss.shape[0], dtype=torch.float64),
                               torch.from_numpy(np.asarray(Y_train, np.float64)))
    return (k(B, A) @ alpha).numpy()


# ------------------------------------------------------------------------------------------------ HFLDD parts
def local_soft_labels(sites: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], n_classes: int, *,
                      epochs: int = 10, lr: float = 0.01, batch_size: int = 64, hidden: tuple[int, ...] = (64, 32),
                      random_state: int = 0, site_ids: Sequence[int] | None = None,
                      control: JobControl | None = None) -> list[np.ndarray]:
    """HFLDD §III-B: each site trains a local model (SGD lr 0.01, E₁ = 10 epochs, batch 64) on its rows
    (standardised with its own column statistics) and returns S_i = softmax(model(anchor image)), (r, K).

    ``sites[i] = (X_i, y_i, A_i)`` with A_i the site's image of the anchor in the same space as X_i.
    """
    from ...learn.mlp import BatchedMLP

    groups, scalers = [], []
    for X, y, _A in sites:
        X = np.asarray(X, np.float64)
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd[~(sd > 1e-12)] = 1.0
        scalers.append((mu, sd))
        groups.append((((X - mu) / sd).astype(np.float32), np.asarray(y, np.int64)))
    learner = BatchedMLP(tuple(hidden), lr=lr, momentum=0.0, batch_size=batch_size, epochs=epochs,
                         random_state=int(random_state))
    learner.fit(groups, n_classes, control=control, group_ids=list(site_ids) if site_ids is not None else None)
    return [learner.models_[g].predict_proba((np.asarray(A, np.float64) - mu) / sd)
            for g, ((_X, _y, A), (mu, sd)) in enumerate(zip(sites, scalers, strict=True))]


def kl_matrix(soft: Sequence[np.ndarray], eps: float = 1e-12) -> np.ndarray:
    """HFLDD Eq. 4: M_ij = (1/r) Σ_k Σ_c S_ik^c log(S_ik^c / S_jk^c), probabilities clipped at ``eps``
    (asymmetric; zero diagonal)."""
    P = np.clip(np.stack([np.asarray(s, np.float64) for s in soft]), eps, 1.0)   # (c, r, K)
    logP = np.log(P)
    r = P.shape[1]
    neg_entropy = np.einsum("irk,irk->i", P, logP)
    cross = np.einsum("irk,jrk->ij", P, logP)
    M = (neg_entropy[:, None] - cross) / r
    np.fill_diagonal(M, 0.0)
    return M


def kl_clusters(M: np.ndarray, n_clusters: int = 10, random_state: int = 0) -> np.ndarray:
    """HFLDD §III-B: k-means (K = min(n_clusters, c)) on the rows of M; labels 0..K−1."""
    from sklearn.cluster import KMeans

    c = M.shape[0]
    k = max(1, min(int(n_clusters), c))
    return KMeans(n_clusters=k, n_init=10, random_state=int(random_state)).fit_predict(np.asarray(M, np.float64))


def cluster_sampling(homogeneous: np.ndarray, random_state: int = 0) -> list[list[int]]:
    """HFLDD Alg. 1 (ClusterSampling): repeatedly form a heterogeneous cluster with one random member of
    every non-empty homogeneous cluster, until all are empty."""
    rng = np.random.default_rng(random_state)
    pools = [list(rng.permutation(np.flatnonzero(homogeneous == h))) for h in np.unique(homogeneous)]
    out = []
    while any(pools):
        out.append([int(p.pop()) for p in pools if p])
    return out


def nn_disclosure(distilled: np.ndarray, real: np.ndarray) -> dict[str, float]:
    """How far the distilled rows lie from the site's real rows, relative to the data's own spacing:
    ratio_j = min_i ‖x̃_j − x_i‖ / median_i (min_{i'≠i} ‖x_i − x_i'‖). Returns the min / median / mean ratio
    and the share of distilled rows closer to a real row than that median spacing (ratio < 1);
    ratio 0 means a copy of a real row."""
    from scipy.spatial import cKDTree

    real = np.asarray(real, np.float64)
    tree = cKDTree(real)
    dd, _ = tree.query(real, k=2)
    spacing = float(np.median(dd[:, 1])) if len(real) > 1 else float("nan")
    dist, _ = tree.query(np.asarray(distilled, np.float64), k=1)
    ratio = dist / spacing if spacing > 0 else np.full(len(dist), np.inf)
    return {"spacing": spacing, "ratio_min": float(ratio.min()), "ratio_median": float(np.median(ratio)),
            "ratio_mean": float(ratio.mean()), "share_below_1": float(np.mean(ratio < 1.0)),
            "copies": int(np.sum(dist <= 1e-9 * max(spacing, 1e-300)))}


__all__ = ["KIPDistiller", "KIPSettings", "DistilledSet", "distill_sites", "krr_predict", "anchor_whitening",
           "ntk_fc1", "rbf", "local_soft_labels", "kl_matrix", "kl_clusters", "cluster_sampling", "nn_disclosure"]
