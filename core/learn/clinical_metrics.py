"""What a clinician reads about a model's predictions: discrimination, calibration and the counts behind them.

Everything is computed with scikit-learn and scipy except DeLong's variance of the ROC AUC, which neither has.

Binary (y ∈ {0, 1}, p = predicted risk of class 1, a row is called positive when p ≥ threshold):

* sensitivity = TP/(TP+FN), specificity = TN/(TN+FP), PPV = TP/(TP+FP), NPV = TN/(TN+FN); NaN when the
  denominator is 0;
* Brier score = (1/n) Σ (pᵢ − yᵢ)²;
* calibration slope β: the coefficient of logit(p) in the unpenalised logistic regression
  logit P(y = 1) = α' + β·logit(p) (1 = ideal, < 1 = risks too extreme, > 1 = too timid);
* calibration intercept α (calibration-in-the-large): the α of logit P(y = 1) = α + logit(p), logit(p) taken as
  an offset, i.e. the root of Σ (yᵢ − expit(α + logit pᵢ)) = 0 (0 = ideal, > 0 = risks too low on average);
* AUC's 95 % interval: AUC ± 1.96·√V with DeLong's variance V = S₁₀/m + S₀₁/n (DeLong, DeLong & Clarke-Pearson
  1988), computed from mid-ranks as in Sun & Xu (2014), clipped to [0, 1]. m = events, n = non-events.

Every result is plain floats / ints / lists, so it goes into JSON as it is. NaN marks a figure that is undefined
on these rows (e.g. the AUC when one class is absent).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

Z95 = 1.959963984540054
LOGIT_EPS = 1e-12  # risks are clipped to [ε, 1 − ε] before taking logit(p)
HISTOGRAM_BINS = 10

NAN = float("nan")


def _ratio(num: int, den: int) -> float:
    return float(num) / float(den) if den > 0 else NAN


def _logit(p: np.ndarray) -> np.ndarray:
    from scipy.special import logit

    return logit(np.clip(np.asarray(p, np.float64), LOGIT_EPS, 1.0 - LOGIT_EPS))


# ---------------------------------------------------------------------------------------------------- DeLong
def _delong_components(y: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(AUCs, covariance) of k score vectors (k × n array) on binary labels y, by DeLong's structural
    components from mid-ranks (Sun & Xu 2014): for each model, V₁₀ over events and V₀₁ over non-events,
    AUC = mean V₁₀, Cov = S₁₀/m + S₀₁/n. None when either class has fewer than two rows."""
    from scipy.stats import rankdata

    y = np.asarray(y).astype(bool)
    scores = np.atleast_2d(np.asarray(scores, np.float64))
    pos, neg = scores[:, y], scores[:, ~y]
    m, n = pos.shape[1], neg.shape[1]
    if m < 2 or n < 2:
        return None
    tx = rankdata(pos, axis=1)
    ty = rankdata(neg, axis=1)
    tz = rankdata(np.concatenate([pos, neg], axis=1), axis=1)
    v10 = (tz[:, :m] - tx) / n
    v01 = 1.0 - (tz[:, m:] - ty) / m
    aucs = v10.mean(axis=1)
    cov = np.atleast_2d(np.cov(v10, ddof=1)) / m + np.atleast_2d(np.cov(v01, ddof=1)) / n
    return aucs, cov


def auc_interval(y: np.ndarray, p: np.ndarray) -> tuple[float, float, float]:
    """(AUC, low, high): the ROC AUC with its 95 % DeLong interval; NaNs when one class has < 2 rows."""
    parts = _delong_components(y, p)
    if parts is None:
        y = np.asarray(y)
        if 0 < int(np.sum(y == 1)) < len(y):
            from sklearn.metrics import roc_auc_score

            return float(roc_auc_score(y, p)), NAN, NAN
        return NAN, NAN, NAN
    aucs, cov = parts
    auc, se = float(aucs[0]), math.sqrt(max(float(cov[0, 0]), 0.0))
    return auc, max(0.0, auc - Z95 * se), min(1.0, auc + Z95 * se)


