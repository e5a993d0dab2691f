"""Intercepts (and one slope) on fixed offsets, fitted by Newton's method for many problems at once (issue #36).

The site's updates (:mod:`core.learn.site_update`) fit a multinomial GLM with an offset: for problem g with offsets
B_g (n × K), an optional slope covariate L_g (n × K), row weights w_g (0 or 1: the rows a fold trains on) and
labels y,

    z_gsk = B_gsk + a_gk + (β_g − 1)·L_gsk,   a_g0 = 0 (the first class is the reference),
    maximise  f_g = Σ_s w_gs log softmax(z_gs)_{y_s} − ρ(‖a_g‖² + (β_g − 1)²),   ρ = 10⁻⁴,

over θ_g = (a_g1 … a_g,K−1[, β_g − 1]). With P_gs = softmax(z_gs) and D_sk the derivative of z_sk in θ (the unit
vectors of the intercepts, and L_sk for the slope), the gradient is Σ_s w_s Σ_k (1[y_s = k] − P_sk) D_sk − 2ρθ and
the negative Hessian H = Σ_s w_s (Σ_k P_sk D_sk D_skᵀ − m_s m_sᵀ) + 2ρI, m_s = Σ_k P_sk D_sk; for the intercepts
alone H = diag(Σ_s w_s P_s) − Σ_s w_s P_s P_sᵀ (classes 1 … K − 1) + 2ρI. Each problem takes Newton steps
θ ← θ + t·H⁻¹∇f, halving t (down to 10⁻⁴) until f does not decrease by more than 10⁻¹²; it stops when a step
cannot be found, or after the step that raised f by less than 10⁻¹⁰·max(1, |f|) — each problem exactly as one
problem alone would, so a batch gives every problem's own answer (to rounding).

Without a slope, P_gsk = E_gsk e^{a_gk} / Σ_j E_gsj e^{a_gj} with E = exp(B − max_k B) computed once, so a step
costs products, not exponentials.
"""

from __future__ import annotations

import numpy as np

RIDGE = 1e-4
ITERATIONS = 50


