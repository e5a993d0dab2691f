"""Fixed-effect (inverse-variance) meta-analysis of the sites' coefficient vectors, with heterogeneity.

Sites i = 1 … S ship estimates β̂ᵢ ∈ ℝᵈ with covariances V̂ᵢ (symmetric positive definite). Under one common
β for every site (the fixed-effect model), the minimum-variance combination is

    β̂ = (Σᵢ V̂ᵢ⁻¹)⁻¹ Σᵢ V̂ᵢ⁻¹ β̂ᵢ,   Var(β̂) = (Σᵢ V̂ᵢ⁻¹)⁻¹.

Whether one β fits every site is tested by Cochran's Q in its multivariate form,
Q = Σᵢ (β̂ᵢ − β̂)ᵀ V̂ᵢ⁻¹ (β̂ᵢ − β̂), χ² with (S − 1)·d degrees of freedom under the model, and summarised by
Higgins' I² = max(0, (Q − df) / Q): the share of the spread between sites beyond what chance gives. The same
two numbers per coefficient use that coefficient alone (its own univariate fixed-effect mean and variances).

Site-specific nuisance parameters (:func:`stratified`): when only part of the vector is common to all sites
(the slopes; each site keeps its own intercept, its baseline risk, as a site-stratified analysis does), the
common part β is combined as above from each site's marginal estimate and covariance V̂ᵢ,ββ, and site i's
nuisance part a is set to its value given β̂ under the site's own normal approximation,
âᵢ(β̂) = âᵢ + V̂ᵢ,aβ V̂ᵢ,ββ⁻¹ (β̂ − β̂ᵢ) — the maximiser over a of the site's quadratic log-likelihood
−½ (θ − θ̂ᵢ)ᵀ V̂ᵢ⁻¹ (θ − θ̂ᵢ) at β = β̂, so (âᵢ(β̂), β̂) maximise the sum of the sites' quadratic
approximations, a one-step stratified fit.

Whether one site fits the common model (:func:`site_deviation`): under it, β̂ᵢ − β̂ has covariance V̂ᵢ − Var(β̂)
(β̂ contains β̂ᵢ, and Cov(β̂ᵢ, β̂) = Var(β̂)), so Qᵢ = (β̂ᵢ − β̂)ᵀ (V̂ᵢ − Var(β̂))⁺ (β̂ᵢ − β̂) is χ² with
rank(V̂ᵢ − Var(β̂)) degrees of freedom; a small p-value says the site's own relation between the columns and
the label differs from the others' more than chance allows.

Sites that estimate different parts of the common vector (``maps``): site i's estimate is of Aᵢβ, a known
linear map of the common β (a site with only some of the classes estimates the contrasts among its own classes,
Aᵢ = Dᵢ ⊗ I, Dᵢ the contrasts "class k vs the site's first class" written in the common parameters "class k vs
the kit's first class"). The generalised least-squares combination is then

    β̂ = (Σᵢ AᵢᵀV̂ᵢ⁻¹Aᵢ)⁺ Σᵢ AᵢᵀV̂ᵢ⁻¹ β̂ᵢ,   Var(β̂) = (Σᵢ AᵢᵀV̂ᵢ⁻¹Aᵢ)⁺,

Q = Σᵢ (β̂ᵢ − Aᵢβ̂)ᵀ V̂ᵢ⁻¹ (β̂ᵢ − Aᵢβ̂) with Σᵢ dᵢ − rank(Σᵢ AᵢᵀV̂ᵢ⁻¹Aᵢ) degrees of freedom, and a site's
deviation uses Aᵢβ̂ and AᵢVar(β̂)Aᵢᵀ. Directions of β no site informs (a class no site has beside the
reference, directly or through other classes) are left at 0 by the pseudo-inverse (⁺, the minimum-norm
solution); Aᵢ = I for every site gives the plain combination above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Combined:
    """β̂ (d,), Var(β̂) (d, d), multivariate Q with its df, p-value and I², and per coefficient Q_j, I²_j."""

    coef: np.ndarray
    cov: np.ndarray
    q: float
    df: int
    p_value: float
    i2: float
    q_each: np.ndarray
    i2_each: np.ndarray


def i_squared(q: float | np.ndarray, df: int) -> float | np.ndarray:
    """Higgins' I² = max(0, (Q − df) / Q) (0 when Q = 0)."""
    q = np.asarray(q, dtype=np.float64)
    out = np.where(q > 0, (q - df) / np.where(q > 0, q, 1.0), 0.0)
    return np.maximum(out, 0.0) if out.ndim else float(max(out, 0.0))


def precision(cov: np.ndarray) -> np.ndarray:
    """V⁻¹ = L⁻ᵀL⁻¹ from the Cholesky factor V = LLᵀ (V must be symmetric positive definite)."""
    L_inv = np.linalg.inv(np.linalg.cholesky(cov))
    return L_inv.T @ L_inv


