"""A pooled linear model with site-specific intercepts: the DC family's linear candidate (issue #37).

Sites differ in base rate; one intercept for the pool gives each site the pool's. The literature's first fix for
clustered data (Debray et al. 2013, "A framework for developing, implementing, and evaluating clinical prediction
models in an individual participant data meta-analysis", *Stat Med* 32: 3158) is a stratified intercept: common
slopes, one intercept per site. On the aligned, standardised rows z of a group's members (the same inputs as the
group's MLP, :mod:`core.learn.cluster_models`), with c_s the intercepts of site s,

    p(k | z, s) = softmax(zW + c_s)_k,
    (W, c) minimise  Σ_rows −log p(y | z, s) + (λ/2)‖W‖² + (λ_c/2)‖c‖²,   λ = 1, λ_c = 10⁻³,

(λ doubled with two classes, as the site's own model, :mod:`core.learn.local_model`; the small λ_c only pins the
softmax's free constant and a class a site never saw). A site's model is then the one-layer network (W, c_s):
the package format of a group model, without a class-prior correction (c_s is the site's own base rate).
"""

from __future__ import annotations

import numpy as np

from ..parallel import one_blas_thread
from .local_model import lbfgs

LAMBDA = 1.0
LAMBDA_INTERCEPTS = 1e-3


def fit_site_intercepts(Z: np.ndarray, y: np.ndarray, site: np.ndarray, n_sites: int, n_classes: int, *,
                        max_iter: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """(W (d, K), C (n_sites, K)) of the module's model on standardised rows Z with labels y and the row's site
    index ``site`` ∈ [0, n_sites)."""
    Z = np.asarray(Z, np.float64)
    y = np.asarray(y, np.int64)
    site = np.asarray(site, np.int64)
    n, d = Z.shape
    K, S = int(n_classes), int(n_sites)
    lam = 2.0 * LAMBDA if K == 2 else LAMBDA
    rows = np.arange(n)
    Zt = np.ascontiguousarray(Z.T)   # the logits are laid out classes × rows: each class's pass runs along memory
    counts = np.bincount(site, minlength=S).astype(np.float64)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W, C = theta[: d * K].reshape(d, K), theta[d * K:].reshape(S, K)
        s = W.T @ Zt
        s += C.T[:, site]
        picked = s[y, rows]
        top = s.max(axis=0)
        s -= top
        np.exp(s, out=s)
        total = s.sum(axis=0)
        f = float(np.log(total).sum() + top.sum() - picked.sum()
                  + 0.5 * lam * (W * W).sum() + 0.5 * LAMBDA_INTERCEPTS * (C * C).sum())
        s /= total                       # p(k | z, s), then the gradient of the loss w.r.t. the logits: p − onehot
        s[y, rows] -= 1.0
        gC = np.stack([np.bincount(site, weights=s[k], minlength=S) for k in range(K)], axis=1)
        return f, np.concatenate([(Zt @ s.T + lam * W).ravel(), (gC + LAMBDA_INTERCEPTS * C).ravel()])

    # start each site's intercepts at its log class frequencies (smoothed): the fit then only corrects them
    start = np.stack([np.bincount(site[y == k], minlength=S) for k in range(K)], axis=1).astype(np.float64)
    start = np.log((start + 0.5) / (counts[:, None] + 0.5 * K))
    start -= start.mean(axis=1, keepdims=True)
    with one_blas_thread():
        x = lbfgs(loss, np.concatenate([np.zeros(d * K), start.ravel()]), max_iter)
    return x[: d * K].reshape(d, K), x[d * K:].reshape(S, K)
