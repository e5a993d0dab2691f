"""A site's logistic regression released with central (ε, δ)-differential privacy (``meta-lr``'s formal option).

What leaves a site under the option is a function of all its rows that is (ε, δ)-DP under replacing one row (the
adjacency of the DC family's formal noise, :mod:`core.privacy.mechanism`); the noise is added once per site, not
once per row, so its cost falls as 1/n. The steps, with the accounting:

1. **Public units.** Each row x (the kit's m encoded columns) becomes x′ = clip₁((x − μ) / (σ C)) with μ, σ the
   kit's PUBLIC means and spreads (never the site's own), C = √m, and clip₁ scaling a row down to L2 norm 1 when
   longer; z = [c₀, x′] with c₀ = 1/4 (a small intercept coordinate keeps the bound tight), so every row has
   ‖z‖ ≤ B = √(1 + c₀²) whatever the data.
2. **Objective perturbation** (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2, with Gaussian noise as in Kifer, Smith
   & Thakurta 2012, Thm 2): with q = K − 1 contrasts against the kit's first class (every kit class is fitted,
   present or not, so which classes a site has never leaks), θ̃ (q × p) minimises

       J(θ) = Σₛ −log p(yₛ | zₛ; θ) + (Λ/2) ‖θ‖² + bᵀθ,   b ~ N(0, s² I),

   a Λ-strongly convex objective (the ridge covers the intercepts too), solved by damped Newton to a gradient of
   10⁻¹⁰ of its scale. Privacy (replace row d by d′): θ ↦ b = −∇L(θ) − Λθ is a bijection, so the ratio of the
   output's densities under the two tables is the noise-density ratio times the Jacobian ratio
   det A_D(θ) / det A_D′(θ), A = ∇²L + ΛI.
   * Jacobian: one row's Hessian (diag π − ππᵀ) ⊗ zzᵀ has rank ≤ q and eigenvalues ≤ β (β = B²/4 for q = 1,
     B²/2 otherwise); by the matrix determinant lemma the ratio lies in [(1 + β/Λ)^−q, (1 + β/Λ)^q]: it costs
     ε₂ = q log(1 + β/Λ), i.e. Λ = β / (e^{ε₂/q} − 1).
   * Noise: b_D′(θ) = b_D(θ) + v with v = g_d(θ) − g_d′(θ), g_d = (π − e_y) ⊗ z_d and ‖π − e_y‖ ≤ a (a = 1 for
     q = 1, √2 otherwise), so ‖v‖ ≤ 2aB and bᵀv ≤ a (‖P_d b‖ + ‖P_d′ b‖) with P_d b = (b_kᵀ z_d)_k ~ N(0,
     s²‖z_d‖² I_q): the rows z_d, z_d′ are fixed, only the scalars in front of them depend on θ. The log-ratio
     (2bᵀv + ‖v‖²) / (2s²) exceeds ε₁ with probability ≤ 2 Pr[χ_q > κ] = δ when
         s = aB (κ + √(κ² + 2ε₁)) / ε₁,   κ the upper δ/2 quantile of χ_q.
   So θ̃ is (ε₁ + ε₂, δ)-DP, split by :data:`SHARES` (ε₁ = 0.85 ε, ε₂ = 0.15 ε: of the two settings tried on the
   clinical tables at ε = 1, this one with c₀ = 1/4 cost less than ε₁ = 0.9 ε with c₀ = 1/2 on nwtco and colon).
3. **Covariances that leak nothing.** The meta-analysis needs each estimate's covariance; the Hessian at θ̃
   depends on the rows, and releasing it through the Gaussian mechanism too cost more AUC than it gained
   (measured: −0.11 on flchain at ε = 1, against −0.005 without). So the site ships the covariance of a PUBLIC
   model instead: V = (n F + ΛI)⁻¹ with F = W ⊗ diag(c₀², 1/m, …, 1/m), W = diag(1/K) − 11ᵀ/K² (uniform classes,
   standardised independent columns) — a function of n and public constants only — and the covariance of its
   own noise, N = s² V V (to first order θ̃ − θ̂ = −(H + ΛI)⁻¹ b). The analyst adds N to V (the combination
   honours the noise); with every site's V of this form the combination weights sites by their rows, and its
   standard errors are approximate (they assume the public model's information).
4. Coefficients, V and N are returned in the columns' own units, as the plain fit's are.

Not covered: the row count n (public under replace-one) and the exactness of the minimiser (the proof assumes the
exact argmin). A second export spends ε again (:mod:`core.privacy.ledger` adds it up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .site_logit import probabilities as _probabilities

SHARES = {"noise": 0.85, "jacobian": 0.15}  # ε₁ (the objective's noise) and ε₂ (the Jacobian, through Λ)
INTERCEPT_COORDINATE = 0.25  # c₀
MECHANISM = ("objective perturbation of the ridge logistic regression with Gaussian noise (Chaudhuri et al. "
             "2011; Kifer et al. 2012); covariances of a public model")
ADJACENCY = "one row replaced (what leaves is (ε, δ)-DP for every row)"
NOT_COVERED = ("the number of rows (public under the 'one row replaced' definition)",
               "the exactness of the fit (the proof assumes the exact minimiser; it is solved to 1e-10)")


@dataclass
class PrivateLogit:
    """θ̃ as (q, p), V and N as (q·p, q·p), all in the columns' own units; ``accounting`` the budget."""

    coef: np.ndarray
    cov: np.ndarray
    noise_cov: np.ndarray
    accounting: dict


