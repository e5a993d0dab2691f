"""Meta-analysed logistic regression (``meta-lr``): the site's fit, the fixed-effect combination, the refusals
of forged bundles, and a whole CLI round ending in ``participant apply --validate``."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from core.errors import FormatError
from core.learn.local_model import fit_local_model
from core.methods import METHODS, FitContext, ReceivedBundle, SiteInput, default_method, get_method
from core.methods.metalr.fixed_effect import combine
from core.methods.metalr.site_logit import fit_site_logit, predict_proba
from core.methods.promise import promised_columns
from tests.support.cli import WF, analyst_of, confirm, run
from tests.support.roundkit import CLASSES, FEATURES, make_sites

NAME = "meta-lr"


def _data(K: int, n: int = 4000, seed: int = 3):
    X, y = make_classification(n, 5, n_informative=4, n_redundant=0, n_classes=K, random_state=seed)
    return X * np.array([1.0, 10.0, 0.5, 3.0, 1.0]) + np.array([5.0, 0.0, 0.0, 100.0, 0.0]), y


def _gaussian(K: int, n: int, seed: int = 3):
    """Classes as Gaussians with one covariance: the multinomial logit is the true model, so a fit over some of
    the classes estimates exactly the contrasts of the full fit."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1.0, size=(K, 5))
    y = rng.integers(0, K, n)
    X = (centres[y] + rng.normal(size=(n, 5))) * np.array([1.0, 10.0, 0.5, 3.0, 1.0]) + np.array(
        [5.0, 0.0, 0.0, 100.0, 0.0])
    return X, y


def _bundles(X, y, K: int, parts, **settings) -> tuple[object, list[ReceivedBundle]]:
    method = get_method(NAME, settings)
    classes = [str(k) for k in range(K)]
    out = []
    for i, idx in enumerate(parts):
        ex = method.site_compute(SiteInput(X[idx], y[idx], classes, None))
        out.append(ReceivedBundle(f"site{i}", f"FP{i}", f"digest{i}", f"env{i}",
                                  {**ex.manifest, "family": NAME, "method": NAME}, ex.arrays))
    return method, out


def _kit(m: int, K: int):
    return SimpleNamespace(schema=SimpleNamespace(width=m, classes=[str(k) for k in range(K)]))


def test_declarations_and_the_default_is_unchanged():
    cls = METHODS[NAME]
    assert cls.task == "classification" and not cls.needs_anchor and cls.labels_leave == "none"
    assert cls.reads_labels() and "p × p covariance matrix per site" in cls.what_leaves
    assert default_method("classification") == "dccfl" and list(METHODS)[-1] == NAME


@pytest.mark.parametrize("K", [2, 3])
def test_site_fit_is_the_maximum_likelihood_estimate_in_raw_units(K):
    X, y = _data(K, n=1500)
    fit = fit_site_logit(X, y, K, lam=1e-9)
    ref = LogisticRegression(C=1e12, max_iter=5000, tol=1e-10).fit((X - X.mean(0)) / X.std(0), y)
    assert fit.converged
    assert np.allclose(predict_proba(fit.coef, X), ref.predict_proba((X - X.mean(0)) / X.std(0)), atol=1e-4)
    assert np.allclose(fit.cov, fit.cov.T) and np.all(np.linalg.eigvalsh(fit.cov) > 0)


def test_separated_classes_at_a_small_site_still_give_finite_estimates():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    y = np.array([0, 0, 0, 1, 1, 1])  # perfectly separated: no maximum-likelihood estimate
    fit = fit_site_logit(X, y, 2, lam=1.0)
    assert fit.converged and np.all(np.isfinite(fit.coef)) and np.all(np.isfinite(fit.cov))


