"""FastICA's unmixing of whitened rows, in numpy (the ICA attack's; an export need not import scikit-learn).

The parallel ("symmetric") FastICA of Hyvärinen & Oja (2000), "Independent component analysis: algorithms and
applications", Neural Networks 13, eq. 20 with the log cosh contrast G(u) = log cosh u, g = tanh: for whitened
rows x (k columns, n rows) and the unmixing W (k × k, orthonormal rows), each step is

    W⁺ = E[g(W x) xᵀ] − diag(E[g′(W x)]) W,      W ← (W⁺ W⁺ᵀ)^{-1/2} W⁺       (symmetric decorrelation),

started from the symmetric decorrelation of a standard normal k × k matrix, until every row of W turns by less
than ``tol`` (max_i | |w_i⁺ · w_i| − 1 | < tol) or ``max_iter`` steps. It is scikit-learn's
``FastICA(whiten=False, algorithm="parallel", fun="logcosh")`` step for step, its starting matrix drawn the same
way (``np.random.RandomState(seed).normal(size=(k, k))``), so the two give the same unmixing up to rounding
(``tests/privacy/test_fastica.py``).
"""

from __future__ import annotations

import numpy as np


def symmetric_decorrelation(W: np.ndarray) -> np.ndarray:
    """(W Wᵀ)^{-1/2} W: the orthonormal matrix nearest W (eigenvalues floored at the smallest positive float)."""
    s, u = np.linalg.eigh(W @ W.T)
    s = np.clip(s, np.finfo(W.dtype).tiny, None)
    return (u * (1.0 / np.sqrt(s))) @ u.T @ W


def fastica_unmixing(X: np.ndarray, *, seed: int, max_iter: int = 200, tol: float = 1e-4) -> tuple[np.ndarray, int]:
    """(W, steps taken): the unmixing of the whitened rows ``X`` (n × k), sources S = X Wᵀ (module doc)."""
    Xt = np.asarray(X, np.float64).T  # k × n
    k, n = Xt.shape
    W = symmetric_decorrelation(np.random.RandomState(seed).normal(size=(k, k)))
    steps = 0
    while steps < max_iter:
        steps += 1
        gwx = np.tanh(W @ Xt)
        slope = np.mean(1.0 - gwx ** 2, axis=1)  # E[g′(W x)], g′ = 1 − tanh²
        W1 = symmetric_decorrelation(gwx @ Xt.T / n - slope[:, None] * W)
        turned = float(np.max(np.abs(np.abs(np.einsum("ij,ij->i", W1, W)) - 1.0)))
        W = W1
        if turned < tol:
            break
    return W, steps
