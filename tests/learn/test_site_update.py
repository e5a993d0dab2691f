"""Model updating at the site (issue #37, core/learn/site_update.py): the candidates, the nested choice, the guards."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from core.learn.site_update import (
    apply_update,
    blend_weight,
    choose_update,
    fit_offsets,
    log_proba,
    lost_classes,
    softmax,
)


def _binary(p: np.ndarray) -> np.ndarray:
    return np.column_stack([1 - p, p])


def _site(n: int, seed: int, own_noise: float, shared_noise: float, shift: float = 0.0):
    """Rows whose truth is logit η; the own and the shared model see η with noise, the shared one with a shifted
    baseline (another site's base rate)."""
    rng = np.random.default_rng(seed)
    eta = rng.normal(size=n) * 1.5
    y = (rng.random(n) < expit(eta)).astype(np.int64)
    own = _binary(expit(eta + own_noise * rng.normal(size=n)))
    shared = _binary(expit(eta + shift + shared_noise * rng.normal(size=n)))
    return y, own, shared


def test_the_intercept_fit_recovers_a_known_shift():
    rng = np.random.default_rng(0)
    eta = rng.normal(size=4000)
    y = (rng.random(4000) < expit(eta)).astype(np.int64)
    base = log_proba(_binary(expit(eta + 1.0)))  # the model's baseline is 1 logit too high
    a, b, _ = fit_offsets(base, y)
    assert b == 1.0 and a[1] - a[0] == pytest.approx(-1.0, abs=0.12)
    a, b, _ = fit_offsets(log_proba(_binary(expit(2 * eta))), y, slope_of=log_proba(_binary(expit(2 * eta))))
    assert b == pytest.approx(0.5, abs=0.08)  # a model twice too confident gets slope ½


def test_a_better_shared_model_is_used_and_a_worse_one_is_not():
    y, own, shared = _site(600, 1, own_noise=1.5, shared_noise=0.3, shift=0.8)
    c = choose_update(y, own, shared, 2)
    assert c["kind"] in ("intercept", "recalibrated", "blend") and c["weight"] > 0.7  # shifted: re-estimate
    assert c["scores"][c["kind"]]["log_loss"] < c["scores"]["own"]["log_loss"] and "so you use it" in c["reason"]
    y, own, shared = _site(600, 2, own_noise=0.3, shared_noise=2.5)
    c = choose_update(y, own, shared, 2)
    assert c["kind"] == "own" and "so you keep your own model" in c["reason"]


def test_the_choice_is_a_function_of_the_rows():
    y, own, shared = _site(200, 3, 1.0, 0.8, 0.3)
    a, b = choose_update(y, own, shared, 2), choose_update(y.copy(), own.copy(), shared.copy(), 2)
    assert a == b


def test_the_blend_weight_stays_near_the_middle_on_few_rows_and_follows_the_data_on_many():
    y, own, shared = _site(30, 4, 1.0, 1.0)
    assert 0.25 < blend_weight(log_proba(own), log_proba(shared), y) < 0.75
    y, own, shared = _site(3000, 5, 3.0, 0.2)
    assert blend_weight(log_proba(own), log_proba(shared), y) > 0.9


def test_a_model_that_never_predicts_the_minority_class_is_never_chosen():
    rng = np.random.default_rng(6)
    y = (rng.random(300) < 0.15).astype(np.int64)
    own = _binary(np.where(y == 1, 0.6, 0.3) + rng.normal(0, 0.05, 300).clip(-0.2, 0.2))
    flat = _binary(np.full(300, 0.15))  # well calibrated, never predicts the event at ½
    assert lost_classes(y, flat, own) == [1]
    c = choose_update(y, own, flat, 2, metric="accuracy", classes=["no", "yes"])
    assert c["kind"] == "own"
    assert all("never predicts 'yes'" in why or "significantly worse" in why for why in c["excluded"].values())


def test_a_significantly_worse_auc_is_excluded_even_when_its_log_loss_is_lower():
    rng = np.random.default_rng(7)
    n = 800
    eta = rng.normal(size=n) * 2
    y = (rng.random(n) < expit(eta)).astype(np.int64)
    own = _binary(expit(4 * eta))  # sharp ranking, badly over-confident
    shared = _binary(expit(0.5 * (eta + rng.normal(size=n) * 2.0)))  # calibrated-ish, poor ranking
    c = choose_update(y, own, shared, 2)
    assert "shared" in c["excluded"] and "significantly worse" in c["excluded"]["shared"]
    assert c["kind"] != "shared"


def test_more_classes_and_an_absent_class():
    rng = np.random.default_rng(8)
    n, K = 400, 3
    y = rng.integers(0, 2, n)  # the site never saw class 2
    logits = np.column_stack([y == 0, y == 1, np.zeros(n)]).astype(float) * 2 + rng.normal(size=(n, K))
    own, shared = softmax(logits + rng.normal(size=(n, K))), softmax(logits)
    c = choose_update(y, own, shared, K)
    assert c["kind"] != "own" and np.all(np.isfinite(c["params"].get("intercepts", [0.0])))
    P = apply_update(c, own, shared)
    assert P.shape == (n, K) and np.allclose(P.sum(axis=1), 1.0)


def test_apply_update_reproduces_each_kind():
    own, shared = _binary(np.array([0.2, 0.7])), _binary(np.array([0.6, 0.9]))
    assert np.array_equal(apply_update({"kind": "own", "params": {}}, own, shared), own)
    assert np.array_equal(apply_update({"kind": "shared", "params": {}}, own, shared), shared)
    blend = apply_update({"kind": "blend", "params": {"weight": 0.5, "intercepts": [0.0, 0.0]}}, own, shared)
    lo, ls = np.log(own[:, 1] / own[:, 0]), np.log(shared[:, 1] / shared[:, 0])
    assert np.allclose(np.log(blend[:, 1] / blend[:, 0]), 0.5 * lo + 0.5 * ls)


def test_too_few_rows_keep_the_own_model():
    c = choose_update(np.array([0, 1, 0]), _binary(np.array([.2, .8, .3])), _binary(np.array([.1, .9, .2])), 2)
    assert c["kind"] == "own" and "cannot be told apart" in c["reason"]
    y, own, shared = _site(29, 9, 3.0, 0.1)  # a far better shared model, but on 29 rows
    assert choose_update(y, own, shared, 2)["kind"] == "own"