@pytest.mark.parametrize("K, intercepts", [(2, "common"), (3, "common"), (3, "site")])
def test_combination_of_iid_sites_matches_the_pooled_fit(K, intercepts):
    X, y = _data(K, n=8000)
    parts = np.array_split(np.random.default_rng(0).permutation(len(y)), 4)
    method, bundles = _bundles(X, y, K, parts, intercepts=intercepts, effects="fixed")
    res = method.fit(bundles, FitContext([str(k) for k in range(K)]))
    pooled = fit_site_logit(X, y, K, lam=4.0, scale=X.std(axis=0))  # four sites' penalty, once
    coef = np.asarray(res.summary["combined"]["coef"])
    se = np.asarray(res.summary["combined"]["se"])
    pooled_se = np.sqrt(np.diag(pooled.cov)).reshape(coef.shape)
    assert np.max(np.abs(coef - pooled.coef) / pooled_se) < 0.5  # within half a standard error
    assert np.max(np.abs(se / pooled_se - 1)) < 0.05
    assert np.max(np.abs(predict_proba(coef, X) - predict_proba(pooled.coef, X))) < 0.03
    assert res.summary["heterogeneity"]["p_value"] > 0.01  # IID sites: no heterogeneity flagged
    assert res.summary["own_model_sites"] <= 1  # each site is tested at 5 %: rarely told to keep its own


def test_heterogeneous_sites_are_flagged():
    X, y = _data(2)
    y2 = y.copy()
    y2[2000:] = 1 - y2[2000:]  # two sites with the opposite relation
    parts = [np.arange(0, 1000), np.arange(1000, 2000), np.arange(2000, 3000), np.arange(3000, 4000)]
    method, bundles = _bundles(X, y2, 2, parts)
    res = method.fit(bundles, FitContext(["0", "1"]))
    h = res.summary["heterogeneity"]
    assert h["p_value"] < 1e-6 and h["i2"] > 0.9
    assert any("one model for all sites is doubtful" in line for line in method.summary_lines(res.summary))


def test_a_site_unlike_the_others_keeps_its_own_model():
    """Never worse than alone: the one site whose relation is reversed keeps its own model — by its own choice,
    paired on its rows with the shared model recomputed there, and by the analyst's word for a workspace without
    that (apply then uses the model it kept at export)."""
    from core.methods.promise import own_model_state, promised_columns

    X, y = _data(2)
    y2 = y.copy()
    y2[3000:] = 1 - y2[3000:]  # a smaller fourth site with the opposite relation
    parts = [np.arange(0, 1000), np.arange(1000, 2000), np.arange(2000, 3000), np.arange(3000, 3300)]
    X, y2 = X[:3300], y2[:3300]
    method, bundles = _bundles(X, y2, 2, parts)
    res = method.fit(bundles, FitContext(["0", "1"]))
    manifest, arrays = res.packages[3]
    assert "coef" in arrays and "prior_mean" in arrays
    combined = method.apply(manifest, arrays, {}, X[3000:])  # the package as sent: the others' relation
    assert np.mean(combined["prediction"] == y2[3000:].astype(str)) < 0.5
    _, kept = own_model_state(method, X[3000:], y2[3000:], 2)

    def as_sent(r):
        return method.apply(manifest, arrays, kept, r)
    cols, choice = promised_columns(method, manifest, kept, X[3000:], as_sent, arrays=arrays)
    assert choice["by"] == "site" and choice["paired_on"] == "all" and choice["kind"] == "own"
    assert np.mean(cols["prediction"] == y2[3000:].astype(str)) > 0.8  # the site's own relation, not the others'
    if manifest.get("model") == "own":  # the analyst's word, for a workspace that predates the paired comparison
        old = {k: v for k, v in kept.items() if not k.startswith(("own_oof", "pair_"))}
        cols, choice = promised_columns(method, manifest, old, X[3000:], as_sent, arrays=arrays)
        assert choice["by"] == "analyst" and np.mean(cols["prediction"] == y2[3000:].astype(str)) > 0.8


