"""The folds and scores own_cv computes in numpy (core/learn/fold_scores.py) are scikit-learn's: the same folds row
for row, the same scores to rounding; and the export no longer imports sklearn.metrics or sklearn.model_selection."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, log_loss, roc_auc_score
from sklearn.model_selection import RepeatedStratifiedKFold

from core.learn import fold_scores as F
from core.learn.own_cv import cross_validate_own


@pytest.mark.parametrize("counts", [[30, 10], [7, 3, 12], [1, 9, 4], [5, 5, 5, 5], [2, 40]])
@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 7])
def test_the_folds_are_scikit_learns_row_for_row(counts, seed):
    rng = np.random.default_rng(len(counts) + seed % 97)
    y = rng.permutation(np.repeat(np.arange(len(counts)) * 3 + 1, counts))  # labels need not be 0 … K − 1
    folds, repeats = max(2, min(5, min(counts))), 3
    ours = list(F.stratified_folds(y, folds, repeats, seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        theirs = list(RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
                      .split(np.zeros((len(y), 1)), y))
    assert len(ours) == len(theirs) == folds * repeats
    for (a_tr, a_te), (b_tr, b_te) in zip(ours, theirs, strict=True):
        assert np.array_equal(a_tr, b_tr) and np.array_equal(a_te, b_te)
    with pytest.raises(ValueError):
        list(F.stratified_folds(np.array([0, 1, 2]), 2, 1, 0))


def test_the_scores_are_scikit_learns():
    rng = np.random.default_rng(7)
    for trial in range(40):
        n, K = int(rng.integers(8, 300)), int(rng.integers(2, 5))
        y = rng.integers(0, K, n)
        P = rng.dirichlet(np.ones(K), n)
        if trial % 3 == 0:
            P = np.round(P, 1)  # ties
            P[:, -1] = 1 - P[:, :-1].sum(axis=1)
            P = np.clip(P, 0, 1)
        pred = P.argmax(axis=1)
        assert F.balanced_accuracy(y, pred) == pytest.approx(balanced_accuracy_score(y, pred), abs=1e-15)
        present = np.unique(y)
        if len(present) < 2:
            continue
        Pp = P[:, present] / np.maximum(P[:, present].sum(axis=1, keepdims=True), 1e-300)
        if len(present) == 2:
            ours, theirs = F.roc_auc(y == present[1], Pp[:, 1]), roc_auc_score(y == present[1], Pp[:, 1])
        else:
            ours = F.roc_auc_ovr(y, Pp, present)
            theirs = roc_auc_score(y, Pp, multi_class="ovr", average="macro", labels=present)
        assert ours == pytest.approx(theirs, abs=1e-12)
        clipped = np.clip(P, 1e-15, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert F.log_loss(y, clipped) == pytest.approx(log_loss(y, clipped, labels=np.arange(K)), rel=1e-12)


def test_own_cv_gives_the_numbers_it_gave_with_scikit_learn():
    """The own_cv entry of a fixed table, as recorded when it was computed with scikit-learn's folds and scores."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=150) > 0).astype(int) + (X[:, 2] > 1.2)
    cv = cross_validate_own(X, y, 3)
    assert cv == RECORDED


RECORDED = {"accuracy": 0.696667, "balanced_accuracy": 0.57814, "auc": 0.839724, "log_loss": 0.634887,
            "rows": 150, "folds": 5, "repeats": 2,
            "model": "multinomial logistic regression (L2, λ = 1) on standardised raw columns"}


def test_an_export_imports_no_scikit_learn_metrics_or_model_selection(tmp_path):
    code = ("import sys, numpy as np\n"
            "from core.learn.own_cv import cross_validate_own\n"
            "X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)\n"
            "assert cross_validate_own(X, y, 2) is not None\n"
            "print(sorted(m for m in sys.modules if m.startswith(('sklearn', 'scipy.stats'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
