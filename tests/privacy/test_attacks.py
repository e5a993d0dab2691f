"""Issue #24: the attacks of the privacy assessment, checked against independent attacks written here from the
published description, and the verdicts they lead to."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from core.formats.threat import ThreatModel
from core.formats.thresholds import PrivacyThresholds
from core.methods import SiteInput, get_method
from core.privacy import attacks as A
from core.privacy.assessment import assess_export, reference_split


@pytest.fixture(scope="module")
def table():
    X, y = load_breast_cancer(return_X_y=True)
    anchor = X.mean(0) + X.std(0) * np.random.default_rng(0).standard_normal((600, X.shape[1]))
    return X, y, anchor


def site_of(table, **settings) -> SiteInput:
    X, y, anchor = table
    return SiteInput(X, y, ["0", "1"], anchor, None, {"seed": 3, **settings}, scale=X.std(0), centre=X.mean(0))


def independent_pinv_attack(anchor, anchor_tilde, x_tilde):
    """Written from the published description: regress the anchor rows on their reduced images (with an
    intercept) by the Moore–Penrose pseudo-inverse, then map the victim's reduced rows through it."""
    design = np.hstack([anchor_tilde, np.ones((anchor_tilde.shape[0], 1))])
    coef = np.linalg.pinv(design) @ anchor
    return np.hstack([x_tilde, np.ones((x_tilde.shape[0], 1))]) @ coef


@pytest.mark.parametrize("dimension", [30, 20, 8])
def test_collusion_agrees_with_an_independent_pinv_attack(table, dimension):
    X, _, anchor = table
    method = get_method("dccfl")
    site = site_of(table, dimension=dimension)
    ex = method.site_compute(site)
    found = assess_export(site, ex, method, max_rows=10_000).finding("collusion")
    perm = ex.private_arrays["permutation"]
    attacked = ~np.isin(perm, reference_split(len(X), ThreatModel().public_rows))  # not the stand-in public rows
    mine = independent_pinv_attack(anchor, ex.arrays["anchor_tilde"].astype(float), ex.arrays["x_tilde"].astype(float))
    rel = (np.abs(mine - X[perm]) / X.std(0))[attacked]
    ref_median = float(np.median(rel))
    ref_within = float(np.mean((rel <= 0.10).all(axis=1)))
    assert found.rows == attacked.sum() == len(X) - len(X) // 2
    assert found.numbers["median_cell_error"] == pytest.approx(ref_median, rel=0.10, abs=1e-4)
    assert found.numbers["within_10pct"] == pytest.approx(ref_within, abs=0.10 * max(ref_within, 0.01))


def test_full_dimension_without_noise_is_rebuilt_almost_exactly_and_judged_poor(table):
    method = get_method("dccfl")
    site = site_of(table, dimension=30)
    a = assess_export(site, method.site_compute(site), method)
    found = a.finding("collusion")
    assert found.numbers["median_cell_error"] < 0.01 and found.numbers["within_10pct"] > 0.6
    assert found.verdict == "poor" and a.verdict == "poor"
    assert "could rebuild" in found.sentence and "569 rows" in found.sentence
    assert a.finding("membership").numbers["auc"] > 0.95


def test_strong_formal_noise_defeats_the_collusion_and_membership_attacks(table):
    method = get_method("dccfl")
    site = site_of(table, privacy_epsilon=1.0)
    a = assess_export(site, method.site_compute(site), method)
    found = a.finding("collusion")
    assert found.verdict == "ok" and found.numbers["within_10pct"] == 0.0
    assert found.numbers["median_cell_error"] >= 0.5
    assert a.finding("membership").verdict == "ok"
    assert a.formal is not None and a.formal["epsilon"] == 1.0 and a.not_covered


