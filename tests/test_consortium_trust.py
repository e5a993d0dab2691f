"""Issue #15 at the method level: honest intervals, never worse than alone, the same result from any order."""

from __future__ import annotations

import numpy as np
import pytest

from core.learn.intervals import estimate, wilson
from core.learn.mlp import BatchedMLP
from core.methods.base import FitContext, ReceivedBundle, SiteInput
from core.methods.dccfl import DCCFL, cv_splits, derived_seed, site_order

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
        private.append(ex.private_arrays)
        tests.append(draw(400))
    return out, private, tests


def test_a_site_the_cluster_would_hurt_gets_its_own_model():
    # the last site's labels mean the opposite; its label histogram is the same, so it shares the cluster
    bundles, private, tests = _bundles(flip_last=True)
    m = DCCFL(epochs=15, hidden=[16])
    res = m.fit(bundles, FitContext(CLASSES))
    last = next(x for x in res.summary["sites"] if x["site"] == "s4")
    assert last["model"] == "own" and last["expected"]["accuracy"] >= last["cluster_model"]["accuracy"]
    for (manifest, arrays), priv, (X, y), b in zip(res.packages, private, tests, bundles, strict=True):
        acc = np.mean(m.apply(manifest, arrays, priv, X)["prediction"] == np.asarray(CLASSES)[y])
        assert acc > 0.8, b.site
    # by construction, every site is sent a model that cross-validates at least as well as its own
    for x in res.summary["sites"]:
        assert x["expected"]["accuracy"] >= x["own_model"]["accuracy"] - 1e-12
        assert x["expected"]["rows"] == x["rows"] and x["expected"]["low"] <= x["expected"]["high"]


def test_same_packages_from_any_bundle_order():
    bundles, _, _ = _bundles(flip_last=False, sites=4, n=40)
    m = DCCFL(epochs=5, hidden=[8])
    a = m.fit(bundles, FitContext(CLASSES))
    perm = [2, 0, 3, 1]
    b = m.fit([bundles[k] for k in perm], FitContext(CLASSES))
    assert site_order(bundles) == [0, 1, 2, 3] and derived_seed(0, bundles) == derived_seed(0, bundles[::-1])
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

    from core.bench.small_sites import make_sites, run_cell, summarise

    X, y = make_classification(n_samples=3000, n_features=8, n_informative=5, n_classes=4, random_state=0)
    anchor, sites = make_sites(X, y, 0)
    assert anchor.shape[0] >= 1000 and anchor.shape[1] == X.shape[1] and len(sites) >= 3
    assert all(len(s[1]) <= 500 and len(set(s[1])) <= 3 for s in sites)
    cell = run_cell("synthetic", X, y, ["0", "1", "2", "3"], 0, settings={"epochs": 5, "hidden": [8]})
    summary = summarise([cell])
    assert summary["sites"] == len(cell["sites"]) and np.isfinite(summary["mean_diff_pt"])
    assert all(s["sent"] in ("own", "cluster") for s in cell["sites"])
