"""Random effects across sites: DerSimonian–Laird τ², the combination without one site, and each site's
empirical-Bayes coefficients.

The normal–normal model of a random-effects meta-analysis. Site i estimates the common part of its coefficients
(the slopes, or every coefficient with common intercepts) through a known map Aᵢ (the identity for a site with
every class, :mod:`.fixed_effect`): its estimate b̂ᵢ ~ N(Aᵢβᵢ, V̂ᵢ), V̂ᵢ its marginal covariance; the sites' true
coefficients βᵢ = β + uᵢ scatter around a mean β with uᵢ ~ N(0, T).

**T, the between-site variance** (:func:`between_sites`), by DerSimonian and Laird's method of moments in one of two
forms (the ``tau`` setting):

* ``proportional`` (default; :func:`proportional_tau`): T = τ²·D with D = diag(k·(Σ AᵢᵀWᵢAᵢ)⁺), a typical site's
  sampling variance of each coefficient (Wᵢ = V̂ᵢ⁻¹, k sites), and one τ² — the ratio of the spread between sites
  to the spread within one — from the multivariate Q = Σ (b̂ᵢ − Aᵢb̄)ᵀWᵢ(b̂ᵢ − Aᵢb̄) about the fixed-effect mean b̄,
  whose expectation under the model is df + tr(WT) − tr(W⁺ Σ MᵢTMᵢ) (Mᵢ = AᵢᵀWᵢAᵢ, W = Σ Mᵢ, df = Σ dᵢ −
  rank W; Jackson, White & Riley 2010, eq. 9, with T restricted to τ²D):

      τ̂² = max(0, (Q − df) / (tr(WD) − tr(W⁺ Σ MᵢDMᵢ))).

* ``per-coefficient`` (:func:`tau_squared`; DerSimonian & Laird 1986, eq. 8): for coefficient j, with the kⱼ
  sites that estimate it directly, wᵢ = 1/v̂ᵢⱼ and Qⱼ = Σ wᵢ (b̂ᵢⱼ − b̄ⱼ)²,
  τ̂ⱼ² = max(0, (Qⱼ − (kⱼ − 1)) / (Σ wᵢ − Σ wᵢ² / Σ wᵢ)), T = diag(τ̂₁², …, τ̂_d²).

Why not a full multivariate T, and why one τ² by default: with S = 3–6 sites and d up to 15 slopes, T's d(d + 1)/2
entries would rest on (S − 1)·d numbers, its off-diagonal part not estimable. Per coefficient, each τ̂ⱼ² rests on
S − 1 degrees of freedom — with 2 or 3 sites it is positive by chance for a third of the coefficients, and the
sites then borrow less where they share one relation (on the clinical colon table, sites with one relation and
different base rates, it lost 0.0065 AUC against the fixed effect). One τ² rests on (S − 1)·d degrees of
freedom: stable with 2 sites, 0 where the sites agree, large where they differ (docs/results/clinical,
summary-stats record). One site gives τ̂² = 0.

**The random-effects combination** (:func:`combine_random`): generalised least squares with Wᵢ = (V̂ᵢ + AᵢTAᵢᵀ)⁻¹,
β̂ = (Σ AᵢᵀWᵢAᵢ)⁺ Σ AᵢᵀWᵢb̂ᵢ, Var(β̂) = (Σ AᵢᵀWᵢAᵢ)⁺ (T = 0: the fixed-effect combination).

**Site i's coefficients** (:func:`prior_without`, :func:`posterior`): the other sites alone give β̂₋ᵢ with
C₋ᵢ = Var(β̂₋ᵢ) and T₋ᵢ (both from them only), so before its own rows are seen site i's coefficients have the prior
βᵢ ~ N(β̂₋ᵢ, C₋ᵢ + T₋ᵢ); its own estimate adds N(b̂ᵢ; Aᵢβᵢ, V̂ᵢ), and the posterior mean (the empirical-Bayes
estimate, the BLUP of βᵢ given every site's estimate; Raudenbush & Bryk 1985, eq. 7) is

    β̃ᵢ = (Λ₋ᵢ + AᵢᵀV̂ᵢ⁻¹Aᵢ)⁺ (Λ₋ᵢ β̂₋ᵢ + AᵢᵀV̂ᵢ⁻¹ b̂ᵢ),   Λ₋ᵢ = (C₋ᵢ + T₋ᵢ)⁻¹

on the directions the other sites inform (0 elsewhere, where only site i speaks): the site's own estimate shrunk
towards the others' mean by how much sites differ (T) against how precise its own estimate is (V̂ᵢ). With T = 0,
β̃ᵢ is the fixed-effect combination of every site (Λ₋ᵢ = Σ_{j≠i} AⱼᵀV̂ⱼ⁻¹Aⱼ; every site gets the same slopes, the
model of :mod:`.fixed_effect`); with T large, the site's own. The site-specific entries (its intercepts) follow
the site's own normal approximation given β̃ᵢ: âᵢ + V̂ᵢ,aβ V̂ᵢ,ββ⁻¹ (Aᵢβ̃ᵢ − b̂ᵢ).

Everything of the prior is computed without site i, so site i can redo the posterior with an estimate from part of
its rows and stay honest about the rest (:mod:`.shared_oof`).

**Is site i like the others?** (:func:`deviation_from_prior`): under the model b̂ᵢ − Aᵢβ̂₋ᵢ ~ N(0, V̂ᵢ + Aᵢ(C₋ᵢ +
T₋ᵢ)Aᵢᵀ), so Qᵢ = rᵀ(V̂ᵢ + AᵢΣ₋ᵢAᵢᵀ)⁻¹r is χ² with dᵢ degrees of freedom (directions the others do not inform
are profiled out). With T = 0 it is the leave-one-out form of the fixed-effect site test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixed_effect import _direct, _pseudo_inverse, precision

TOL = 1e-10


def dersimonian_laird(estimates: np.ndarray, variances: np.ndarray) -> float:
    """τ̂² of one coefficient from k ≥ 1 estimates and their variances (module doc); 0 for k < 2."""
    b = np.asarray(estimates, dtype=np.float64)
    w = 1.0 / np.asarray(variances, dtype=np.float64)
    if len(b) < 2:
        return 0.0
    mean = float((w * b).sum() / w.sum())
    q = float((w * (b - mean) ** 2).sum())
    c = float(w.sum() - (w ** 2).sum() / w.sum())
    return max(0.0, (q - (len(b) - 1)) / c) if c > 0 else 0.0


def tau_squared(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray]) -> np.ndarray:
    """T's diagonal (d,): per common coefficient, :func:`dersimonian_laird` over the sites whose map estimates it
    directly (a unit row of Aᵢ)."""
    d = np.asarray(maps[0]).shape[1]
    out = np.zeros(d)
    for j in range(d):
        est, var = [], []
        for a, b, v in zip(maps, coefs, covs, strict=True):
            for r in np.flatnonzero(_direct(np.asarray(a, np.float64)) == j):
                est.append(float(np.ravel(b)[r]))
                var.append(float(np.asarray(v)[r, r]))
        out[j] = dersimonian_laird(np.array(est), np.array(var))
    return out


def proportional_tau(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray]) -> np.ndarray:
    """T's diagonal (d,) = τ̂²·diag(D) of the proportional form (module doc); zeros for fewer than two sites."""
    A = [np.asarray(a, np.float64) for a in maps]
    d = A[0].shape[1]
    if len(coefs) < 2:
        return np.zeros(d)
    Ws = [precision(np.asarray(v, np.float64)) for v in covs]
    Ms = [a.T @ w @ a for a, w in zip(A, Ws, strict=True)]
    W = sum(Ms)
    W_plus, rank = _pseudo_inverse((W + W.T) / 2)
    s = sum(a.T @ w @ np.ravel(b) for a, w, b in zip(A, Ws, coefs, strict=True))
    q = float(sum(np.ravel(b) @ w @ np.ravel(b) for w, b in zip(Ws, coefs, strict=True)) - s @ W_plus @ s)
    df = sum(len(np.ravel(b)) for b in coefs) - rank
    D = np.diag(len(coefs) * np.clip(np.diag(W_plus), 0.0, None))
    c = float(np.trace(W @ D) - np.trace(W_plus @ sum(m @ D @ m for m in Ms)))
    tau2 = max(0.0, (q - df) / c) if c > TOL and df > 0 else 0.0
    return tau2 * np.diag(D)