def test_fixed_effect_of_two_scalars_is_the_inverse_variance_mean():
    c = combine([np.array([1.0]), np.array([3.0])], [np.array([[1.0]]), np.array([[3.0]])])
    assert c.coef[0] == pytest.approx((1 / 1 + 3 / 3) / (1 + 1 / 3)) and c.cov[0, 0] == pytest.approx(0.75)
    assert c.q == pytest.approx((1 - 1.5) ** 2 + (3 - 1.5) ** 2 / 3) and c.df == 1


def test_a_site_missing_a_class_is_combined_over_the_classes_it_has():
    X, y = _gaussian(3, n=900)
    parts = np.array_split(np.arange(900), 3)
    lone = parts[2][y[parts[2]] != 2]  # site 2 has no row of class '2'
    method, bundles = _bundles(X, y, 3, [parts[0], parts[1], lone])
    assert bundles[2].manifest["classes_fitted"] == [0, 1] and bundles[2].arrays["coef"].shape == (1, 6)
    method.check_bundle(bundles[2], _kit(5, 3))
    res = method.fit(bundles, FitContext(["0", "1", "2"]))
    part = [x for x in res.summary["sites"] if x["site"] == "site2"][0]
    assert part["combined"] == "yes" and "no row of '2'" in part["note"] and part["classes_fitted"] == ["0", "1"]
    assert res.summary["sites_combined"] == 3 and len(res.packages) == 3
    assert any("combined over the 2 classes it has" in line for line in method.summary_lines(res.summary))


@pytest.mark.parametrize("intercepts", ["common", "site"])
def test_sites_each_lacking_a_class_combine_to_the_pooled_fit(intercepts):
    """Each site lacks a different class (site 0 the kit's reference class): its fit over its own classes
    estimates contrasts of the common coefficients (Dᵢ ⊗ I), and their combination is close to the pooled fit's."""
    K = 4
    X, y = _gaussian(K, n=12000)
    parts = np.array_split(np.random.default_rng(1).permutation(len(y)), K)
    parts = [idx[y[idx] != k] for k, idx in enumerate(parts)]
    method, bundles = _bundles(X, y, K, parts, intercepts=intercepts)
    assert [b.manifest["classes_fitted"] for b in bundles] == [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]
    res = method.fit(bundles, FitContext([str(k) for k in range(K)]))
    rows = np.concatenate(parts)
    pooled = fit_site_logit(X[rows], y[rows], K, lam=4.0, scale=X.std(axis=0))
    coef, se = np.asarray(res.summary["combined"]["coef"]), np.asarray(res.summary["combined"]["se"])
    # two estimators of the same slopes (the pooled one treats a site's rows as if every class were possible)
    assert np.max(np.abs(coef[:, 1:] - pooled.coef[:, 1:]) / se[:, 1:]) < 3
    assert res.summary["heterogeneity"]["p_value"] > 0.01 and res.summary["classes_in_no_estimate"] == []
    for (manifest, arrays), idx in zip(res.packages, parts, strict=True):  # each site: as right as the pooled fit
        sent = method.apply(manifest, arrays, {}, X[idx])
        right = np.mean(sent["prediction"] == y[idx].astype(str))
        assert right > np.mean(predict_proba(pooled.coef, X[idx]).argmax(1) == y[idx]) - 0.02


def test_a_round_where_every_site_lacks_a_class_gives_every_site_a_package():
    """The small-sites case (each site has 2–3 of 4 classes, one site a single class; no site has every class):
    every site gets a package through the seam, applied with the site's own check (own_model_choice = site), and
    none is worse than its own model by more than the promise's margin."""
    from benchmarks.small_sites import run_round
    from core.learn.own_cv import MARGIN_SE
    from core.methods.promise import paired_se

    rng = np.random.default_rng(4)
    centres = rng.normal(0, 2.5, size=(4, 5))
    has = [[0, 1, 2], [1, 2, 3], [2, 3], [0, 3], [1]]

    def draw(n, classes):
        k = rng.choice(classes, n)
        return centres[k] + rng.normal(0, 1.0, size=(n, 5)), k.astype(np.int64)

    sites = [(*draw(60, c), *draw(120, c)) for c in has]
    method = get_method(NAME)
    rows, result, _ = run_round(method, sites, ["a", "b", "c", "d"], None, 0)
    assert len(rows) == len(sites) == len(result.packages) and all(p is not None for p in result.packages)
    s = result.summary
    assert s["sites_combined"] == 4 and not s.get("nothing_combined")
    by_site = {x["site"]: x for x in s["sites"]}
    assert by_site["site-4"]["combined"] == "no" and "only one class" in by_site["site-4"]["note"]
    for r in rows:
        assert r["used"] in ("package", "own") and r["chosen_by"] in ("analyst", "site")
        assert r["package"] - r["own_model"] >= -MARGIN_SE * paired_se(r["right"], r["own_right"]) - 1e-9, r
    assert any(r["used"] == "package" for r in rows)


