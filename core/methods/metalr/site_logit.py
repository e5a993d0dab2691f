"""A site's penalised multinomial logistic regression, with the covariance of its coefficients.

With z = [1, x] (p = m + 1 entries: the intercept first, then the kit's m encoded columns in their own units)
and the first class as reference (η₀ = 0), class k = 1 … K − 1 has η_k = zᵀθ_k and

    p(k | x) = exp η_k / (1 + Σ_l exp η_l).

θ = (θ₁, …, θ_{K−1}) (class-major, (K − 1)·p numbers) minimises

    f(θ) = −Σ_s log p(y_s | x_s) + (λ/2) Σ_k Σ_{j ≥ 1} (s_j θ_kj)²,

a ridge penalty on the slopes only (never the intercepts), with s_j the column's public scale (its public
standard deviation when the kit gives one, else 1: raw units). The penalty keeps the estimate finite when a
small site's classes are separated by a column, and makes collinear columns (a one-hot group beside the
intercept) estimable. Binary outcomes are the case K = 2 (one logit). f is strictly convex once every class
has a row, so Newton–Raphson with step halving converges; the gradient and Hessian are

    ∇_k f = −Σ_s (1[y_s = k] − π_sk) z_s + λ S² θ_k,
    ∇²_{kl} f = Σ_s π_sk (δ_kl − π_sl) z_s z_sᵀ + δ_kl λ S²,   S² = diag(0, s₁², …, s_m²).

The covariance is V̂ = (∇²f(θ̂))⁻¹, the inverse of the penalised observed information.

The solve runs on the columns centred and scaled by the site's own mean and spread, purely as a
preconditioner: with θ = Tγ (T maps centred-scaled coefficients back to raw units) the problem is the same
one, so θ̂ = Tγ̂ and V̂ = (I ⊗ T) V̂_γ (I ⊗ T)ᵀ are exactly the raw-unit estimate and covariance — nothing in
what leaves depends on the site's own statistics except through the fit itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SiteLogit:
    """θ̂ as (K − 1, p) (row k − 1 is class k against the reference; column 0 the intercept), V̂ as (d, d)
    with d = (K − 1)·p in the same class-major order, and how the solve went."""

    coef: np.ndarray
    cov: np.ndarray
    iterations: int
    converged: bool


UNSEEN = 1e4  # a class the package must never predict: its logit this far below (exp(−10⁴) = 0)


def only_classes(theta: np.ndarray, keep: list[int]) -> np.ndarray:
    """θ ((K − 1) × p, class k against the kit's first) with every class outside ``keep`` given no probability:
    its logit set to −UNSEEN (slopes 0) before the logits are re-expressed against the first class."""
    full = np.vstack([np.zeros((1, theta.shape[1])), theta])
    out = np.setdiff1d(np.arange(len(full)), keep)
    if len(out) == 0:
        return theta
    full[out] = 0.0
    full[out, 0] = -UNSEEN
    return np.ascontiguousarray(full[1:] - full[0])


def probabilities(eta: np.ndarray) -> np.ndarray:
    """(n, K) class probabilities from the (n, K − 1) logits against the reference class."""
    full = np.column_stack([np.zeros(len(eta)), eta])
    full -= full.max(axis=1, keepdims=True)
    e = np.exp(full)
    return e / e.sum(axis=1, keepdims=True)


def predict_proba(coef: np.ndarray, X: np.ndarray) -> np.ndarray:
    """p(k | x) for every row of X (n, m) under θ = ``coef`` (K − 1, m + 1)."""
    X = np.asarray(X, dtype=np.float64)
    return probabilities(coef[:, 0] + X @ coef[:, 1:].T)


def fit_site_logit(X: np.ndarray, y: np.ndarray, n_classes: int, *, lam: float, scale: np.ndarray | None = None,
                   max_iter: int = 100, tol: float = 1e-9) -> SiteLogit:
    """Fit θ̂ and V̂ (module doc) on rows X (n, m) with classes y ∈ [0, K); every class needs a row."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n, m = X.shape
    K = int(n_classes)
    q, p = K - 1, m + 1
    s = np.ones(m) if scale is None else np.asarray(scale, dtype=np.float64)
    centre = X.mean(axis=0)
    spread = X.std(axis=0)
    spread[~(spread > 1e-12 * np.maximum(1.0, np.abs(centre)))] = 1.0  # a constant column: only the penalty
    Z = np.column_stack([np.ones(n), (X - centre) / spread])
    pen = np.concatenate([[0.0], lam * (s / spread) ** 2])  # (s_j θ_j)² in γ-units: θ_j = γ_j / spread_j
    Y = np.zeros((n, K))
    Y[np.arange(n), y] = 1.0
    Y = Y[:, 1:]

    def objective(g: np.ndarray) -> float:
        eta = Z @ g.T
        full = np.column_stack([np.zeros(n), eta])
        top = full.max(axis=1)
        lse = top + np.log(np.exp(full - top[:, None]).sum(axis=1))
        return float(lse.sum() - (Y * eta).sum() + 0.5 * (pen * g * g).sum())

    def hessian(P: np.ndarray) -> np.ndarray:
        H = np.empty((q * p, q * p))
        for k in range(q):
            for j in range(k, q):
                w = P[:, k] * ((k == j) - P[:, j])
                block = (Z * w[:, None]).T @ Z
                if k == j:
                    block[np.diag_indices(p)] += pen
                H[k * p:(k + 1) * p, j * p:(j + 1) * p] = block
                H[j * p:(j + 1) * p, k * p:(k + 1) * p] = block.T
        return H

    g = np.zeros((q, p))
    f = objective(g)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        P = probabilities(Z @ g.T)[:, 1:]
        grad = ((P - Y).T @ Z + pen * g).ravel()
        H = hessian(P)
        step = np.linalg.solve(H, -grad).reshape(q, p)
        decrement = float(-(grad @ step.ravel()))  # Newton decrement²: the predicted decrease × 2
        if decrement <= 2 * tol * max(1.0, abs(f)):
            converged = True
            break
        t = 1.0
        while True:
            f_new = objective(g + t * step)
            if f_new <= f - 1e-4 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        g, f = g + t * step, f_new
    P = probabilities(Z @ g.T)[:, 1:]
    cov_g = np.linalg.inv(hessian(P))
    T = np.diag(np.concatenate([[1.0], 1.0 / spread]))
    T[0, 1:] = -centre / spread
    coef = g @ T.T
    TT = np.kron(np.eye(q), T)
    cov = TT @ cov_g @ TT.T
    return SiteLogit(coef, 0.5 * (cov + cov.T), it, converged)
