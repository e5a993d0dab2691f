"""Many small logistic regressions at once: :func:`core.learn.local_model.fit_local_model` for a batch (issue #36).

The analyst fits each site's linear own-rows twin on every training fold of the selection (:mod:`core.learn.
cluster_models`): five small problems per site, fifty thousand at 10,000 sites. One at a time, each L-BFGS step is a
few dozen numpy calls on a 240 × 15 table, so the calls, not the arithmetic, cost the time. Here P problems move
together: :func:`lbfgs_batch` is the L-BFGS of :func:`core.learn.local_model.lbfgs` (Nocedal & Wright, Alg. 7.4,
memory 10, Armijo backtracking, the same stopping rule) run for every problem at once — each problem takes exactly
the steps it would take alone (to rounding), and leaves the batch when it stops — and :func:`fit_local_models`
evaluates the multinomial loss of all of them in stacked products, each problem's rows padded to the longest with
rows of weight 0:

    f_p(W, b) = Σ_s w_ps · (−log softmax(z_ps W + b)_{y_ps}) + (λ/2)‖W‖²,  λ = 1 (2 with two classes),

z the rows centred on the problem's own mean (the model of :func:`~core.learn.local_model.fit_local_model` with
``standardise=False``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..parallel import one_blas_thread

BATCH = 32  # problems fitted together: their working set (~32 × 240 rows × 15 columns) stays in the CPU cache


def lbfgs_batch(fun: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]], x: np.ndarray,
                max_iter: int = 200, memory: int = 10, gtol: float = 1e-5) -> np.ndarray:
    """Minimise P smooth problems at once: ``fun(idx, X)`` → (f (A,), ∇f (A, m)) of problems ``idx`` at X (A, m);
    ``x`` (P, m) the starts. Per problem exactly :func:`core.learn.local_model.lbfgs`: the two-loop recursion over
    its last ``memory`` pairs (s, y) with yᵀs > 10⁻¹², steepest descent when that is no descent direction, step
    halving to the Armijo condition f(x + αd) ≤ f(x) + 10⁻⁴ α ∇fᵀd (down to α < 10⁻¹⁰), stopping when
    ‖∇f‖∞ ≤ gtol·max(1, |f|) or after ``max_iter`` steps."""
    x = np.array(x, np.float64)
    P, m = x.shape
    f, g = fun(np.arange(P), x)
    S = np.zeros((P, memory, m))                       # pairs kept, oldest first; empty slots are zero
    Y = np.zeros((P, memory, m))
    rho = np.zeros((P, memory))                        # 1 / yᵀs of each pair (0 for an empty slot)
    held = np.zeros(P, np.int64)
    active = np.arange(P)
    for _ in range(max_iter):
        if active.size == 0:
            break
        ga, fa = g[active], f[active]
        active = active[np.abs(ga).max(axis=1) > gtol * np.maximum(1.0, np.abs(fa))]
        if active.size == 0:
            break
        ga, fa, h = g[active], f[active], held[active]
        Sa, Ya, ra = S[active], Y[active], rho[active]
        top = int(h.max())
        q = ga.copy()
        alphas = np.zeros((len(active), memory))
        for j in range(top - 1, -1, -1):                 # newest to oldest (empty slots add nothing)
            a = ra[:, j] * np.einsum("pm,pm->p", Sa[:, j], q)
            alphas[:, j] = a
            q -= a[:, None] * Ya[:, j]
        rows = np.arange(len(active))
        last = np.maximum(h - 1, 0)
        y_last = Ya[rows, last]
        yy = np.einsum("pm,pm->p", y_last, y_last)
        sy = 1.0 / np.where(h > 0, ra[rows, last], 1.0)      # sᵀy of the newest pair (held pairs have ρ > 0)
        gamma = np.where(h > 0, sy / np.where(yy > 0, yy, 1.0), 1.0 / np.maximum(1.0, np.linalg.norm(ga, axis=1)))
        q *= gamma[:, None]
        for j in range(top):                             # oldest to newest
            b = ra[:, j] * np.einsum("pm,pm->p", Ya[:, j], q)
            q += (alphas[:, j] - b)[:, None] * Sa[:, j]
        d = -q
        slope = np.einsum("pm,pm->p", ga, d)
        restart = slope >= 0                              # no descent direction: steepest descent, history cleared
        if restart.any():
            d[restart] = -ga[restart]
            slope[restart] = -np.einsum("pm,pm->p", ga[restart], ga[restart])
            k = active[restart]
            held[k], S[k], Y[k], rho[k] = 0, 0.0, 0.0, 0.0
        step = np.ones(len(active))
        xa = x[active]
        f_new, g_new = fun(active, xa + d)
        pending = ~((f_new <= fa + 1e-4 * step * slope) | (step < 1e-10))
        while pending.any():
            j = np.flatnonzero(pending)
            step[j] *= 0.5
            f_new[j], g_new[j] = fun(active[j], xa[j] + step[j, None] * d[j])
            pending[j] = ~((f_new[j] <= fa[j] + 1e-4 * step[j] * slope[j]) | (step[j] < 1e-10))
        s_new = step[:, None] * d
        y_new = g_new - ga
        x[active], f[active], g[active] = xa + s_new, f_new, g_new
        ys = np.einsum("pm,pm->p", y_new, s_new)
        keep = ys > 1e-12
        if keep.any():
            k = active[keep]
            full = held[k] == memory
            if full.any():                                # drop the oldest pair
                kf = k[full]
                S[kf, :-1], Y[kf, :-1], rho[kf, :-1] = S[kf, 1:], Y[kf, 1:], rho[kf, 1:]
                held[kf] -= 1
            S[k, held[k]], Y[k, held[k]], rho[k, held[k]] = s_new[keep], y_new[keep], 1.0 / ys[keep]
            held[k] += 1
    return x


def fit_local_models(Xs: list[np.ndarray], ys: list[np.ndarray], n_classes: int, *, lam: float = 1.0,
                     max_iter: int = 200) -> list[dict[str, np.ndarray]]:
    """:func:`~core.learn.local_model.fit_local_model` (``standardise=False``, every row) of each (X, y), in
    batches of :data:`BATCH` problems with the same number of columns: the same models, to rounding."""
    out: list[dict | None] = [None] * len(Xs)
    by_width: dict[int, list[int]] = {}
    for p, X in enumerate(Xs):
        by_width.setdefault(int(np.shape(X)[1]), []).append(p)
    with one_blas_thread():
        for members in by_width.values():
            members = sorted(members, key=lambda p: len(ys[p]))  # similar lengths together: little padding
            for start in range(0, len(members), BATCH):
                chunk = members[start:start + BATCH]
                for p, model in zip(chunk, _fit_batch([Xs[p] for p in chunk], [ys[p] for p in chunk], n_classes,
                                                      lam, max_iter), strict=True):
                    out[p] = model
    return out  # type: ignore[return-value]


def _fit_batch(Xs: list[np.ndarray], ys: list[np.ndarray], n_classes: int, lam: float, max_iter: int
               ) -> list[dict[str, np.ndarray]]:
    K, P = int(n_classes), len(Xs)
    m = int(Xs[0].shape[1])
    n_max = max(len(y) for y in ys)
    Zt = np.zeros((P, m, n_max))              # columns × rows: the class axis of the logits is then not the last
    Yt = np.zeros((P, K, n_max))
    wt = np.zeros((P, 1, n_max))
    means = np.zeros((P, m))
    for p, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        X = np.asarray(X, np.float64)
        n = len(y)
        means[p] = X.mean(axis=0)
        Zt[p, :, :n] = (X - means[p]).T
        Yt[p, np.asarray(y, np.int64), np.arange(n)] = 1.0
        wt[p, 0, :n] = 1.0
    if K == 2:
        lam = 2.0 * lam  # the binary model's penalty (core.learn.local_model)
    mK = m * K

    def loss(idx: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Zi, Yi, wi = (Zt, Yt, wt) if len(idx) == P else (Zt[idx], Yt[idx], wt[idx])
        W = theta[:, :mK].reshape(-1, m, K)
        s = np.matmul(W.transpose(0, 2, 1), Zi)                   # (A, K, n) logits
        s += theta[:, mK:, None]
        s -= s.max(axis=1, keepdims=True)
        sy = np.einsum("akn,akn->a", Yi, s)
        e = np.exp(s)
        tot = e.sum(axis=1, keepdims=True)
        f = (np.log(tot) * wi).sum(axis=(1, 2)) - sy + 0.5 * lam * np.einsum("am,am->a", theta[:, :mK], theta[:, :mK])
        e /= tot
        e -= Yi
        e *= wi                                                      # G = (P − Y)·w, (A, K, n)
        grad = np.empty_like(theta)
        grad[:, :mK] = (np.matmul(Zi, e.transpose(0, 2, 1)) + lam * W).reshape(-1, mK)
        grad[:, mK:] = e.sum(axis=2)
        return f, grad

    x = lbfgs_batch(loss, np.zeros((P, mK + K)), max_iter)
    return [{"local_w": x[p, :mK].reshape(m, K), "local_b": x[p, mK:], "local_mean": means[p],
             "local_scale": np.ones(m)} for p in range(P)]
