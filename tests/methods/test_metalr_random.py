"""meta-lr's random effects (issue #37): DerSimonian–Laird τ², each site's empirical-Bayes coefficients between its
own and the others', the prior each package carries, and the shared model's out-of-fold predictions at the site."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from core.errors import FormatError
from core.methods import FitContext
from core.methods.metalr.fixed_effect import stratified
from core.methods.metalr.random_effects import (
    dersimonian_laird,
    posterior,
    prior_without,
    proportional_tau,
    tau_squared,
)
from core.methods.metalr.shared_oof import shared_oof_at_site, site_model
from core.methods.metalr.site_logit import predict_proba
from tests.methods.test_metalr import _bundles, _gaussian


def _kit(m: int, K: int):
    return SimpleNamespace(schema=SimpleNamespace(width=m, classes=[str(k) for k in range(K)]))


def test_dersimonian_laird_by_hand():
    # w = 1 each, mean 2, Q = 4 + 0 + 4 = 8 on 2 df, c = 3 − 3/3 = 2: τ² = (8 − 2)/2
    assert dersimonian_laird(np.array([0.0, 2.0, 4.0]), np.ones(3)) == pytest.approx(3.0)
    assert dersimonian_laird(np.array([0.0, 1.0, 2.0]), np.ones(3)) == 0.0  # Q = 2 = df: no spread beyond chance
    assert dersimonian_laird(np.array([5.0]), np.ones(1)) == 0.0  # one site measures no spread
    # unequal weights: w = (1, 4), mean (0 + 4·1)/5 = 0.8, Q = 0.64 + 4·0.04 = 0.8 < df = 1
    assert dersimonian_laird(np.array([0.0, 1.0]), np.array([1.0, 0.25])) == 0.0
    # w = (1, 4), estimates (0, 3): mean 2.4, Q = 5.76 + 4·0.36 = 7.2, c = 5 − 17/5 = 1.6: τ² = 6.2/1.6
    assert dersimonian_laird(np.array([0.0, 3.0]), np.array([1.0, 0.25])) == pytest.approx(6.2 / 1.6)


def test_tau_squared_is_per_coefficient_over_the_sites_that_estimate_it():
    coefs = [np.array([0.0, 1.0]), np.array([2.0, 1.0]), np.array([4.0, 1.0])]
    covs = [np.eye(2)] * 3
    tau2 = tau_squared(coefs, covs, [np.eye(2)] * 3)
    assert tau2[0] == pytest.approx(3.0) and tau2[1] == 0.0


def test_one_proportional_tau_squared_pools_the_coefficients_spread():
    """Equal unit variances: D = I and the proportional τ² is the per-coefficient DerSimonian–Laird values'
    mean before clipping, (Q − (k − 1)d) / ((k − 1)d); sites that agree give 0."""
    rng = np.random.default_rng(0)
    coefs = [rng.normal(size=3) * np.array([3.0, 0.5, 1.0]) for _ in range(4)]
    covs, maps = [np.eye(3)] * 4, [np.eye(3)] * 4
    B = np.array(coefs)
    unclipped = ((B - B.mean(axis=0)) ** 2).sum(axis=0) / 3 - 1  # (Qⱼ − 3)/3 per coefficient
    assert proportional_tau(coefs, covs, maps) == pytest.approx(np.full(3, max(0.0, unclipped.mean())))
    alike = [np.array([1.0, 2.0, 3.0]) + 0.1 * rng.normal(size=3) for _ in range(4)]
    assert np.all(proportional_tau(alike, covs, maps) == 0.0)
    assert np.all(proportional_tau(coefs[:1], covs[:1], maps[:1]) == 0.0)


def _sites(K: int = 2, flip_last: bool = False, seed: int = 5):
    X, y = _gaussian(K, 1400, seed=seed)
    parts = [np.arange(0, 400), np.arange(400, 800), np.arange(800, 1200), np.arange(1200, 1400)]
    if flip_last:
        y = y.copy()
        y[1200:] = (K - 1) - y[1200:]  # the last, smallest site has the reversed relation
    return X, y, parts


def test_fixed_effect_through_the_prior_is_the_one_step_stratified_fit():
    """T = 0: each site's posterior given the others is the fixed-effect combination of every site, and its
    intercept the one-step stratified value (fixed_effect.stratified) — today's packages."""
    X, y, parts = _sites(3)
    method, bundles = _bundles(X, y, 3, parts, effects="fixed")
    coefs = [b.arrays["coef"] for b in bundles]
    covs = [b.arrays["cov"] for b in bundles]
    p = X.shape[1] + 1
    commons = [np.array([r * p + j for r in range(2) for j in range(1, p)])] * 4
    maps = [np.eye(2 * (p - 1))] * 4
    comb, sent = stratified(coefs, covs, commons, maps)
    parts_ = [c.ravel()[commons[0]] for c in coefs]
    part_covs = [v[np.ix_(commons[0], commons[0])] for v in covs]
    for i in range(4):
        beta, full = posterior(coefs[i], covs[i], commons[i], maps[i],
                               prior_without(i, parts_, part_covs, maps, random=False))
        assert np.allclose(beta, comb.coef, atol=1e-9) and np.allclose(full, sent[i], atol=1e-9)