def accounting(epsilon: float, delta: float, n_classes: int) -> dict:
    """The budget of one release (module doc, step 2): ε₁, ε₂, the ridge Λ and the noise scale s."""
    from scipy.stats import chi  # the formal option only: a plain export loads no scipy

    if epsilon <= 0 or not 0 < delta < 1 or n_classes < 2:
        raise ValueError("epsilon > 0, 0 < delta < 1 and two classes at least are needed")
    q = int(n_classes) - 1
    B2 = 1.0 + INTERCEPT_COORDINATE ** 2
    beta = B2 / 4 if q == 1 else B2 / 2
    a = 1.0 if q == 1 else math.sqrt(2.0)
    e1, e2 = SHARES["noise"] * epsilon, SHARES["jacobian"] * epsilon
    kappa = float(chi.isf(delta / 2, q))
    return {"epsilon": float(epsilon), "delta": float(delta), "epsilon_noise": e1, "epsilon_jacobian": e2,
            "ridge": beta / math.expm1(e2 / q), "row_bound": math.sqrt(B2),
            "sigma": a * math.sqrt(B2) * (kappa + math.sqrt(kappa * kappa + 2 * e1)) / e1,
            "mechanism": MECHANISM, "adjacency": ADJACENCY,
            "composition": "basic: ε = ε_noise + ε_jacobian; δ from the noise's tail"}


def public_units(X: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, float]:
    """(Z, C): z = [c₀, clip₁((x − μ)/(σC))] for every row (step 1), C = √m."""
    X = np.asarray(X, np.float64)
    C = math.sqrt(X.shape[1])
    U = (X - centre) / (scale * C)
    norms = np.linalg.norm(U, axis=1)
    over = norms > 1.0
    U[over] /= norms[over, None]
    return np.column_stack([np.full(len(U), INTERCEPT_COORDINATE), U]), C