def between_sites(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray],
                  how: str = "proportional") -> np.ndarray:
    """T's diagonal (d,) by ``how`` = ``proportional`` | ``per-coefficient`` (module doc)."""
    if how == "per-coefficient":
        return tau_squared(coefs, covs, maps)
    if how != "proportional":
        raise ValueError(f"unknown between-site variance {how!r}")
    return proportional_tau(coefs, covs, maps)


def _information(coefs, covs, maps, tau2) -> tuple[np.ndarray, np.ndarray]:
    """(Σ AᵢᵀWᵢAᵢ, Σ AᵢᵀWᵢb̂ᵢ) with Wᵢ = (V̂ᵢ + AᵢTAᵢᵀ)⁻¹."""
    d = len(tau2)
    info, score = np.zeros((d, d)), np.zeros(d)
    for b, v, a in zip(coefs, covs, maps, strict=True):
        a = np.asarray(a, np.float64)
        w = precision(np.asarray(v, np.float64) + (a * tau2) @ a.T)
        info += a.T @ w @ a
        score += a.T @ w @ np.ravel(b)
    return (info + info.T) / 2, score


@dataclass
class RandomCombination:
    """β̂ (d,), Var(β̂) (d, d) and the τ² (d,) they were computed with."""

    coef: np.ndarray
    cov: np.ndarray
    tau2: np.ndarray


