"""Stratified folds and the scores ``own_cv`` reports, in numpy (issue #36).

They are scikit-learn's — ``RepeatedStratifiedKFold`` with a seed, ``balanced_accuracy_score``, ``roc_auc_score``
(binary, and macro one-vs-rest) and ``log_loss`` — written out so that a site's export does not import
``sklearn.metrics`` and ``sklearn.model_selection`` (with scipy.stats behind them: ~2.5 s of CPU) for a few lines.
The folds are the same row for row (the same legacy Mersenne-Twister draws, in the same order); the scores agree to
rounding (tests/learn/test_fold_scores.py compares both).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def stratified_folds(y: np.ndarray, folds: int, repeats: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(train rows, test rows) of ``repeats`` shuffled stratified ``folds``-fold splits: scikit-learn's
    ``RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed).split(X, y)``.

    Per repeat, the classes in order of first appearance; the i-th fold takes every ``folds``-th row of the labels
    sorted by that order (round robin), so each class is spread over the folds as evenly as it can be; each class's
    fold numbers are shuffled by one ``RandomState(seed)`` drawn on across classes and repeats. ValueError when
    every class has fewer rows than folds (as scikit-learn)."""
    y = np.asarray(y)
    rng = np.random.RandomState(seed)
    _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
    _, by_appearance = np.unique(first, return_inverse=True)
    coded = by_appearance[inverse.ravel()]
    n_classes = len(first)
    if np.all(folds > np.bincount(coded)):
        raise ValueError(f"{folds} folds cannot be more than the rows of every class")
    ordered = np.sort(coded)
    allocation = np.asarray([np.bincount(ordered[i::folds], minlength=n_classes) for i in range(folds)])
    rows = np.arange(len(y))
    for _ in range(repeats):
        test_folds = np.empty(len(y), dtype="i")
        for k in range(n_classes):
            of_class = np.arange(folds).repeat(allocation[:, k])
            rng.shuffle(of_class)
            test_folds[coded == k] = of_class
        for i in range(folds):
            test = test_folds == i
            yield rows[~test], rows[test]


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """The mean over the classes present in ``y`` of their recall, #(y = k, pred = k) / #(y = k)."""
    y, pred = np.asarray(y), np.asarray(pred)
    classes = np.unique(y)
    hits = np.array([np.sum((y == k) & (pred == k)) for k in classes])
    counts = np.array([np.sum(y == k) for k in classes])
    return float(np.mean(hits / counts))


def roc_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for the boolean ``positive``: the Mann–Whitney probability that a
    positive row scores above a negative one, ties counting one half (the trapezoidal area of the ROC curve).
    ValueError unless both kinds of rows are present."""
    positive = np.asarray(positive, bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the area under the ROC curve needs rows of both kinds")
    score = np.asarray(score, np.float64)
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])  # ties share the mean of their ranks
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def roc_auc_ovr(y: np.ndarray, P: np.ndarray, labels: np.ndarray) -> float:
    """Macro one-vs-rest AUC: the mean over ``labels`` of :func:`roc_auc` of (y = label) against ``P``'s column
    of that label (``P``'s columns are ``labels`` in order)."""
    y = np.asarray(y)
    return float(np.mean([roc_auc(y == c, P[:, j]) for j, c in enumerate(labels)]))


def log_loss(y: np.ndarray, P: np.ndarray) -> float:
    """−(1/n) Σ log p̂(yₛ), the probabilities clipped to [ε, 1 − ε] (ε the float64 machine epsilon); ``P``'s
    columns are the classes 0 … K − 1."""
    eps = np.finfo(np.float64).eps
    picked = np.clip(np.asarray(P, np.float64), eps, 1 - eps)[np.arange(len(y)), np.asarray(y, np.int64)]
    return float(np.mean(-np.log(picked)))
