"""The site's own model, cross-validated at the site: the honest "alone" number (issue #22).

At export a site fits its own-rows model (:mod:`core.learn.local_model`) and keeps it. Here the same learner
is cross-validated on the same rows, and only the scores leave, in the bundle manifest under ``own_cv``:

* folds: stratified k-fold with k = min(5, rows of the rarest class present), at least 2 (scikit-learn's folds and
  scores, written out in numpy: :mod:`core.learn.fold_scores`);
* repeats: r = min(10, ⌈200 / n⌉), so a small site's estimate rests on about 200 out-of-fold predictions;
* the splits are seeded from SHA-256 of the rows and labels, so the same CSV gives the same numbers;
* at most ``MAX_ROWS`` rows (the seeded subsample :func:`~core.learn.local_model.fit_local_model` takes).

Per repeat every row gets one out-of-fold probability vector p̂; the metrics are computed on those n vectors
and averaged over the repeats: accuracy, balanced accuracy (mean per-class recall), ROC AUC (binary: of
p̂(class 1) among the classes present; more classes: macro one-vs-rest over the classes present) and the
log-loss −(1/n) Σ log p̂(yₛ). The standard error of the accuracy, √(p(1−p)/n), is what the analyst's choice
rule uses (:func:`core.learn.cluster_models.Selection.keeps_own`).

:func:`read_own_cv` is the analyst's strict reading of a (possibly forged) manifest entry.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError
from ..formats.fields import check_fields, write_fields
from .fold_scores import balanced_accuracy, log_loss, roc_auc, roc_auc_ovr, stratified_folds
from .local_model import fit_local_model, local_predict_proba

MAX_ROWS = 20000  # as fit_local_model's default cap
MAX_FOLDS = 5
MAX_REPEATS = 10
TARGET_PREDICTIONS = 200  # repeats = ⌈TARGET_PREDICTIONS / n⌉, capped at MAX_REPEATS
MODEL_NAME = "multinomial logistic regression (L2, λ = 1) on standardised raw columns"
SCORES = ("accuracy", "balanced_accuracy", "auc", "log_loss")


def cv_plan(y: np.ndarray) -> tuple[int, int]:
    """(folds, repeats) for labels y: k = min(5, rarest present class), ≥ 2; r = min(10, ⌈200/n⌉)."""
    counts = np.bincount(np.asarray(y, np.int64))
    rarest = int(counts[counts > 0].min())
    folds = max(2, min(MAX_FOLDS, rarest))
    repeats = max(1, min(MAX_REPEATS, math.ceil(TARGET_PREDICTIONS / max(len(y), 1))))
    return folds, repeats


def rows_seed(X: np.ndarray, y: np.ndarray) -> int:
    """A 32-bit seed from SHA-256 of the rows (float64) and labels: the same CSV, the same splits."""
    h = hashlib.sha256(np.ascontiguousarray(X, np.float64).tobytes())
    h.update(np.ascontiguousarray(y, np.int64).tobytes())
    return int.from_bytes(h.digest()[:4], "big")


def cross_validate_own(X: np.ndarray, y: np.ndarray, n_classes: int, *, max_rows: int = MAX_ROWS) -> dict | None:
    """The ``own_cv`` manifest entry of a site's rows (module docstring), or None with fewer than two classes
    or fewer than two rows in some fold's training part."""
    got = own_out_of_fold(X, y, n_classes, max_rows=max_rows)
    return None if got is None else got.scores


@dataclass
class OwnOutOfFold:
    """The own model cross-validated at the site: ``scores`` (the ``own_cv`` entry), and per row it rests on
    (``rows``, indices into the site's table, sorted) the out-of-fold probabilities averaged over the repeats
    (``proba``, n × K) and the labels (``y``) — the site's half of the paired comparison of issue #37
    (:mod:`core.learn.site_update`), kept in its workspace, never shipped."""

    scores: dict
    rows: np.ndarray
    proba: np.ndarray
    y: np.ndarray