def _varying_slopes(sites: int = 5, n: int = 300, spread: float = 0.8, seed: int = 2):
    """Sites whose true slope on one column varies (1 + N(0, spread²)) and whose base rates differ; rows for fitting
    and as many held out per site."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(sites):
        slope, base = 1.0 + spread * rng.normal(), rng.normal(0, 0.5)
        X = rng.normal(size=(2 * n, 1))
        y = (rng.random(2 * n) < 1 / (1 + np.exp(-(base + slope * X[:, 0])))).astype(int)
        out.append((X[:n], y[:n], X[n:], y[n:]))
    return out


def test_each_site_gets_a_slope_between_its_own_and_the_others_and_predicts_better_than_one_for_all():
    """Random effects: with sites whose slopes differ, τ² > 0, every site's slope lies between its own estimate and
    the others' mean (its prior), and on held-out rows the sites' log-loss is lower than with the fixed-effect
    slope every site shares."""
    from core.methods import ReceivedBundle, SiteInput, get_method

    data = _varying_slopes()

    def fit(effects):
        method = get_method("meta-lr", {"effects": effects})
        bundles = []
        for i, (X, y, _, _) in enumerate(data):
            ex = method.site_compute(SiteInput(X, y, ["0", "1"], None))
            bundles.append(ReceivedBundle(f"s{i}", f"F{i}", f"d{i}", f"e{i}",
                                          {**ex.manifest, "family": "meta-lr", "method": "meta-lr"}, ex.arrays))
        return bundles, method.fit(bundles, FitContext(["0", "1"]))

    bundles, r = fit("random")
    _, f = fit("fixed")
    assert r.summary["tau2"][0][1] > 0.05 and r.summary["tau2"][0][0] == 0.0  # the slope's; intercepts are own
    loss = {"random": 0.0, "fixed": 0.0}
    for i, (_, _, Xt, yt) in enumerate(data):
        own = bundles[i].arrays["coef"][0, 1]
        prior = r.packages[i][1]["prior_mean"][0]
        got = r.packages[i][1]["coef"][0, 1]
        assert min(own, prior) - 1e-9 <= got <= max(own, prior) + 1e-9
        for name, res in (("random", r), ("fixed", f)):
            pr = predict_proba(res.packages[i][1]["coef"], Xt)[np.arange(len(yt)), yt]
            loss[name] += float(-np.log(pr).mean())
    assert loss["random"] < loss["fixed"]


def test_a_site_unlike_the_alike_others_is_told_to_keep_its_own_model():
    """The reversed site's estimate is far outside what the three alike sites imply (their τ² ≈ 0): its prior
    test fails and it keeps its own model, as under the fixed effect."""
    X, y, parts = _sites(2, flip_last=True)
    method, bundles = _bundles(X, y, 2, parts, effects="random")
    res = method.fit(bundles, FitContext(["0", "1"]))
    assert res.packages[3][0].get("model") == "own"
    assert all(res.packages[i][0].get("model") != "own" for i in range(3))


@pytest.mark.parametrize("K, effects, intercepts", [(2, "random", "site"), (2, "fixed", "site"),
                                                    (3, "random", "site"), (3, "random", "common")])
def test_the_site_recomputes_its_package_from_its_rows_and_the_prior(K, effects, intercepts):
    """From the rows it exported, the site's :func:`site_model` gives the package's model exactly (the same
    probabilities), also for a site that lacks a class."""
    X, y, parts = _sites(K)
    if K == 3:  # the first site has no row of class 2
        keep = np.ones(len(y), bool)
        keep[parts[0][y[parts[0]] == 2]] = False
        X, y = X[keep], y[keep]
        cuts = np.cumsum([0, *[int(keep[q].sum()) for q in parts]])
        parts = [np.arange(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    method, bundles = _bundles(X, y, K, parts, effects=effects, intercepts=intercepts)
    res = method.fit(bundles, FitContext([str(k) for k in range(K)]))
    for i, idx in enumerate(parts):
        manifest, arrays = res.packages[i]
        method.check_package(manifest, arrays, {}, _kit(X.shape[1], K))
        assert manifest["prior_sites"] == 3 and manifest["effects"] == effects
        again = site_model(manifest, arrays, X[idx], y[idx])
        assert np.allclose(predict_proba(again, X), predict_proba(arrays["coef"], X), atol=1e-9)
    if K == 3 and intercepts == "site":
        assert np.allclose(predict_proba(res.packages[0][1]["coef"], X)[:, 2], 0.0)


def test_out_of_fold_predictions_never_see_the_row_they_predict():
    """Changing the labels of one fold's rows leaves that fold's predictions unchanged (they come from the other
    folds and the other sites only) and changes the other folds' predictions."""
    X, y, parts = _sites(2)
    method, bundles = _bundles(X, y, 2, parts)
    res = method.fit(bundles, FitContext(["0", "1"]))
    manifest, arrays = res.packages[1]
    Xi, yi = X[parts[1]], y[parts[1]].copy()
    folds = np.arange(len(yi)) % 5
    before = shared_oof_at_site(manifest, arrays, Xi, yi, folds)
    yi[folds == 2] = 1 - yi[folds == 2]
    after = shared_oof_at_site(manifest, arrays, Xi, yi, folds)
    assert np.array_equal(before[folds == 2], after[folds == 2])
    assert not np.allclose(before[folds != 2], after[folds != 2])
    assert before.shape == (len(yi), 2) and np.allclose(before.sum(axis=1), 1.0)
    # honest, but close to the package on rows it was fitted on: a fold is 4/5 of the same rows
    assert np.mean(before.argmax(1) == predict_proba(arrays["coef"], Xi).argmax(1)) > 0.9