def _pseudo_inverse(P: np.ndarray) -> tuple[np.ndarray, int]:
    """(P⁺, rank) of a symmetric positive semi-definite P: its Cholesky inverse when it is definite."""
    try:
        return precision(P), len(P)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh((P + P.T) / 2)
        keep = values > 1e-10 * max(float(values.max(initial=0.0)), 1e-300)
        V = vectors[:, keep]
        return (V / values[keep]) @ V.T, int(keep.sum())


def _direct(A: np.ndarray) -> np.ndarray:
    """For each row of a map A, the common entry it estimates directly (a unit row), else −1."""
    unit = (np.count_nonzero(A, axis=1) == 1) & np.isclose(A.max(axis=1, initial=0.0), 1.0)
    return np.where(unit, A.argmax(axis=1), -1)


def combine(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray] | None = None) -> Combined:
    """The fixed-effect combination of ≥ 1 estimates, each of Aᵢβ (``maps``; the identity when None), module doc.
    The per-coefficient Q_j and I²_j use the sites that estimate coefficient j directly."""
    B = [np.asarray(b, dtype=np.float64).ravel() for b in coefs]
    W = [precision(np.asarray(v, dtype=np.float64)) for v in covs]
    A = [np.eye(len(b)) for b in B] if maps is None else [np.asarray(a, dtype=np.float64) for a in maps]
    d = A[0].shape[1]
    cov, rank = _pseudo_inverse(sum(a.T @ w @ a for a, w in zip(A, W, strict=True)))
    coef = cov @ sum(a.T @ w @ b for a, w, b in zip(A, W, B, strict=True))
    q = float(sum((b - a @ coef) @ w @ (b - a @ coef) for a, w, b in zip(A, W, B, strict=True)))
    df = sum(len(b) for b in B) - rank
    from scipy import stats  # the analyst's side only: a site's export never loads scipy

    p_value = float(stats.chi2.sf(q, df)) if df > 0 else 1.0
    q_each, i2_each = np.zeros(d), np.zeros(d)
    for j in range(d):
        pairs = [(b[r], float(v[r, r])) for a, b, v in zip(A, B, covs, strict=True)
                 for r in np.flatnonzero(_direct(a) == j)]
        if len(pairs) > 1:
            est, var = np.array(pairs).T
            w = 1.0 / var
            q_each[j] = float((w * (est - (w * est).sum() / w.sum()) ** 2).sum())
            i2_each[j] = i_squared(q_each[j], len(pairs) - 1)
    return Combined(coef, cov, q, df, p_value, i_squared(q, df), q_each, i2_each)


def stratified(coefs: list[np.ndarray], covs: list[np.ndarray], commons: list[np.ndarray],
               maps: list[np.ndarray] | None = None) -> tuple[Combined, list[np.ndarray]]:
    """The fixed-effect combination of each site's entries ``commons[i]`` (indices into its flattened vector;
    they estimate Aᵢβ, ``maps``, the identity when None), and each site's full vector with those entries at Aᵢβ̂
    and its other entries at their value given them (module doc)."""
    B = [np.asarray(b, dtype=np.float64).ravel() for b in coefs]
    V = [np.asarray(v, dtype=np.float64) for v in covs]
    C = [np.asarray(c, dtype=np.int64) for c in commons]
    comb = combine([b[c] for b, c in zip(B, C, strict=True)], [v[np.ix_(c, c)] for v, c in zip(V, C, strict=True)],
                   maps)
    full = []
    for i, (b, v, c) in enumerate(zip(B, V, C, strict=True)):
        own = np.setdiff1d(np.arange(len(b)), c)
        target = comb.coef if maps is None else np.asarray(maps[i], dtype=np.float64) @ comb.coef
        theta = b.copy()
        theta[c] = target
        shift = precision(v[np.ix_(c, c)]) @ (target - b[c])
        theta[own] = b[own] + v[np.ix_(own, c)] @ shift
        full.append(theta)
    return comb, full


def site_deviation(coef: np.ndarray, cov: np.ndarray, combined: Combined, A: np.ndarray | None = None
                   ) -> tuple[float, int, float]:
    """(Qᵢ, df, p-value) of one site's estimate of Aβ (the identity when None) against Aβ̂ (module doc); df = 0 and
    p = 1 when the site is the only one (then V̂ᵢ = Var(β̂) and nothing is left to test)."""
    A = np.eye(len(combined.coef)) if A is None else np.asarray(A, dtype=np.float64)
    diff = np.asarray(coef, dtype=np.float64).ravel() - A @ combined.coef
    gap = np.asarray(cov, dtype=np.float64) - A @ combined.cov @ A.T
    gap = (gap + gap.T) / 2
    values, vectors = np.linalg.eigh(gap)
    keep = values > 1e-10 * max(float(values.max(initial=0.0)), 1e-300)
    df = int(keep.sum())
    if df == 0:
        return 0.0, 0, 1.0
    proj = vectors[:, keep].T @ diff
    q = float(proj @ (proj / values[keep]))
    from scipy import stats  # the analyst's side only

    return q, df, float(stats.chi2.sf(q, df))