def own_out_of_fold(X: np.ndarray, y: np.ndarray, n_classes: int, *, max_rows: int = MAX_ROWS
                    ) -> OwnOutOfFold | None:
    """:func:`cross_validate_own` with the out-of-fold probabilities it scores (:class:`OwnOutOfFold`)."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    rows = np.arange(len(y))
    if len(y) > max_rows:  # the rows the kept model is fitted on (fit_local_model's seeded subsample)
        rows = np.sort(np.random.default_rng([0, 11]).choice(len(y), max_rows, replace=False))
        X, y = X[rows], y[rows]
    present = np.unique(y)
    if len(present) < 2 or len(y) < 4:
        return None
    folds, repeats = cv_plan(y)
    K = int(n_classes)
    proba = np.zeros((repeats, len(y), K))
    for s, (tr, te) in enumerate(stratified_folds(y, folds, repeats, rows_seed(X, y))):
        model = fit_local_model(X[tr], y[tr], K)
        proba[s // folds, te] = local_predict_proba(model, X[te])
    per_repeat = {k: [] for k in SCORES}
    for P in proba:
        pred = P.argmax(axis=1)
        per_repeat["accuracy"].append(float(np.mean(pred == y)))
        per_repeat["balanced_accuracy"].append(balanced_accuracy(y, pred))
        Pp = P[:, present] / np.maximum(P[:, present].sum(axis=1, keepdims=True), 1e-300)
        if len(present) == 2:
            auc = roc_auc(y == present[1], Pp[:, 1])
        else:
            auc = roc_auc_ovr(y, Pp, present)
        per_repeat["auc"].append(auc)
        per_repeat["log_loss"].append(log_loss(y, np.clip(P, 1e-15, 1.0)))
    out: dict = {k: round(float(np.mean(v)), 6) for k, v in per_repeat.items()}
    out.update({"rows": int(len(y)), "folds": int(folds), "repeats": int(repeats), "model": MODEL_NAME})
    if K == 2:
        out["events"] = int(np.sum(y == 1))
    # as its declaration allows (core/formats/fields.py)
    return OwnOutOfFold(write_fields("own_cv", out), rows, proba.mean(axis=0), y)


OOF_ARRAYS = ("own_oof", "own_oof_rows", "own_oof_y")  # the workspace's private arrays of :class:`OwnOutOfFold`


def own_oof_arrays(own: OwnOutOfFold) -> dict[str, np.ndarray]:
    """The private arrays an export keeps of :class:`OwnOutOfFold` (probabilities float32, rows int64, labels
    int32)."""
    return {"own_oof": own.proba.astype(np.float32), "own_oof_rows": own.rows.astype(np.int64),
            "own_oof_y": own.y.astype(np.int32)}


def read_own_oof(private: dict[str, np.ndarray], n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(rows, probabilities, labels) of an export's kept :func:`own_oof_arrays`, or None when it keeps none (an
    export made before issue #37) or they do not fit together (a damaged workspace: the site then falls back)."""
    if not all(k in private for k in OOF_ARRAYS):
        return None
    P, rows, y = (np.asarray(private[k]) for k in OOF_ARRAYS)
    n = len(rows)
    if P.shape != (n, int(n_classes)) or y.shape != (n,) or n == 0 or not np.all(np.isfinite(P)) \
            or (n > 1 and not np.all(np.diff(rows) > 0)) or rows.min() < 0 or y.min() < 0 or y.max() >= n_classes:
        return None
    return rows.astype(np.int64), P.astype(np.float64), y.astype(np.int64)


MARGIN_SE = 1.645  # a shared model must beat the site's own model by this many standard errors: one-sided 5 %


def beats_own(p_shared: float, p_own: float, se: float) -> bool:
    """The promise's one rule: a shared model of score p_shared replaces the site's own model of score p_own only
    when p_shared − p_own > MARGIN_SE · se, se being the standard error of the difference (the analyst's choice,
    :meth:`core.learn.cluster_models.Selection.clears_margin`, and the site's, :mod:`core.methods.promise`)."""
    return p_shared - p_own > MARGIN_SE * se + 1e-12


def alone_estimate(cv: dict | None) -> dict | None:
    """A site's "alone" number for the summary, the report and ``analyst estimate``, one code path for every
    method: its own raw-row model cross-validated at the site (a checked ``own_cv``, :func:`read_own_cv`) as an
    :func:`~core.learn.intervals.estimate`, saying where it comes from; None without one."""
    from .intervals import estimate

    if not cv:
        return None
    return {**estimate(float(cv["accuracy"]), int(cv["rows"])), "source": "site",
            "what": f"your own model, cross-validated at your site on {cv['rows']} rows",
            "auc": float(cv["auc"]), "balanced_accuracy": float(cv["balanced_accuracy"])}


def accuracy_se(p: float, n: int) -> float:
    """√(p(1 − p)/n): the standard error of an accuracy p measured on n rows."""
    return math.sqrt(max(p * (1.0 - p), 0.0) / max(int(n), 1))


def read_own_cv(manifest: dict, n_rows: int | None, n_classes: int | None = None) -> dict | None:
    """A bundle's ``own_cv`` entry checked strictly (it may be forged), or None when absent.

    Accepted only as a mapping whose accuracy, balanced accuracy and AUC are numbers in [0, 1], log-loss a
    finite number ≥ 0, ``rows`` a whole number in [2, n_rows], ``events`` (binary kits) a whole number ≤ rows,
    folds in [2, 50] and repeats in [1, 50]; anything else is a FormatError naming the field (the bundle is
    refused, as for any malformed manifest field)."""
    cv = manifest.get("own_cv")
    if cv is None:
        return None
    where = "the bundle's own-model scores (own_cv)"
    check_fields("own_cv", cv, where)  # types and ranges: core/formats/fields.py
    rows, events = cv["rows"], cv.get("events")
    if n_rows is not None and rows > int(n_rows):
        raise FormatError(f"{where} give 'rows' as {rows}, more than the bundle's {n_rows} rows")
    if events is not None and events > rows:
        raise FormatError(f"{where} give 'events' as {events}, more than their {rows} rows")
    if n_classes == 2 and events is None:
        raise FormatError(f"{where} lack the event count of a two-class kit")
    out = {k: cv[k] for k in ("rows", "folds", "repeats")}
    out.update({k: float(cv[k]) for k in ("accuracy", "balanced_accuracy", "auc", "log_loss")})
    if events is not None:
        out["events"] = events
    out["model"] = cv.get("model", "")[:200]
    return out