def fit_offsets_batch(base: np.ndarray, y: np.ndarray, slope_of: np.ndarray | None = None,
                      weight: np.ndarray | None = None, *, iters: int = ITERATIONS, ridge: float = RIDGE
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a (G, K), β (G,), log-likelihood at the optimum without the penalty (G,)) of the module's G problems:
    ``base`` (G, n, K), labels ``y`` (n,) shared by all, ``slope_of`` (G, n, K) or None (β = 1), ``weight`` (G, n)
    or None (every row counts once)."""
    B = np.asarray(base, np.float64)
    G, n, K = B.shape
    y = np.asarray(y, np.int64)
    w = np.ones((G, n)) if weight is None else np.asarray(weight, np.float64)
    L = None if slope_of is None else np.asarray(slope_of, np.float64)
    q = K - 1 + (L is not None)
    onehot = np.zeros((n, K))
    onehot[np.arange(n), y] = 1.0
    counts = w @ onehot                                       # Σ_s w_s 1[y_s = k]   (G, K)
    total = w.sum(axis=1)
    mB = B.max(axis=2)
    const = np.einsum("gn,gn->g", w, B[:, np.arange(n), y] - mB)  # Σ_s w_s (B_{s,y_s} − max_k B_sk)
    E = np.exp(B - mB[:, :, None]) if L is None else None
    Ly = None if L is None else np.einsum("gn,gn->g", w, L[:, np.arange(n), y])

    def split(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.concatenate([np.zeros((len(theta), 1)), theta[:, :K - 1]], axis=1)
        slope = theta[:, K - 1] if L is not None else np.zeros(len(theta))
        return a, slope

    def rows_of(arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return arr if len(idx) == G else arr[idx]

    def state(idx: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, tuple]:
        """(log-likelihood (A,), what the step needs) of problems ``idx`` at θ: without a slope (c = e^{a − max a},
        S_s = Σ_k E_sk c_k), with one P."""
        a, slope = split(theta)
        if L is None:
            ma = a.max(axis=1)
            c = np.exp(a - ma[:, None])
            S = np.matmul(rows_of(E, idx), c[:, :, None])[:, :, 0]
            ll = const[idx] + np.einsum("gk,gk->g", counts[idx], a) - total[idx] * ma \
                - np.einsum("gn,gn->g", rows_of(w, idx), np.log(S))
            return ll, (c, S)
        Z = rows_of(B, idx) + a[:, None, :] + slope[:, None, None] * rows_of(L, idx)
        mZ = Z.max(axis=2)
        Q = np.exp(Z - mZ[:, :, None])
        S = Q.sum(axis=2)
        zy = const[idx] + np.einsum("gn,gn->g", rows_of(w, idx), rows_of(mB, idx)) \
            + np.einsum("gk,gk->g", counts[idx], a) + slope * Ly[idx]
        ll = zy - np.einsum("gn,gn->g", rows_of(w, idx), mZ + np.log(S))
        Q /= S[:, :, None]
        return ll, (Q,)

    def take(st: tuple, j: np.ndarray) -> tuple:
        return tuple(x[j] for x in st)

    def put(st: tuple, j: np.ndarray, new: tuple) -> None:
        for x, v in zip(st, new, strict=True):
            x[j] = v

    def derivatives(idx: np.ndarray, st: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(∇f without the ridge, H without the ridge) of problems ``idx`` at their state."""
        wa = rows_of(w, idx)
        grad = np.empty((len(idx), q))
        if L is None:
            c, S = st
            Ea = rows_of(E, idx)
            v = wa / S
            colP = c * np.matmul(v[:, None, :], Ea)[:, 0, :]          # Σ_s w_s P_sk
            M = np.matmul(Ea.transpose(0, 2, 1), Ea * (v / S)[:, :, None])
            H = -(c[:, 1:, None] * M[:, 1:, 1:] * c[:, None, 1:])     # − Σ_s w_s P_sk P_sl
        else:
            (Pa,) = st
            WP = Pa * wa[:, :, None]
            colP = WP.sum(axis=1)
            H = -np.matmul(WP[:, :, 1:].transpose(0, 2, 1), Pa[:, :, 1:])
        d = np.arange(K - 1)
        H[:, d, d] += colP[:, 1:]
        grad[:, :K - 1] = (counts[idx] - colP)[:, 1:]
        if L is not None:
            La = rows_of(L, idx)
            m = np.einsum("gnk,gnk->gn", Pa, La)               # m_s = Σ_k P_sk L_sk
            grad[:, K - 1] = Ly[idx] - np.einsum("gn,gn->g", wa, m)
            PL = np.einsum("gnk,gnk->gk", WP, La)[:, 1:] - np.einsum("gnk,gn->gk", WP[:, :, 1:], m)
            HB = np.empty((len(idx), q, q))
            HB[:, :K - 1, :K - 1] = H
            HB[:, :K - 1, K - 1] = HB[:, K - 1, :K - 1] = PL
            HB[:, K - 1, K - 1] = np.einsum("gnk,gnk->g", WP, La * La) - np.einsum("gn,gn->g", wa, m * m)
            H = HB
        return grad, H

    theta = np.zeros((G, q))
    ll, st = state(np.arange(G), theta)
    f = ll.copy()
    active = np.arange(G)
    dq = np.arange(q)
    for _ in range(iters):
        if active.size == 0:
            break
        th = theta[active]
        grad, H = derivatives(active, st if len(active) == G else take(st, active))
        grad -= 2 * ridge * th
        H[:, dq, dq] += 2 * ridge
        step, ok = _solve(H, grad)
        # step halving per problem, as one problem alone would
        t = np.ones(len(active))
        new = th + step
        ll_new, st_new = state(active, new)
        f_new = ll_new - ridge * np.einsum("gq,gq->g", new, new)
        f_old = f[active]
        pending = (f_new < f_old - 1e-12) & ok
        while pending.any():
            j = np.flatnonzero(pending)
            t[j] /= 2
            new[j] = th[j] + t[j, None] * step[j]
            ll_j, st_j = state(active[j], new[j])
            ll_new[j] = ll_j
            put(st_new, j, st_j)
            f_new[j] = ll_j - ridge * np.einsum("gq,gq->g", new[j], new[j])
            pending[j] = (f_new[j] < f_old[j] - 1e-12) & (t[j] >= 1e-4)
        moved = ok & ~(f_new < f_old - 1e-12)
        done = moved & (f_new - f_old < 1e-10 * np.maximum(1.0, np.abs(f_old)))
        upd = active[moved]
        theta[upd], f[upd], ll[upd] = new[moved], f_new[moved], ll_new[moved]
        put(st, upd, take(st_new, np.flatnonzero(moved)))
        active = active[moved & ~done]
    a, slope = split(theta)
    return a, 1.0 + slope, ll


def _solve(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """H⁻¹g per problem, and whether it could be solved (a singular H stops that problem, as alone)."""
    try:
        return np.linalg.solve(H, g[:, :, None])[:, :, 0], np.ones(len(g), bool)
    except np.linalg.LinAlgError:
        out, ok = np.zeros_like(g), np.ones(len(g), bool)
        for i in range(len(g)):
            try:
                out[i] = np.linalg.solve(H[i], g[i])
            except np.linalg.LinAlgError:
                ok[i] = False
        return out, ok
