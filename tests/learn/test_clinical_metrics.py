"""Issue #23: the clinician's figures agree with scikit-learn, DeLong's interval and paired test behave, and a
model that never predicts the minority class is flagged."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import (
    balanced_accuracy_score,
    brier_score_loss,
    confusion_matrix,
    precision_score,
    recall_score,
    roc_auc_score,
)

from core.learn.clinical_metrics import (
    binary_metrics,
    calibration_points,
    delong,
    metrics_for,
    multiclass_metrics,
    roc_points,
)


def _binary(n: int, seed: int, signal: float = 1.0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    score = signal * y + rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-(score - 0.5)))
    return y, p


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_figures_agree_with_sklearn(seed):
    y, p = _binary(300, seed)
    m = binary_metrics(y, p, threshold=0.4)
    pred = (p >= 0.4).astype(int)
    assert m["rows"] == 300 and m["events"] == int(y.sum())
    assert m["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert m["auc_low"] < m["auc"] < m["auc_high"]
    assert m["confusion"] == confusion_matrix(y, pred).tolist()
    assert m["sensitivity"] == pytest.approx(recall_score(y, pred))
    assert m["specificity"] == pytest.approx(recall_score(y, pred, pos_label=0))
    assert m["ppv"] == pytest.approx(precision_score(y, pred))
    assert m["npv"] == pytest.approx(precision_score(y, pred, pos_label=0))
    assert m["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred))
    assert m["accuracy"] == pytest.approx(np.mean(pred == y))
    assert m["brier"] == pytest.approx(brier_score_loss(y, p))
    assert m["threshold"] == 0.4 and m["never_predicts_minority"] is False
    json.dumps(m)  # plain JSON types only


def test_multiclass_figures_agree_with_sklearn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 240)
    logits = rng.normal(size=(240, 3)) + 1.5 * np.eye(3)[y]
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    m = metrics_for(y, P, ["a", "b", "c"])
    pred = P.argmax(axis=1)
    assert m["task"] == "multiclass" and m["rows"] == 240
    assert m["macro_auc"] == pytest.approx(roc_auc_score(y, P, multi_class="ovr", average="macro"))
    assert m["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred))
    assert m["confusion"] == confusion_matrix(y, pred).tolist()
    recalls = recall_score(y, pred, average=None)
    precisions = precision_score(y, pred, average=None)
    for k, row in enumerate(m["per_class"]):
        assert row["class"] == "abc"[k] and row["support"] == int(np.sum(y == k))
        assert row["recall"] == pytest.approx(recalls[k]) and row["precision"] == pytest.approx(precisions[k])
    assert m["never_predicted"] == []
    json.dumps(m)


def test_multiclass_absent_class_and_never_predicted():
    y = np.array([0, 0, 1, 1, 0, 1])
    P = np.tile([0.6, 0.3, 0.1], (6, 1))  # always class 0
    m = multiclass_metrics(y, P, ["x", "y", "z"])
    assert math.isnan(m["macro_auc"])  # class z absent
    assert m["never_predicted"] == ["y"]  # z has no support, so it is not listed
    assert math.isnan(m["per_class"][1]["precision"]) and m["per_class"][1]["recall"] == 0.0


def test_metrics_for_binary_uses_class_one_column():
    y, p = _binary(100, 4)
    P = np.column_stack([1 - p, p])
    m = metrics_for(y, P, ["alive", "dead"], threshold=0.3)
    assert m["task"] == "binary" and m == {**binary_metrics(y, p, 0.3), "task": "binary"}


def test_never_predicts_minority_is_flagged_despite_good_accuracy():
    y = np.array([0] * 70 + [1] * 30)
    p = np.linspace(0.05, 0.45, 100)  # ranks well (AUC high) but never reaches 0.5
    m = binary_metrics(y, p)
    assert m["accuracy"] == pytest.approx(0.7) and m["sensitivity"] == 0.0
    assert m["never_predicts_minority"] is True and math.isnan(m["ppv"])
    assert binary_metrics(y, p, threshold=0.3)["never_predicts_minority"] is False


def test_one_class_absent_gives_nan_auc_and_calibration():
    m = binary_metrics(np.zeros(20, int), np.linspace(0.1, 0.9, 20))
    assert math.isnan(m["auc"]) and math.isnan(m["auc_low"]) and math.isnan(m["calibration_slope"])
    assert math.isnan(m["sensitivity"]) and m["events"] == 0


def test_delong_variance_matches_bootstrap():
    y, p = _binary(400, 5)
    m = binary_metrics(y, p)
    se_delong = (m["auc_high"] - m["auc_low"]) / (2 * 1.959963984540054)
    rng = np.random.default_rng(0)
    boots = []
    for _ in range(400):
        i = rng.integers(0, len(y), len(y))
        boots.append(roc_auc_score(y[i], p[i]))
    assert se_delong == pytest.approx(np.std(boots), rel=0.25)


def test_paired_delong_identical_and_clearly_better():
    y, p = _binary(300, 6, signal=2.0)
    same = delong(y, p, p.copy())
    assert same["p_value"] == 1.0 and same["difference"] == 0.0
    assert same["auc_a"] == pytest.approx(roc_auc_score(y, p))
    rng = np.random.default_rng(7)
    weak = 0.3 * p + rng.random(len(y))  # mostly noise
    d = delong(y, p, weak)
    assert d["difference"] > 0.1 and d["p_value"] < 1e-3 and d["low"] > 0
    assert d["auc_b"] == pytest.approx(roc_auc_score(y, weak))


def test_calibrated_risks_give_slope_one_intercept_zero():
    rng = np.random.default_rng(8)
    p = 1.0 / (1.0 + np.exp(-rng.normal(-0.5, 1.5, 20000)))
    y = (rng.random(len(p)) < p).astype(int)
    m = binary_metrics(y, p)
    assert m["calibration_slope"] == pytest.approx(1.0, abs=0.05)
    assert m["calibration_intercept"] == pytest.approx(0.0, abs=0.05)
    extreme = 1.0 / (1.0 + np.exp(-2.0 * np.log(p / (1 - p))))  # overconfident: slope ≈ 1/2
    assert binary_metrics(y, extreme)["calibration_slope"] == pytest.approx(0.5, abs=0.05)
    too_low = 1.0 / (1.0 + np.exp(-(np.log(p / (1 - p)) - 1.0)))  # risks too low: intercept ≈ +1 in large
    assert binary_metrics(y, too_low)["calibration_intercept"] > 0.7


def test_roc_and_calibration_points():
    y, p = _binary(200, 9)
    fpr, tpr = roc_points(y, p)
    assert fpr[0] == 0 and tpr[-1] == 1 and np.all(np.diff(fpr) >= 0)
    c = calibration_points(y, p, bins=5)
    assert len(c["predicted"]) == len(c["observed"]) <= 5 and sum(c["histogram"]) == 200
    assert len(c["histogram"]) == 10 and all(0 <= v <= 1 for v in c["observed"])
    assert np.all(np.diff(c["predicted"]) > 0)
    json.dumps(c)
