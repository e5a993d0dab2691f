"""Issue #22: the site's own model cross-validated at the site (``own_cv``), read strictly by the analyst and
used as the "alone" number and in the keep-own choice."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import FormatError
from core.learn.cluster_models import Selection
from core.learn.own_cv import cross_validate_own, cv_plan, read_own_cv
from core.methods.dc_analysis import site_line


def _rows(n: int, seed: int = 0, K: int = 2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, 5)) + 1.2 * np.eye(K, 5)[y]
    return X, y.astype(np.int64)


def test_plan_folds_and_repeats():
    assert cv_plan(np.array([0] * 500 + [1] * 500)) == (5, 1)
    assert cv_plan(np.array([0] * 37 + [1] * 3)) == (3, 5)        # rarest class 3 → 3 folds; ⌈200/40⌉ repeats
    assert cv_plan(np.array([0] * 9 + [1] * 1)) == (2, 10)        # never fewer than 2 folds; at most 10 repeats


def test_scores_are_deterministic_in_range_and_informative():
    X, y = _rows(120)
    a, b = cross_validate_own(X, y, 2), cross_validate_own(X.copy(), y.copy(), 2)
    assert a == b  # seeded from the rows: the same CSV gives the same numbers
    assert a["rows"] == 120 and a["events"] == int(y.sum()) and (a["folds"], a["repeats"]) == (5, 2)
    assert 0.75 < a["accuracy"] <= 1 and 0.8 < a["auc"] <= 1 and 0 <= a["balanced_accuracy"] <= 1
    assert a["log_loss"] > 0 and "logistic regression" in a["model"]
    noise = cross_validate_own(np.random.default_rng(1).normal(size=(120, 5)), y, 2)
    assert noise["auc"] < 0.7 and noise["accuracy"] < a["accuracy"]  # a useless model scores as one
    other = cross_validate_own(X[:-1], y[:-1], 2)
    assert other != a


def test_multiclass_site_with_absent_class():
    X, y = _rows(90, K=3)
    cv = cross_validate_own(X, y, 4)  # the kit knows a fourth class this site never saw
    assert "events" not in cv and 0.5 < cv["auc"] <= 1
    assert read_own_cv({"own_cv": cv}, 90, 4) is not None
    assert cross_validate_own(X, np.zeros(90, np.int64), 4) is None  # one class: nothing to score


@pytest.mark.parametrize("change, word", [
    ({"accuracy": 1.5}, "accuracy"), ({"auc": -0.1}, "auc"), ({"accuracy": True}, "accuracy"),
    ({"accuracy": float("nan")}, "accuracy"), ({"rows": 500}, "rows"), ({"rows": 99.0}, "rows"),
    ({"events": 200}, "events"), ({"folds": 1}, "folds"), ({"log_loss": -1}, "log_loss"),
    ({"balanced_accuracy": "0.9"}, "balanced_accuracy")])
def test_forged_scores_are_refused(change, word):
    X, y = _rows(100)
    cv = cross_validate_own(X, y, 2)
    assert read_own_cv({"own_cv": cv}, 100, 2)["accuracy"] == cv["accuracy"]
    with pytest.raises(FormatError, match=word):
        read_own_cv({"own_cv": {**cv, **change}}, 100, 2)
    with pytest.raises(FormatError, match="event"):
        read_own_cv({"own_cv": {k: v for k, v in cv.items() if k != "events"}}, 100, 2)
    with pytest.raises(FormatError):
        read_own_cv({"own_cv": [0.9]}, 100, 2)
    assert read_own_cv({}, 100, 2) is None  # an older bundle: today's behaviour


def _selection(own: dict | None, n: int = 100) -> Selection:
    sel = Selection([], 5, 1, [n], np.array([float(n)]), np.array([n]), site_cv=[own])
    sel.lin_correct = np.array([0.70 * n])
    return sel


def test_keep_own_unless_the_cluster_clears_one_standard_error():
    own = {"accuracy": 0.80, "rows": 100, "auc": 0.85, "balanced_accuracy": 0.8}
    sel = _selection(own)
    # se = √(.85·.15/100 + .8·.2/100) ≈ 0.054 > 0.05: noise, the site keeps its own model
    assert sel.keeps_own(0, 0.85)
    # se ≈ 0.050 < 0.10: the cluster's model is sent
    assert not sel.keeps_own(0, 0.90)
    assert sel.own_acc()[0] == pytest.approx(0.80)
    # a bundle without own_cv: the reduced-rows twin (0.70) and the old rule (strictly better)
    old = _selection(None)
    assert old.own_acc()[0] == pytest.approx(0.70) and not old.keeps_own(0, 0.72)


def test_site_line_shows_both_numbers_with_their_row_counts():
    from core.learn.cluster_models import site_estimates

    sel = _selection({"accuracy": 0.80, "rows": 100, "auc": 0.85, "balanced_accuracy": 0.8})
    info = site_estimates(sel, 0, 0.80, 0.83, True, kept_own=True)
    assert info["own_model"]["source"] == "site" and info["expected"]["accuracy"] == 0.80
    line = site_line({"site": "a", "rows": 100, "cluster": 1, "model": "own", "own_kind": "linear", **info})
    assert "expected accuracy 0.800 (n = 100" in line and "cross-validated at your site on 100 rows" in line
    assert "AUC 0.850" in line
    old = site_estimates(_selection(None), 0, 0.83, 0.83, True)
    line = site_line({"site": "a", "rows": 100, "cluster": 1, "model": "cluster", **old})
    assert "estimated from the 100 reduced rows" in line and "0.700 (n = 100" in line


def test_a_fit_refuses_a_bundle_with_forged_scores():
    from core.methods.base import FitContext, ReceivedBundle, SiteInput
    from core.methods.dccfl import DC

    rng = np.random.default_rng(5)
    anchor = rng.normal(size=(200, 5))
    method = DC(epochs=2, hidden=[4])
    bundles = []
    for i in range(2):
        X, y = _rows(60, seed=i)
        ex = method.site_compute(SiteInput(X, y, ["a", "b"], anchor, settings={"seed": i}))
        cv = cross_validate_own(X, y, 2)
        bundles.append(ReceivedBundle(f"s{i}", f"fp{i}", f"d{i}", "", {**ex.manifest, "own_cv": cv}, ex.arrays))
    summary = method.fit(bundles, FitContext(["a", "b"])).summary
    assert all(x["own_model"]["source"] == "site" for x in summary["sites"])
    bundles[1].manifest["own_cv"] = {**bundles[1].manifest["own_cv"], "accuracy": 1.2}
    with pytest.raises(FormatError, match="accuracy"):
        method.fit(bundles, FitContext(["a", "b"]))
