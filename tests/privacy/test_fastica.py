"""The ICA attack's FastICA in numpy (core/privacy/fastica.py) is scikit-learn's parallel FastICA step for step, and
an export's privacy check imports neither scikit-learn nor scipy."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.decomposition import FastICA

from core.privacy.fastica import fastica_unmixing, symmetric_decorrelation


def whitened(rows: int = 800, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    S = np.c_[rng.laplace(size=(rows, 3)), rng.uniform(-1, 1, (rows, 3)), rng.exponential(size=(rows, 2))]
    X = S @ rng.normal(size=(8, 8))
    X -= X.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    return X @ vecs / np.sqrt(vals)


@pytest.mark.parametrize("seed, max_iter", [(0, 3), (0, 60), (1, 60), (2, 200)])
def test_the_unmixing_is_scikit_learns(seed, max_iter):
    X = whitened()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a capped run does not converge: both stop at max_iter
        ica = FastICA(whiten=False, random_state=seed, max_iter=max_iter, tol=1e-4).fit(X)
    W, steps = fastica_unmixing(X, seed=seed, max_iter=max_iter, tol=1e-4)
    assert steps == ica.n_iter_
    np.testing.assert_allclose(W, ica.components_, atol=1e-9)


def test_symmetric_decorrelation_gives_orthonormal_rows():
    W = symmetric_decorrelation(np.random.default_rng(0).normal(size=(5, 5)))
    np.testing.assert_allclose(W @ W.T, np.eye(5), atol=1e-12)


def test_the_privacy_check_imports_no_scikit_learn_or_scipy():
    """The ICA attack (issue #35) had brought scikit-learn's FastICA and scipy's assignment into every export:
    ~1.5 s of CPU for imports alone."""
    code = ("import sys, numpy as np\n"
            "from core.privacy.attacks import eigen_attack, ica_rebuilds\n"
            "rng = np.random.default_rng(0)\n"
            "X = rng.exponential(size=(600, 5)) @ rng.normal(size=(5, 5))\n"
            "assert len(ica_rebuilds(X[:400], X[400:])) == 3 and eigen_attack(X[:400], X[400:]).shape == (400, 5)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'scipy')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