def _hessian(Z: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Σₛ (diag πₛ − πₛπₛᵀ) ⊗ zₛzₛᵀ over the q non-reference classes (class-major blocks)."""
    q, p = P.shape[1], Z.shape[1]
    H = np.empty((q * p, q * p))
    for k in range(q):
        for j in range(k, q):
            w = P[:, k] * ((k == j) - P[:, j])
            block = (Z * w[:, None]).T @ Z
            H[k * p:(k + 1) * p, j * p:(j + 1) * p] = block
            H[j * p:(j + 1) * p, k * p:(k + 1) * p] = block.T
    return H


def minimise(Z: np.ndarray, y: np.ndarray, n_classes: int, lam: float, b: np.ndarray, *, max_iter: int = 200,
             tol: float = 1e-10) -> np.ndarray:
    """argmin_θ Σ −log p(y|z;θ) + (Λ/2)‖θ‖² + bᵀθ (θ: (q, p)) by damped Newton."""
    n, p = Z.shape
    q = int(n_classes) - 1
    Y = np.zeros((n, q + 1))
    Y[np.arange(n), y] = 1.0
    Y = Y[:, 1:]
    b = b.reshape(q, p)

    def objective(t: np.ndarray) -> float:
        eta = Z @ t.T
        full = np.column_stack([np.zeros(n), eta])
        top = full.max(axis=1)
        lse = top + np.log(np.exp(full - top[:, None]).sum(axis=1))
        return float(lse.sum() - (Y * eta).sum() + 0.5 * lam * (t * t).sum() + (b * t).sum())

    theta = np.zeros((q, p))
    f = objective(theta)
    scale = max(1.0, float(np.abs(b).max()), float(n))
    for _ in range(max_iter):
        P = _probabilities(Z @ theta.T)[:, 1:]
        grad = ((P - Y).T @ Z + lam * theta + b).ravel()
        if float(np.abs(grad).max()) <= tol * scale:
            break
        H = _hessian(Z, P)
        H[np.diag_indices_from(H)] += lam
        step = np.linalg.solve(H, -grad).reshape(q, p)
        decrement = float(-(grad @ step.ravel()))
        t = 1.0
        while True:
            f_new = objective(theta + t * step)
            if f_new <= f - 1e-4 * t * decrement or t < 1e-12:
                break
            t *= 0.5
        theta, f = theta + t * step, f_new
    return theta


def public_covariance(n: int, m: int, n_classes: int, lam: float) -> np.ndarray:
    """V = (n F + ΛI)⁻¹ of the public model (step 3), in z-units."""
    K = int(n_classes)
    q = K - 1
    W = np.eye(q) / K - np.full((q, q), 1.0 / K ** 2)
    F = np.kron(W, np.diag(np.concatenate([[INTERCEPT_COORDINATE ** 2], np.full(m, 1.0 / m)])))
    V = np.linalg.inv(n * F + lam * np.eye(len(F)))
    return 0.5 * (V + V.T)


def _to_raw(theta: np.ndarray, mats: list[np.ndarray], centre: np.ndarray, scale: np.ndarray, C: float
            ) -> tuple[np.ndarray, list[np.ndarray]]:
    """From z-units to the columns' own units: η = c₀θ₀ + Σ θⱼ (xⱼ − μⱼ)/(σⱼC)."""
    q, _ = theta.shape
    T = np.diag(np.concatenate([[INTERCEPT_COORDINATE], 1.0 / (scale * C)]))
    T[0, 1:] = -centre / (scale * C)
    TT = np.kron(np.eye(q), T)
    out = []
    for M in mats:
        R = TT @ M @ TT.T
        out.append(0.5 * (R + R.T))
    return theta @ T.T, out


def fit_private_logit(X: np.ndarray, y: np.ndarray, n_classes: int, *, epsilon: float, delta: float,
                      centre: np.ndarray, scale: np.ndarray, rng: np.random.Generator) -> PrivateLogit:
    """The release of the module doc on rows X (n, m) with classes y ∈ [0, K) (every kit class is fitted).
    ``rng`` must be the operating system's generator (:func:`core.privacy.protective.protective_rng`): no seed
    may replay b."""
    acc = accounting(epsilon, delta, n_classes)
    centre, scale = np.asarray(centre, np.float64), np.asarray(scale, np.float64)
    Z, C = public_units(X, centre, scale)
    q, p = int(n_classes) - 1, Z.shape[1]
    lam = acc["ridge"]
    b = rng.standard_normal(q * p) * acc["sigma"]
    theta = minimise(Z, np.asarray(y, np.int64), n_classes, lam, b)
    V = public_covariance(len(Z), p - 1, n_classes, lam)
    N = acc["sigma"] ** 2 * V @ V
    coef, (cov, noise_cov) = _to_raw(theta, [V, N], centre, scale, C)
    return PrivateLogit(coef, cov, noise_cov, {**acc, "columns_scale": C})