def test_a_package_never_predicts_a_class_its_sites_cannot_compare():
    """Classes {0, 1} at two sites and {2, 3} at two others: no site links the two pairs, so their contrasts are
    not estimable against each other, and each site's package predicts only the classes linked to its own."""
    X, y = _gaussian(4, n=4000)
    halves = np.array_split(np.arange(4000), 4)
    parts = [idx[np.isin(y[idx], pair)] for idx, pair in zip(halves, [[0, 1], [0, 1], [2, 3], [2, 3]], strict=True)]
    method, bundles = _bundles(X, y, 4, parts)
    res = method.fit(bundles, FitContext(["0", "1", "2", "3"]))
    for (manifest, arrays), pair in zip(res.packages, [[0, 1], [0, 1], [2, 3], [2, 3]], strict=True):
        sent = method.apply(manifest, arrays, {}, X)
        assert set(sent["prediction"]) == {str(k) for k in pair}
        assert np.all(np.isfinite(arrays["coef"]))


def test_the_export_privacy_check_scores_a_model_fitted_over_some_classes():
    from core.privacy.assessment import assess_export

    X, y = _gaussian(4, n=800)
    keep = y != 0  # no row of the kit's first class
    site = SiteInput(X[keep], y[keep], ["0", "1", "2", "3"], None)
    method = get_method(NAME)
    found = assess_export(site, method.site_compute(site), method).finding("membership")
    assert found.numbers and 0.0 <= found.numbers["auc"] <= 1.0  # measured, not "could not be made"


def test_nothing_to_combine_tells_every_site_to_keep_its_own_model():
    X, y = _data(2, n=200)
    method, bundles = _bundles(X, y, 2, [np.flatnonzero(y == 0), np.flatnonzero(y == 1)])
    res = method.fit(bundles, FitContext(["0", "1"]))
    assert res.summary["nothing_combined"] and res.summary["sites_combined"] == 0
    kept = fit_local_model(X, y, 2)  # a model the site kept at export: used, not the zero coefficients
    for manifest, arrays in res.packages:
        assert manifest["model"] == "own" and manifest["own_kind"] == "linear"
        method.check_package(manifest, arrays, {}, _kit(5, 2))
        cols, choice = promised_columns(method, manifest, kept, X, lambda r, m=manifest, a=arrays:
                                        method.apply(m, a, kept, r), arrays=arrays)
        assert choice["model"] == "own" and np.mean(cols["prediction"] == y.astype(str)) > 0.8
    lines = method.summary_lines(res.summary)
    assert "nothing could be combined: every site keeps its own model" in lines[0]
    assert "keeps its own model" in lines[1]
    assert method.views(res)


