"""The site's own-rows baseline: a multinomial logistic regression on its standardised raw columns.

Trained at export time and kept in the site's workspace as plain arrays (never shipped, never pickled), so
that ``participant apply --validate`` can score the analyst's package beside what the site would have had
alone. With z = (x − μ)/σ, p(k|x) = softmax(zW + b)_k, and (W, b) minimise

    Σ_s −log p(y_s|x_s) + (λ/2)‖W‖²,   λ = 1 (scikit-learn's C = 1),

by L-BFGS (Nocedal & Wright, Alg. 7.4, memory 10, Armijo backtracking; written out in numpy so an export
needs no scipy import). With two classes the penalty is doubled, 2 · (λ/2)‖W‖²: at the optimum W = [−w/2, w/2],
so this is exactly the binary logistic regression with (λ/2)‖w‖² on its one weight vector w (scikit-learn's
binary ``LogisticRegression(C=1)``, what a biostatistician would fit) rather than half as regularised.
At most ``max_rows`` rows (a seeded subsample) are used, which bounds the export's cost.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..parallel import one_blas_thread

PREFIX = "local_"
NAMES = ("local_w", "local_b", "local_mean", "local_scale")


def fit_local_model(X: np.ndarray, y: np.ndarray, n_classes: int, *, max_rows: int = 20000, seed: int = 0,
                    lam: float = 1.0, max_iter: int = 200, standardise: bool = True) -> dict[str, np.ndarray]:
    """Fit on (X, y ∈ [0, K)); returns ``{"local_w" (m, K), "local_b" (K,), "local_mean", "local_scale"}``.
    ``standardise=False`` only centres (σ = 1): for rows already on a common scale."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    if len(y) > max_rows:
        keep = local_rows(np.arange(len(y)), max_rows, seed)
        X, y = X[keep], y[keep]
    mean = X.mean(axis=0)
    scale = X.std(axis=0) if standardise else np.ones(X.shape[1])
    scale[~(scale > 1e-12)] = 1.0
    Z = (X - mean) / scale
    n, m = Z.shape
    K = int(n_classes)
    if K == 2:
        lam = 2.0 * lam  # the binary model's penalty (see the module's docstring)
    Zt = np.ascontiguousarray(Z.T)  # columns × rows: the class axis of the logits is then not the last (3–4× faster)
    Yt = np.zeros((K, n))
    Yt[y, np.arange(n)] = 1.0

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = theta[: m * K].reshape(m, K), theta[m * K:]
        s = W.T @ Zt  # (K, n) logits
        s += b[:, None]
        s -= s.max(axis=0)
        e = np.exp(s)
        tot = e.sum(axis=0)
        f = float(np.log(tot).sum() - np.einsum("kn,kn->", Yt, s) + 0.5 * lam * (W * W).sum())
        e /= tot
        e -= Yt  # G = P − Y, (K, n)
        return f, np.concatenate([(Zt @ e.T + lam * W).ravel(), e.sum(axis=1)])

    with one_blas_thread():  # tiny products: spinning threads on a busy machine cost 10× the work
        x = lbfgs(loss, np.zeros(m * K + K), max_iter)
    W, b = x[: m * K].reshape(m, K), x[m * K:]
    return {"local_w": W, "local_b": b, "local_mean": mean, "local_scale": scale}


MAX_LOCAL_ROWS = 20000  # fit_local_model's default cap


def local_rows(rows: np.ndarray, max_rows: int = MAX_LOCAL_ROWS, seed: int = 0) -> np.ndarray:
    """The rows :func:`fit_local_model` fits on: all of ``rows``, or its seeded subsample of ``max_rows``."""
    if len(rows) <= max_rows:
        return rows
    return rows[np.sort(np.random.default_rng([int(seed), 11]).choice(len(rows), max_rows, replace=False))]


def lbfgs(fun, x: np.ndarray, max_iter: int = 200, memory: int = 10, gtol: float = 1e-5) -> np.ndarray:
    """Minimise a smooth ``fun(x) → (f, ∇f)``: two-loop recursion for the direction, backtracking to the
    Armijo condition f(x + αd) ≤ f(x) + 10⁻⁴ α ∇fᵀd; stops when ‖∇f‖∞ ≤ gtol·max(1, |f|)."""
    f, g = fun(x)
    S: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    for _ in range(max_iter):
        if np.max(np.abs(g)) <= gtol * max(1.0, abs(f)):
            break
        q = g.copy()
        alphas = []
        for s_, y_ in zip(reversed(S), reversed(Y), strict=True):
            a = (s_ @ q) / (y_ @ s_)
            alphas.append(a)
            q -= a * y_
        if S:
            q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
        else:
            q /= max(1.0, float(np.linalg.norm(g)))
        for (s_, y_), a in zip(zip(S, Y, strict=True), reversed(alphas), strict=True):
            q += s_ * (a - (y_ @ q) / (y_ @ s_))
        d = -q
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart from steepest descent
            S.clear()
            Y.clear()
            d, slope = -g, -float(g @ g)
        step = 1.0
        while True:
            f_new, g_new = fun(x + step * d)
            if f_new <= f + 1e-4 * step * slope or step < 1e-10:
                break
            step *= 0.5
        s_new, y_new = step * d, g_new - g
        x, f, g = x + s_new, f_new, g_new
        if y_new @ s_new > 1e-12:
            S.append(s_new)
            Y.append(y_new)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
    return x


def has_local_model(arrays: dict) -> bool:
    return all(k in arrays for k in NAMES)


def keeps_local_model(manifest: dict, private_arrays: dict) -> bool:
    """Whether a package defers to the site's own-rows model: it says "keep your own" (``model`` = own,
    ``own_kind`` = linear, FORMAT.md §7) and the site's workspace keeps that model."""
    return (manifest.get("model") == "own" and manifest.get("own_kind") == "linear"
            and has_local_model(private_arrays))


def local_predict_proba(arrays: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """p(k|x) of the stored model for the rows X (kit column order)."""
    W, b, mean, scale = (np.asarray(arrays[k], np.float64) for k in NAMES)
    if W.ndim != 2 or W.shape[0] != X.shape[1] or b.shape != (W.shape[1],):
        raise FormatError("the workspace's local model does not fit these columns")
    s = ((np.asarray(X, np.float64) - mean) / scale) @ W + b
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)