def test_a_fold_whose_other_rows_hold_one_class_uses_the_prior_slopes():
    X, y, parts = _sites(2)
    method, bundles = _bundles(X, y, 2, parts)
    res = method.fit(bundles, FitContext(["0", "1"]))
    manifest, arrays = res.packages[3]
    Xi, yi = X[parts[3]][:40], np.r_[np.zeros(30, int), np.ones(10, int)]
    folds = np.r_[np.zeros(30, int), np.ones(10, int)]  # fold 0's other rows are all class 1, and vice versa
    oof = shared_oof_at_site(manifest, arrays, Xi, yi, folds)
    assert np.all(np.isfinite(oof)) and np.allclose(oof.sum(axis=1), 1.0)


def test_a_package_without_its_prior_or_with_half_of_it_is_refused():
    X, y, parts = _sites(2)
    method, bundles = _bundles(X, y, 2, parts)
    res = method.fit(bundles, FitContext(["0", "1"]))
    manifest, arrays = res.packages[0]
    kit = _kit(X.shape[1], 2)
    method.check_package(manifest, {"coef": arrays["coef"]}, {}, kit)  # a package of before: only the model
    with pytest.raises(FormatError, match="missing"):
        method.check_package(manifest, {"coef": arrays["coef"], "prior_mean": arrays["prior_mean"]}, {}, kit)
    with pytest.raises(FormatError, match="prior_precision"):
        method.check_package(manifest, {**arrays, "prior_precision": np.eye(3)}, {}, kit)
    with pytest.raises(FormatError, match="carries no prior"):
        shared_oof_at_site(manifest, {"coef": arrays["coef"]}, X[:20], y[:20], np.arange(20) % 2)