@pytest.mark.parametrize("forge, expect", [
    (lambda a: a.update(cov=-a["cov"]), "not positive definite"),
    (lambda a: a.update(coef=a["coef"][:, :-1]), "'coef' has shape"),
    (lambda a: a.update(cov=a["cov"][:-1, :-1]), "'cov' has shape"),
    (lambda a: a["coef"].__setitem__((0, 1), np.nan), "non-finite"),
    (lambda a: a["cov"].__setitem__((0, 1), a["cov"][0, 1] + 1.0), "not symmetric"),
    (lambda a: a.pop("cov"), "exactly 'coef' and 'cov'"),
])
def test_forged_bundles_are_refused_with_one_sentence(forge, expect):
    X, y = _data(2, n=400)
    method, (bundle,) = _bundles(X, y, 2, [np.arange(400)])
    method.check_bundle(bundle, _kit(5, 2))  # the honest bundle passes
    forge(bundle.arrays)
    with pytest.raises(FormatError, match=expect) as err:
        method.check_bundle(bundle, _kit(5, 2))
    assert "\n" not in err.value.message


def test_a_bundle_for_another_width_or_class_list_is_refused():
    X, y = _data(2, n=400)
    method, (bundle,) = _bundles(X, y, 2, [np.arange(400)])
    with pytest.raises(FormatError, match="the kit has 6 and 2"):
        method.check_bundle(bundle, _kit(6, 2))


def test_apply_gives_probabilities_summing_to_one_and_refuses_a_wrong_width():
    X, y = _data(3, n=600)
    method, bundles = _bundles(X, y, 3, np.array_split(np.arange(600), 2))
    res = method.fit(bundles, FitContext(["0", "1", "2"]))
    manifest, arrays = res.packages[0]
    cols = method.apply(manifest, arrays, {}, X)
    P = np.column_stack([cols[f"prob_{c}"] for c in "012"])
    assert np.allclose(P.sum(axis=1), 1.0) and np.all(P >= 0)
    assert (cols["prediction"] == np.asarray(["0", "1", "2"], dtype=object)[P.argmax(axis=1)]).all()
    assert np.mean(cols["prediction"].astype(int) == y) > 0.6
    with pytest.raises(FormatError, match="do not fit this site's columns"):
        method.apply(manifest, arrays, {}, X[:, :4])


def test_whole_cli_round_then_validate_against_the_sites_own_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    d = tmp_path
    sites = dict(list(make_sites(d / "data", rows=160).items())[:3])
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Meta", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", NAME, "--out", d / "p.dckit") == 0
    assert "needs no anchor" in capsys.readouterr().out
    for name, (train, _) in sites.items():
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
        assert run("participant", "export", "--kit", d / "p.dckit", "--identity", d / name / f"{name}.dcid",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--csv", train, "--out", d / "bundles" / f"{name}.dcbundle") == 0
    out = capsys.readouterr().out
    p, q = len(FEATURES) + 1, len(CLASSES) - 1
    assert f"{q} × {p} coefficients and a {q * p} × {q * p} covariance matrix" in out
    assert f"coef {(q, p)}" in out and f"cov {(q * p, q * p)}" in out
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    out = capsys.readouterr().out
    assert "random-effects meta-analysis" in out and "Cochran's Q" in out and "cannot score" in out
    assert "DerSimonian–Laird τ²" in out
    summary = json.loads((d / "out/summary.json").read_text())
    assert summary["method"] == NAME and summary["names"] == ["intercept", *FEATURES]
    assert "Forest plot data" in (d / "out/report.html").read_text()
    for name, (_, test) in sites.items():
        assert run("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
                   d / name / f"{name}.dcid", "--csv", test, "--out", d / f"{name}-result.csv", "--validate") == 0
        text = capsys.readouterr().out
        result = pd.read_csv(d / f"{name}-result.csv")
        P = result[[f"prob_{c}" for c in CLASSES]].to_numpy()
        assert np.allclose(P.sum(axis=1), 1.0, atol=1e-6)
        # the site chose on all its rows, paired with the shared model recomputed there (issue #37), and says so
        assert "note: you use " in text and "cross-validated on your" in text
        if "the model you use (your own model)" in text:
            assert "local_prediction" not in result.columns and "shared, as sent" in text
        else:
            assert "the model you use (" in text and "your own-rows model:" in text
            assert {"prediction", "local_prediction", "recommended"} <= set(result.columns)
        assert np.mean(result["prediction"] == result["label"]) > 0.5