def combine_random(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray],
                   how: str = "proportional") -> RandomCombination:
    """The random-effects GLS combination (module doc), T by :func:`between_sites`."""
    t = between_sites(coefs, covs, maps, how)
    info, score = _information(coefs, covs, maps, t)
    cov, _ = _pseudo_inverse(info)
    return RandomCombination(cov @ score, cov, t)


@dataclass
class Prior:
    """Site i's prior from the other sites: mean β̂₋ᵢ (d,), precision Λ₋ᵢ = (C₋ᵢ + T₋ᵢ)⁻¹ on the directions they
    inform (0 elsewhere), and T₋ᵢ's diagonal. No other site: zero mean and precision (the site's own estimate)."""

    mean: np.ndarray
    precision: np.ndarray
    tau2: np.ndarray

    @property
    def informed(self) -> np.ndarray:
        """An orthonormal basis (d, r) of the directions the prior informs."""
        values, vectors = np.linalg.eigh((self.precision + self.precision.T) / 2)
        return vectors[:, values > TOL * max(float(values.max(initial=0.0)), 1e-300)]


def prior_from(coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray], random: bool,
               d: int, how: str = "proportional") -> Prior:
    """The prior that the sites given here imply for a further site (module doc): their combination (random
    effects with their own T, :func:`between_sites` ``how``, when ``random``; else fixed, T = 0) and its covariance
    plus T, as a precision."""
    if not coefs:
        return Prior(np.zeros(d), np.zeros((d, d)), np.zeros(d))
    tau2 = between_sites(coefs, covs, maps, how) if random else np.zeros(d)
    info, score = _information(coefs, covs, maps, tau2)
    values, vectors = np.linalg.eigh(info)
    keep = values > TOL * max(float(values.max(initial=0.0)), 1e-300)
    U = vectors[:, keep]
    mean = (U / values[keep]) @ (U.T @ score)  # the minimum-norm GLS solution: 0 where nobody informs
    cov_u = np.diag(1.0 / values[keep]) + (U.T * tau2) @ U  # (C + T) on the informed directions
    lam = U @ precision((cov_u + cov_u.T) / 2) @ U.T
    return Prior(mean, (lam + lam.T) / 2, tau2)