def delong(y: np.ndarray, p_a: np.ndarray, p_b: np.ndarray) -> dict:
    """Paired DeLong test of two correlated AUCs on the same rows: difference d = AUC_a − AUC_b,
    Var d = V_aa + V_bb − 2·V_ab, z = d/√Var d, two-sided p = 2·(1 − Φ(|z|)); 95 % interval d ± 1.96·√Var d.
    Identical scores give p = 1. All NaN when either class has fewer than two rows."""
    from scipy.stats import norm

    parts = _delong_components(y, np.vstack([np.asarray(p_a, np.float64), np.asarray(p_b, np.float64)]))
    if parts is None:
        return {"auc_a": NAN, "auc_b": NAN, "difference": NAN, "low": NAN, "high": NAN, "p_value": NAN}
    aucs, cov = parts
    d = float(aucs[0] - aucs[1])
    var = float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    if var <= 1e-18:
        se, p_value = 0.0, 1.0 if abs(d) < 1e-12 else 0.0
    else:
        se = math.sqrt(var)
        p_value = float(2.0 * norm.sf(abs(d) / se))
    return {"auc_a": float(aucs[0]), "auc_b": float(aucs[1]), "difference": d,
            "low": d - Z95 * se, "high": d + Z95 * se, "p_value": p_value}


