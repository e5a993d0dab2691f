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


def combine(coefs: list[np.ndarray], covs: list[np.ndarray]) -> Combined:
    """The fixed-effect combination of ≥ 1 estimates (module doc)."""
    B = [np.asarray(b, dtype=np.float64).ravel() for b in coefs]
    W = [precision(np.asarray(v, dtype=np.float64)) for v in covs]
    total = sum(W)
    cov = precision(total)
    coef = cov @ sum(w @ b for w, b in zip(W, B, strict=True))
    S, d = len(B), len(coef)
    q = float(sum((b - coef) @ w @ (b - coef) for w, b in zip(W, B, strict=True)))
    df = (S - 1) * d
    from scipy import stats  # the analyst's side only: a site's export never loads scipy

    p_value = float(stats.chi2.sf(q, df)) if df > 0 else 1.0
    var = np.stack([np.diag(np.asarray(v, dtype=np.float64)) for v in covs])  # (S, d) marginal variances
    w = 1.0 / var
    mean = (w * np.stack(B)).sum(axis=0) / w.sum(axis=0)
    q_each = (w * (np.stack(B) - mean) ** 2).sum(axis=0)
    return Combined(coef, cov, q, df, p_value, i_squared(q, df), q_each, i_squared(q_each, S - 1))


def stratified(coefs: list[np.ndarray], covs: list[np.ndarray], common: np.ndarray
               ) -> tuple[Combined, list[np.ndarray]]:
    """The fixed-effect combination of the entries ``common`` (indices into the flattened vectors), and each
    site's full vector with its other entries set to their value given the combined ones (module doc)."""
    B = [np.asarray(b, dtype=np.float64).ravel() for b in coefs]
    V = [np.asarray(v, dtype=np.float64) for v in covs]
    d = len(B[0])
    common = np.asarray(common, dtype=np.int64)
    own = np.setdiff1d(np.arange(d), common)
    comb = combine([b[common] for b in B], [v[np.ix_(common, common)] for v in V])
    full = []
    for b, v in zip(B, V, strict=True):
        theta = b.copy()
        theta[common] = comb.coef
        shift = precision(v[np.ix_(common, common)]) @ (comb.coef - b[common])
        theta[own] = b[own] + v[np.ix_(own, common)] @ shift
        full.append(theta)
    return comb, full


def site_deviation(coef: np.ndarray, cov: np.ndarray, combined: Combined) -> tuple[float, int, float]:
    """(Qᵢ, df, p-value) of one site's estimate against the combined one (module doc); df = 0 and p = 1 when the
    site is the only one (then V̂ᵢ = Var(β̂) and nothing is left to test)."""
    diff = np.asarray(coef, dtype=np.float64).ravel() - combined.coef
    gap = np.asarray(cov, dtype=np.float64) - combined.cov
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