def prior_without(i: int, coefs: list[np.ndarray], covs: list[np.ndarray], maps: list[np.ndarray],
                  random: bool, how: str = "proportional") -> Prior:
    """Site i's prior: :func:`prior_from` the other sites."""
    rest = [k for k in range(len(coefs)) if k != i]
    d = np.asarray(maps[0]).shape[1]
    return prior_from([coefs[k] for k in rest], [covs[k] for k in rest], [maps[k] for k in rest], random, d, how)


def posterior(theta: np.ndarray, cov: np.ndarray, common: np.ndarray, A: np.ndarray, prior: Prior
              ) -> tuple[np.ndarray, np.ndarray]:
    """(β̃ᵢ (d,), the site's full vector): β̃ᵢ from its estimate's common entries ``common`` (indices into its
    flattened θ̂ᵢ, estimating Aβ) and the prior; the full vector has the common entries at Aβ̃ᵢ and the others
    (its intercepts) at their value given them (module doc)."""
    t = np.asarray(theta, np.float64).ravel()
    V = np.asarray(cov, np.float64)
    c = np.asarray(common, np.int64)
    A = np.asarray(A, np.float64)
    W = precision(V[np.ix_(c, c)])
    beta, _ = _posterior_mean(prior, A.T @ W @ A, A.T @ W @ t[c])
    full = t.copy()
    target = A @ beta
    full[c] = target
    own = np.setdiff1d(np.arange(len(t)), c)
    if len(own):
        full[own] = t[own] + V[np.ix_(own, c)] @ (W @ (target - t[c]))
    return beta, full


def _posterior_mean(prior: Prior, info: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covariance) of N(prior) × the likelihood with information ``info`` and score ``score``."""
    P = prior.precision + info
    cov, _ = _pseudo_inverse((P + P.T) / 2)
    return cov @ (prior.precision @ prior.mean + score), cov


def deviation_from_prior(theta: np.ndarray, cov: np.ndarray, common: np.ndarray, A: np.ndarray, prior: Prior
                         ) -> tuple[float, int, float]:
    """(Qᵢ, df, p-value) of the site's common entries against its prior (module doc); df = 0, p = 1 when the prior
    informs nothing the site estimates."""
    from scipy import stats  # the analyst's side only

    t = np.asarray(theta, np.float64).ravel()[np.asarray(common, np.int64)]
    V = np.asarray(cov, np.float64)[np.ix_(common, common)]
    A = np.asarray(A, np.float64)
    U = prior.informed
    if U.shape[1] == 0:
        return 0.0, 0, 1.0
    S = precision(U.T @ prior.precision @ U)  # the prior's covariance on the informed directions
    total = V + A @ U @ S @ U.T @ A.T
    Wt = precision((total + total.T) / 2)
    r = t - A @ prior.mean
    free = np.eye(A.shape[1]) - U @ U.T  # directions the prior leaves free: profiled out
    R = A @ free
    if np.abs(R).max(initial=0.0) > TOL:
        M = R.T @ Wt @ R
        M_inv, rank = _pseudo_inverse((M + M.T) / 2)
        Wt = Wt - Wt @ R @ M_inv @ R.T @ Wt
    else:
        rank = 0
    df = len(t) - rank
    if df <= 0:
        return 0.0, 0, 1.0
    q = float(r @ Wt @ r)
    return q, df, float(stats.chi2.sf(q, df))


__all__ = ["Prior", "RandomCombination", "between_sites", "combine_random", "dersimonian_laird", "deviation_from_prior",
           "posterior", "prior_from", "prior_without", "proportional_tau", "tau_squared"]