# ----------------------------------------------------------------------------------------------- calibration
def calibration_fit(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """(intercept α, slope β) of the logistic recalibration of logit(p) (module docstring); NaNs when one class
    is absent (both are then unbounded)."""
    from scipy.optimize import brentq
    from scipy.special import expit
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(y, np.int64)
    if len(np.unique(y)) < 2:
        return NAN, NAN
    lp = _logit(p)
    alpha = float(brentq(lambda a: float(np.sum(y - expit(a + lp))), -60.0, 60.0, xtol=1e-10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a perfectly separating logit(p) has no finite slope; the solver stops
        # Newton's method to a tight tolerance: lbfgs's default stopping rule left the slope off by up to 2e-3.
        fit = LogisticRegression(penalty=None, solver="newton-cg", tol=1e-10, max_iter=1000).fit(lp[:, None], y)
    return alpha, float(fit.coef_[0, 0])


def calibration_points(y: np.ndarray, p: np.ndarray, bins: int = 10) -> dict:
    """Reliability curve: mean predicted risk (``predicted``) and observed event rate (``observed``) per
    non-empty quantile bin of p (sklearn's calibration_curve), and ``histogram``: counts of p in 10 equal bins
    over [0, 1]."""
    from sklearn.calibration import calibration_curve

    y = np.asarray(y, np.int64)
    p = np.clip(np.asarray(p, np.float64), 0.0, 1.0)
    histogram = np.histogram(p, bins=HISTOGRAM_BINS, range=(0.0, 1.0))[0]
    if len(y) == 0:
        return {"predicted": [], "observed": [], "histogram": histogram.tolist()}
    if len(np.unique(y)) < 2:  # sklearn refuses a single label; the observed rate is that label's
        return {"predicted": [float(p.mean())], "observed": [float(y[0])], "histogram": histogram.tolist()}
    observed, predicted = calibration_curve(y, p, n_bins=bins, strategy="quantile")
    return {"predicted": [float(v) for v in predicted], "observed": [float(v) for v in observed],
            "histogram": [int(v) for v in histogram]}


def roc_points(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive rates, true-positive rates) of the ROC curve (sklearn's roc_curve)."""
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(np.asarray(y, np.int64), np.asarray(p, np.float64), pos_label=1)
    return fpr, tpr


# ---------------------------------------------------------------------------------------------------- figures
def binary_metrics(y: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> dict:
    """The binary figures of the module docstring at ``threshold``. ``never_predicts_minority`` is True when the
    less frequent class (class 1 on a tie) is present but no row is called that class."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, brier_score_loss, confusion_matrix

    y = np.asarray(y, np.int64).ravel()
    p = np.asarray(p, np.float64).ravel()
    pred = (p >= threshold).astype(np.int64)
    (tn, fp), (fn, tp) = confusion_matrix(y, pred, labels=[0, 1]).tolist()
    events = int(np.sum(y == 1))
    auc, low, high = auc_interval(y, p)
    intercept, slope = calibration_fit(y, p)
    minority = 1 if events <= len(y) - events else 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one class only: sklearn warns, the figure is still defined
        balanced = float(balanced_accuracy_score(y, pred)) if len(y) else NAN
    return {
        "rows": int(len(y)), "events": events, "auc": auc, "auc_low": low, "auc_high": high,
        "threshold": float(threshold),
        "sensitivity": _ratio(tp, tp + fn), "specificity": _ratio(tn, tn + fp),
        "ppv": _ratio(tp, tp + fp), "npv": _ratio(tn, tn + fn),
        "accuracy": float(accuracy_score(y, pred)) if len(y) else NAN, "balanced_accuracy": balanced,
        "brier": float(brier_score_loss(y, p, pos_label=1)) if len(y) else NAN,
        "calibration_intercept": intercept, "calibration_slope": slope,
        "confusion": [[int(tn), int(fp)], [int(fn), int(tp)]],
        "never_predicts_minority": bool(np.any(y == minority) and not np.any(pred == minority)),
    }


def multiclass_metrics(y: np.ndarray, P: np.ndarray, classes: list[str]) -> dict:
    """Multi-class figures of the predicted class argmax P: accuracy, balanced accuracy (mean recall over the
    classes present), macro one-vs-rest AUC (NaN if a class is absent), per-class support / recall / precision
    (NaN when undefined), the K × K confusion matrix (rows = true class) and the classes with support that are
    never predicted."""
    y = np.asarray(y, np.int64).ravel()
    P = np.asarray(P, np.float64)
    K = len(classes)
    pred = P.argmax(axis=1)
    confusion = np.bincount(y * K + pred, minlength=K * K)[: K * K].reshape(K, K)  # the analyst asks it per site:
    support, predicted, right = confusion.sum(axis=1), confusion.sum(axis=0), np.diag(confusion)  # numpy, not sklearn
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(support > 0, right / support, NAN)
        precision = np.where(predicted > 0, right / predicted, NAN)
    balanced = float(recall[support > 0].mean()) if len(y) else NAN
    if len(y) and np.all(support > 0):
        from sklearn.metrics import roc_auc_score

        Pn = P / np.maximum(P.sum(axis=1, keepdims=True), 1e-300)
        macro_auc = float(roc_auc_score(y, Pn, multi_class="ovr", average="macro", labels=list(range(K))))
    else:
        macro_auc = NAN
    return {
        "rows": int(len(y)), "accuracy": float(right.sum() / len(y)) if len(y) else NAN,
        "balanced_accuracy": balanced, "macro_auc": macro_auc,
        "per_class": [{"class": str(classes[k]), "support": int(support[k]), "recall": float(recall[k]),
                       "precision": float(precision[k])} for k in range(K)],
        "confusion": confusion.tolist(),
        "never_predicted": [str(classes[k]) for k in range(K) if support[k] > 0 and predicted[k] == 0],
    }


def metrics_for(y: np.ndarray, P: np.ndarray, classes: list[str], threshold: float = 0.5) -> dict:
    """:func:`binary_metrics` of P[:, 1] for two classes, else :func:`multiclass_metrics`; with ``task``."""
    P = np.asarray(P, np.float64)
    if len(classes) == 2:
        out = binary_metrics(y, P[:, 1], threshold)
        out["task"] = "binary"
    else:
        out = multiclass_metrics(y, P, classes)
        out["task"] = "multiclass"
    return out


SELECTION_METRICS = ("accuracy", "balanced_accuracy", "auc")


def selection_score(metric: str, y: np.ndarray, P: np.ndarray) -> float:
    """One number a model selection maximises, of predicted probabilities P (n × K) on labels y: ``accuracy``
    (of argmax P), ``balanced_accuracy`` (mean recall over the classes present) or ``auc`` (binary: of P[:, 1];
    more classes: macro one-vs-rest over the classes present, P renormalised to them). 0.5 for an AUC on rows of
    one class (no better than chance), NaN-free. scikit-learn's scores, written out in numpy
    (:mod:`core.learn.fold_scores`): a selection scores every candidate at every site, and scikit-learn's checks
    cost more than the scores (issue #36)."""
    from .fold_scores import balanced_accuracy, roc_auc, roc_auc_ovr

    y = np.asarray(y, np.int64)
    P = np.asarray(P, np.float64)
    if len(y) == 0:
        return 0.0
    if metric == "accuracy":
        return float(np.mean(P.argmax(axis=1) == y))
    if metric == "balanced_accuracy":
        return balanced_accuracy(y, P.argmax(axis=1))
    present = np.unique(y)
    if len(present) < 2:
        return 0.5
    if P.shape[1] == 2:
        return roc_auc(y == 1, P[:, 1])
    Pp = P[:, present] / np.maximum(P[:, present].sum(axis=1, keepdims=True), 1e-300)
    if len(present) == 2:
        return roc_auc(y == present[1], Pp[:, 1])
    return roc_auc_ovr(y, Pp, present)


def hanley_mcneil_se(auc: float, events: int, non_events: int) -> float:
    """Standard error of an AUC from its value and the two class sizes (Hanley & McNeil 1982):
    Q₁ = A/(2 − A), Q₂ = 2A²/(1 + A), SE² = (A(1 − A) + (n₁ − 1)(Q₁ − A²) + (n₀ − 1)(Q₂ − A²)) / (n₁ n₀)."""
    a, n1, n0 = float(auc), max(int(events), 1), max(int(non_events), 1)
    q1, q2 = a / (2.0 - a), 2.0 * a * a / (1.0 + a)
    return math.sqrt(max(a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a), 0.0) / (n1 * n0))


def json_safe(obj):
    """The same structure with every NaN / ±inf float replaced by None (JSON null), for strict JSON writers."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
