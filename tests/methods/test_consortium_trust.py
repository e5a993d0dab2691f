"""Issue #15 at the method level: honest intervals, never worse than alone, the same result from any order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.learn.cluster_models import clearly_better, cv_splits
from core.learn.intervals import estimate, mcnemar_p, wilson
from core.learn.mlp import BatchedMLP
from core.methods.base import FitContext, ReceivedBundle, SiteInput, content_digest
from core.methods.dc_analysis import derived_seed, site_order
from core.methods.dccfl import DCCFL

CLASSES = ["a", "b"]


def test_wilson_interval_known_values():
    lo, hi = wilson(0.0, 10)
    assert lo == 0.0 and hi == pytest.approx(3.8415 / 13.8415, abs=1e-4)
    lo, hi = wilson(0.9, 40)
    assert lo == pytest.approx(0.7694, abs=1e-3) and hi == pytest.approx(0.9604, abs=1e-3)
    assert estimate(0.9, 20)["weak"] and not estimate(0.9, 400)["weak"]


def test_cv_splits_test_every_row_once_per_repeat():
    splits = cv_splits([7, 23], folds=5, repeats=2, holdout=0.2, seed=3)
    assert len(splits) == 10
    for r in range(2):
        for site, n in enumerate((7, 23)):
            tested = np.concatenate([splits[5 * r + f][1][site] for f in range(5)])
            assert sorted(tested.tolist()) == list(range(n))
            for f in range(5):
                tr, te = splits[5 * r + f][0][site], splits[5 * r + f][1][site]
                assert not set(tr) & set(te) and len(tr) + len(te) == n


def _site_private(ex, X, y) -> dict:
    """A site's kept state as ``participant export`` keeps it: the method's private arrays, its own-rows model and
    that model's out-of-fold probabilities (the site's half of the paired comparison)."""
    from core.learn.local_model import fit_local_model
    from core.learn.own_cv import own_oof_arrays, own_out_of_fold

    return {**ex.private_arrays, **fit_local_model(X, y, len(CLASSES)),
            **own_oof_arrays(own_out_of_fold(X, y, len(CLASSES)))}


def _bundles(flip_last: bool, n=80, sites=5, seed=0):
    rng = np.random.default_rng(seed)
    anchor = rng.normal(size=(300, 4)) * 1.5
    method = DCCFL()
    out, private, tests = [], [], []
    for i in range(sites):
        flip = flip_last and i == sites - 1

        def draw(k, flip=flip):
            y = rng.integers(0, 2, k)
            X = rng.normal(size=(k, 4)) + 1.5 * np.outer(2 * y - 1, [1, 1, 0, 0])
            return X, (1 - y if flip else y)
        X, y = draw(n)
        ex = method.site_compute(SiteInput(X, y.astype(np.int64), CLASSES, anchor, settings={"seed": [seed, i]}))
        out.append(ReceivedBundle(f"s{i}", f"fp{i}", f"{i:02d}digest", "", {"kit_digest": "k"}, ex.arrays))
        private.append(_site_private(ex, X, y.astype(np.int64)))
        tests.append(draw(400))
    return out, private, tests


def test_a_site_the_cluster_would_hurt_keeps_its_own_model():
    """The last site's labels mean the opposite (its label histogram is the same, so it shares the cluster): on its
    own rows, paired with the shared model's out-of-fold predictions the package carries, it keeps its own model,
    and every site is right on > 80 % of new rows."""
    from core.methods.promise import promised_columns

    bundles, private, tests = _bundles(flip_last=True)
    m = DCCFL(epochs=15, hidden=[16])
    res = m.fit(bundles, FitContext(CLASSES))
    for (manifest, arrays), priv, (X, y), b in zip(res.packages, private, tests, bundles, strict=True):
        assert manifest["update"]["by"] == "site" and arrays["shared_oof"].shape[1] == 2
        cols, choice = promised_columns(m, manifest, priv, X, lambda r, mf=manifest, a=arrays, p=priv:
                                        m.apply(mf, a, p, r), arrays=arrays)
        assert choice["by"] == "site" and choice["paired_on"] == "all"
        if b.site == "s4":
            assert choice["kind"] == "own", choice["reason"]
        assert np.mean(cols["prediction"] == np.asarray(CLASSES)[y]) > 0.8, b.site
    last = next(x for x in res.summary["sites"] if x["site"] == "s4")
    assert last["update"]["estimate"] == "own"  # the analyst's estimate, with the site's twin, agrees


def test_same_packages_from_any_bundle_order():
    bundles, _, _ = _bundles(flip_last=False, sites=4, n=40)
    m = DCCFL(epochs=5, hidden=[8])
    a = m.fit(bundles, FitContext(CLASSES))
    perm = [2, 0, 3, 1]
    b = m.fit([bundles[k] for k in perm], FitContext(CLASSES))
    by_content = sorted(range(4), key=lambda i: content_digest(bundles[i].arrays))
    assert site_order(bundles) == by_content and derived_seed(0, bundles) == derived_seed(0, bundles[::-1])
    # the same content sealed again (another file digest, as with fresh keys and nonces) seeds the same analysis
    resealed = [replace(x, digest=f"resealed-{k}") for k, x in enumerate(bundles)]
    assert derived_seed(0, resealed) == derived_seed(0, bundles) and site_order(resealed) == by_content
    assert a.summary == b.summary
    for j, k in enumerate(perm):
        (ma, xa), (mb, xb) = a.packages[k], b.packages[j]
        assert ma == mb and all(np.array_equal(xa[n], xb[n]) for n in xa)


def test_batched_mlp_epoch_row_cap():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    groups = [(X, y), (X[:50], y[:50])]
    free = BatchedMLP((8,), epochs=3, random_state=1).fit(groups, 2)
    loose = BatchedMLP((8,), epochs=3, random_state=1, max_epoch_rows=300).fit(groups, 2)
    for p, q in zip(free.models_, loose.models_, strict=True):  # a cap no group exceeds changes nothing
        assert all(np.array_equal(u, v) for u, v in zip(p.weights, q.weights, strict=True))
    capped = BatchedMLP((8,), epochs=3, random_state=1, max_epoch_rows=64).fit(groups, 2)
    assert np.all(np.isfinite(capped.loss_curve_))
    # the small group (50 rows) is untouched by a cap of 64; the big one sees 64 rows (2 steps) per epoch
    assert all(np.array_equal(u, v) for u, v in zip(free.models_[1].weights, capped.models_[1].weights, strict=True))
    assert not np.array_equal(free.models_[0].weights[0], capped.models_[0].weights[0])


def test_small_sites_cell_on_synthetic_data():
    from sklearn.datasets import make_classification

    from benchmarks.small_sites import make_sites, run_cell, summarise

    X, y = make_classification(n_samples=3000, n_features=8, n_informative=5, n_classes=4, random_state=0)
    anchor, sites = make_sites(X, y, 0)
    assert anchor.shape[0] >= 1000 and anchor.shape[1] == X.shape[1] and len(sites) >= 3
    assert all(len(s[1]) <= 500 and len(set(s[1])) <= 3 for s in sites)
    cell = run_cell("synthetic", X, y, ["0", "1", "2", "3"], 0, settings={"epochs": 5, "hidden": [8]})
    summary = summarise([cell])
    assert summary["sites"] == len(cell["sites"]) and np.isfinite(summary["mean_diff_pt"])
    assert all(s["sent"] in ("own", "cluster") for s in cell["sites"])


def test_mcnemar_exact_known_values():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(10, 2) == pytest.approx(0.0385742, abs=1e-6)          # 2·P(B ≤ 2), B ~ Bin(12, ½)
    assert mcnemar_p(10, 2, one_sided=True) == pytest.approx(0.0192871, abs=1e-6)
    assert mcnemar_p(2, 10, one_sided=True) == pytest.approx(0.9968262, abs=1e-6)
    assert mcnemar_p(700, 600) == pytest.approx(0.006016, rel=1e-3)       # big counts stay exact


def test_clearly_better_is_a_one_sided_mcnemar_test_per_repetition():
    n = 40
    a, b = np.zeros(n, bool), np.zeros(n, bool)
    a[:6] = True                      # 6 rows only the first gets right, 0 only the second: p = 1/64
    assert clearly_better(a, b, 1) and not clearly_better(b, a, 1)
    c, d = np.zeros(n, bool), np.zeros(n, bool)
    c[:3] = True                      # 3 vs 0: p = 1/8, not clear
    assert not clearly_better(c, d, 1)
    # a row tested in r repetitions counts once
    assert clearly_better(np.tile(a, 3), np.tile(b, 3), 3)
    assert not clearly_better(np.tile(c, 3), np.tile(d, 3), 3)


def test_an_old_workspace_follows_the_analysts_guess():
    """A site whose export predates the paired comparison (no own out-of-fold probabilities kept) follows the
    analyst's guess: a site with < 30 rows whose cluster is not clearly better is told to keep its own model, and
    applying the package then gives exactly the predictions of its own-rows model; with the paired data it
    decides itself."""
    from core.learn.local_model import local_predict_proba
    from core.methods.promise import promised_columns

    rng = np.random.default_rng(3)
    anchor = rng.normal(size=(300, 4)) * 1.5
    method = DCCFL(epochs=5, hidden=[8], metric="accuracy")  # the analyst's small-site rule (McNemar) on accuracy
    bundles, private = [], []
    for i, n in enumerate((20, 120, 120, 120)):
        y = rng.integers(0, 2, n)
        X = rng.normal(size=(n, 4)) + 1.5 * np.outer(2 * y - 1, [1, 1, 0, 0])
        ex = method.site_compute(SiteInput(X, y.astype(np.int64), CLASSES, anchor, settings={"seed": [3, i]}))
        bundles.append(ReceivedBundle(f"s{i}", f"fp{i}", f"{i:02d}digest", "", {"kit_digest": "k"}, ex.arrays))
        private.append(_site_private(ex, X, y.astype(np.int64)))
    res = method.fit(bundles, FitContext(CLASSES))
    tiny = next(x for x in res.summary["sites"] if x["site"] == "s0")
    assert tiny["model"] == "own" and tiny["own_kind"] == "linear"
    manifest, arrays = res.packages[0]
    X_new = rng.normal(size=(50, 4))
    old = {k: v for k, v in private[0].items() if not k.startswith("own_oof")}

    def apply(r, p):
        return method.apply(manifest, arrays, p, r)
    got, choice = promised_columns(method, manifest, old, X_new, lambda r: apply(r, old), arrays=arrays)
    own = local_predict_proba(private[0], X_new)
    assert choice["by"] == "analyst" and choice["model"] == "own"
    assert np.allclose(got[f"prob_{CLASSES[1]}"], own[:, 1])
    _, mine = promised_columns(method, manifest, private[0], X_new, lambda r: apply(r, private[0]), arrays=arrays)
    assert mine["by"] == "site" and mine["rows"] == 20
    # the package's arrays are the shared model's, whatever the analyst guessed
    sent = apply(X_new, private[0])[f"prob_{CLASSES[1]}"]
    assert not np.allclose(sent, own[:, 1])