def test_membership_auc_is_a_coin_toss_on_rows_that_never_left():
    rng = np.random.default_rng(1)
    pool = rng.standard_normal((3000, 6))
    released, never_a, never_b = pool[:1000], pool[1000:2000], pool[2000:]
    out = A.membership_test(never_a, never_b, released, np.ones(6))
    assert abs(out["auc"] - 0.5) < 0.05 and out["tpr_at_1pct_fpr"] < 0.05
    caught = A.membership_test(released, never_b, released, np.ones(6))  # released rows are found at distance 0
    assert caught["auc"] > 0.99 and caught["tpr_at_1pct_fpr"] > 0.99


def test_nearest_record_ratio_tells_copies_from_lookalikes():
    rng = np.random.default_rng(2)
    members, holdout = rng.standard_normal((500, 5)), rng.standard_normal((500, 5))
    copies = members[:50] + 0.01 * rng.standard_normal((50, 5))
    lookalikes = rng.standard_normal((50, 5))
    assert A.nearest_record_ratio(copies, members, holdout, np.ones(5))["ratio"] < 0.1
    assert A.nearest_record_ratio(lookalikes, members, holdout, np.ones(5))["ratio"] == pytest.approx(1.0, abs=0.25)


def test_binary_columns_count_cells_wrong_after_rounding():
    X = np.array([[0, 1, 5.0], [1, 0, 6.0], [1, 1, 7.0], [0, 0, 8.0]])
    X_hat = X + np.array([[0.4, -0.4, 0.0], [-0.6, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    out = A.reconstruction_errors(X, X_hat, A.column_spread(X), A.binary_columns(X))
    assert out["binary_cells_wrong"] == pytest.approx(1 / 8)
    assert out["within_10pct"] == pytest.approx(0.75) and out["median_cell_error"] == 0.0


def test_gold_smallest_group_and_meta_lr_model_loss(table):
    X, y, _ = table
    gold = get_method("gold")
    site = SiteInput(X, y, ["0", "1"], None, None, {"seed": 1})
    a = assess_export(site, gold.site_compute(site), gold, PrivacyThresholds(group_size_min=1000))
    g = a.finding("group_size")
    assert g.verdict == "poor" and g.numbers["smallest_group"] < 1000
    assert a.finding("collusion").verdict == "not applicable"
    meta = get_method("meta-lr")
    b = assess_export(site, meta.site_compute(site), meta)
    assert b.finding("collusion").verdict == "not applicable" and b.finding("group_size").verdict == "not applicable"
    assert b.finding("collusion").sentence.startswith("Not applicable: ")
    loss = b.finding("membership")  # the shipped model's loss on a patient
    assert loss.verdict in ("ok", "poor") and "model" in loss.adversary and 0.4 < loss.numbers["auc"] < 1


def test_a_model_loss_attack_sees_an_overfitted_model_and_not_a_well_determined_one():
    def membership(n, m):
        rng = np.random.default_rng(3)
        X = rng.standard_normal((n, m))
        y = (X[:, 0] + 2 * rng.standard_normal(n) > 0).astype(np.int64)
        method = get_method("meta-lr", {"ridge": 1e-4})
        site = SiteInput(X, y, ["0", "1"], None, None, {})
        return assess_export(site, method.site_compute(site), method).finding("membership")

    overfitted = membership(200, 80)  # 100 members, 81 coefficients: the model remembers its rows
    settled = membership(2000, 3)  # 500 members, 4 coefficients
    assert overfitted.numbers["auc"] > 0.65 and overfitted.verdict == "poor"
    assert abs(settled.numbers["auc"] - 0.5) < 0.06 and settled.verdict == "ok"


def test_column_summary_is_each_columns_mean_spread_and_zero_one_test():
    rng = np.random.default_rng(9)
    X = np.column_stack([rng.normal(3, 2, 5000), np.full(5000, 7.0), rng.integers(0, 2, 5000).astype(float),
                         rng.integers(0, 3, 5000).astype(float)])
    mean, spread, binary = A.column_summary(X, block=333)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(spread, np.where(X.std(axis=0) > 1e-12, X.std(axis=0), 1.0), rtol=1e-12)
    assert binary.tolist() == [False, False, True, False]
