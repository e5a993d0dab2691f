"""The analyst at 10,000 sites (issue #36): the pieces rewritten for speed give what the plain versions give.

* :func:`core.learn.cluster_models.group_rows` — the seeded subsample of the concatenation, taken before aligning,
  equals aligning everything and then subsampling (array for array);
* :func:`core.learn.cluster_models.selection_cap` — the water-filling cap of the selection's rows;
* :func:`core.learn.intervals.mcnemar_p` — the one-sided exact p-value equals scipy's exact binomial test;
* :func:`core.learn.clinical_metrics.multiclass_metrics` — numpy counts equal scikit-learn's metrics exactly;
* :func:`core.learn.client_clustering.tv_distances` — block by block equals all pairs at once;
* :func:`core.learn.site_intercepts.fit_site_intercepts` — its loss and gradient are the docstring's objective,
  and its answer is a stationary point of it.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax
from scipy.stats import binomtest

from core.learn import site_intercepts as si_mod
from core.learn.client_clustering import tv_distances
from core.learn.clinical_metrics import multiclass_metrics
from core.learn.cluster_models import cv_splits, group_rows, selection_cap
from core.learn.intervals import mcnemar_p


# ------------------------------------------------------------------------------------------------ group_rows
@pytest.fixture(scope="module")
def aligned():
    from benchmarks.scale import make_bundles
    from core.api.research import DCCFL
    from core.learn.alignment import AnchorBasis

    bundles = make_bundles(10, 120, 6)
    basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=True)
    members = (1, 2, 4, 5, 7, 9)
    return bundles, members, basis.align(members, DCCFL().settings)


def _group_rows_reference(bundles, members, rows, mp, *, seed, g, site_rows=None, max_rows=None):
    """Align every member's selected rows, stack them, then subsample (the plain statement of the result)."""
    Xs, ys, pos = [], [], []
    for p, i in enumerate(members):
        sel = np.arange(bundles[i].arrays["y"].shape[0]) if rows is None else np.asarray(rows[i])
        if site_rows and len(sel) > site_rows:
            sel = np.sort(np.random.default_rng([seed, g, i, 5]).choice(sel, site_rows, replace=False))
        Xs.append(mp[i].transform(bundles[i].arrays["x_tilde"][sel].astype(np.float64)))
        ys.append(bundles[i].arrays["y"][sel].astype(np.int64))
        pos.append(np.full(len(sel), p, np.int64))
    Xh, y, position = np.vstack(Xs), np.concatenate(ys), np.concatenate(pos)
    total = len(y)
    if max_rows and total > max_rows:
        keep = np.sort(np.random.default_rng([seed, g, 7]).choice(total, max_rows, replace=False))
        Xh, y, position = Xh[keep], y[keep], position[keep]
    return Xh, y, position


CAPS = [{}, {"max_rows": 200}, {"site_rows": 50}, {"site_rows": 50, "max_rows": 180}, {"site_rows": 119},
        {"max_rows": 10**6}, {"max_rows": 1}, {"site_rows": 1, "max_rows": 4}]


def _restricted(n_sites, seed):
    """Training rows of varying size per site: some above every cap, one tiny, one empty, unsorted."""
    rng = np.random.default_rng(seed)
    sizes = [120, 80, 3, 0, 60, 110, 45, 120, 7, 90]
    return [rng.permutation(120)[:s] for s in sizes[:n_sites]]


@pytest.mark.parametrize("caps", CAPS)
@pytest.mark.parametrize("restrict", [False, True])
def test_group_rows_equals_aligning_everything_then_subsampling(aligned, caps, restrict):
    bundles, members, mp = aligned
    rows = _restricted(len(bundles), 3) if restrict else None
    for seed, g in ((0, 0), (3, 2)):
        got = group_rows(bundles, members, rows, mp, seed=seed, g=g, **caps)
        want = _group_rows_reference(bundles, members, rows, mp, seed=seed, g=g, **caps)
        assert len(got) == 3
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
        kept = np.bincount(got[2], minlength=len(members))
        if np.all((kept == 0) | (kept > 1)):  # bit for bit; a member keeping one row takes another BLAS routine
            assert np.array_equal(got[0], want[0])
        if caps.get("max_rows"):
            assert len(got[1]) <= caps["max_rows"]


@pytest.mark.parametrize("caps", CAPS)
@pytest.mark.parametrize("restrict", [False, True])
def test_group_rows_equals_the_reference_to_the_last_bit(aligned, caps, restrict):
    """The same rows, labels and positions, and X̂ within a few units of the last place (whether or not it is
    bit-identical, which the test above asks)."""
    bundles, members, mp = aligned
    rows = _restricted(len(bundles), 3) if restrict else None
    got = group_rows(bundles, members, rows, mp, seed=3, g=2, **caps)
    want = _group_rows_reference(bundles, members, rows, mp, seed=3, g=2, **caps)
    assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-15 * max(1.0, np.abs(want[0]).max()))


def test_group_rows_total_exactly_at_the_cap_is_not_subsampled(aligned):
    bundles, members, mp = aligned
    total = sum(bundles[i].arrays["y"].shape[0] for i in members)
    got = group_rows(bundles, members, None, mp, seed=1, g=1, max_rows=total)
    want = _group_rows_reference(bundles, members, None, mp, seed=1, g=1)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert np.array_equal(got[2], np.repeat(np.arange(len(members)), 120))


# ------------------------------------------------------------------------------------------------ selection_cap
def _group_sizes(splits, clusters, cap, site_cap):
    """Per split, each group's rows: its members' training folds, at most site_cap per member, at most cap."""
    out = []
    for tr, _ in splits:
        n = np.array([sum(min(len(tr[i]), site_cap) if site_cap else len(tr[i]) for i in c) for c in clusters])
        out.append(np.minimum(n, cap) if cap else n)
    return out


def _water_level(n, total):
    """The largest c ≥ 0 with Σ_g min(n_g, c) ≤ total, by search (n's sum exceeds total)."""
    c = 0
    while np.minimum(n, c + 1).sum() <= total:
        c += 1
    return c


def _settings(cap, site_cap, total):
    return {"selection_max_rows": cap, "selection_site_rows": site_cap, "selection_total_rows": total}


def _fold(site_rows):
    """A stand-in Selection with one split: training rows of the given sizes (and empty test folds)."""
    return SimpleNamespace(splits=[([np.arange(k) for k in site_rows], [np.arange(0) for _ in site_rows])])


def test_selection_cap_is_the_plain_cap_when_the_rows_fit():
    sel = _fold([100, 200, 50, 400])
    clusters = [(0, 1), (2,), (3,)]
    # rows per group: min(300, 250) = 250, 50, min(250, 250) = 250 (site cap 250, cap 250) → 550
    assert selection_cap(sel, clusters, _settings(250, 250, 550)) == 250
    assert selection_cap(sel, clusters, _settings(250, 250, 10**6)) == 250
    assert selection_cap(sel, clusters, _settings(250, 250, None)) == 250      # no total: the plain cap
    assert selection_cap(sel, clusters, _settings(250, 250, 0)) == 250         # 0 is "no cap" (opt_int)
    assert selection_cap(sel, clusters, _settings(None, None, None)) is None
    assert selection_cap(SimpleNamespace(splits=[]), clusters, _settings(250, 250, 10)) == 250


def test_selection_cap_water_fills_a_hand_worked_case():
    sel = _fold([100, 200, 50, 400])
    clusters = [(0, 1), (2,), (3,)]
    # group rows with site cap 250, cap 1000: 300, 50, 250 = 600 > 500 → 50 + 2c ≤ 500 → c = 225
    assert selection_cap(sel, clusters, _settings(1000, 250, 500)) == 225
    # 551: 50 + 2·250 = 550 ≤ 551 and 50 + 250 + 251 = 551 ≤ 551 → c = 251 (the biggest group alone lowered)
    assert selection_cap(sel, clusters, _settings(1000, 250, 551)) == 251
    # without a site cap: 300, 50, 400 → 50 + 2c ≤ 500 → 225; Σ min(n, 226) = 502 > 500
    assert selection_cap(sel, clusters, _settings(1000, None, 500)) == 225
    # without any cap
    assert selection_cap(sel, clusters, _settings(None, None, 500)) == 225


def test_selection_cap_is_the_largest_water_level_on_every_small_case():
    """Every single-split case of three groups of 0 … 8 rows and totals 1 … 20 (no other caps)."""
    wrong = []
    for a in range(9):
        for b in range(9):
            for c in range(9):
                sel = _fold([a, b, c])
                n = np.array([a, b, c])
                for total in range(1, 21):
                    got = selection_cap(sel, [(0,), (1,), (2,)], _settings(None, None, total))
                    want = None if n.sum() <= total else max(1, _water_level(n, total))
                    if got != want:
                        wrong.append(((a, b, c), total, got, want))
    assert not wrong, f"{len(wrong)} cases, e.g. (sizes, total, got, want) {wrong[:5]}"


def test_selection_cap_never_below_one_row():
    sel = _fold([10] * 6)
    clusters = [(i,) for i in range(6)]
    assert selection_cap(sel, clusters, _settings(100, None, 5)) == 1
    assert selection_cap(sel, clusters, _settings(100, None, 6)) == 1
    assert selection_cap(sel, clusters, _settings(100, None, 12)) == 2


def test_selection_cap_equals_the_water_level_on_random_single_splits():
    rng = np.random.default_rng(0)
    for _ in range(300):
        S = int(rng.integers(1, 25))
        sizes = rng.integers(0, 300, size=S)
        perm = rng.permutation(S)
        k = int(rng.integers(1, S + 1))
        cuts = np.sort(rng.choice(np.arange(1, S), k - 1, replace=False)) if k > 1 else []
        clusters = [tuple(int(i) for i in c) for c in np.split(perm, cuts)]
        cap = [None, int(rng.integers(1, 2000))][int(rng.integers(2))]
        site_cap = [None, int(rng.integers(1, 300))][int(rng.integers(2))]
        total = int(rng.integers(1, 3000))
        sel = _fold(sizes)
        (n,) = _group_sizes(sel.splits, clusters, cap, site_cap)
        got = selection_cap(sel, clusters, _settings(cap, site_cap, total))
        if n.sum() <= total:
            assert got == cap
            continue
        c = _water_level(n, total)
        assert got == max(1, c), (n, total, got, c)
        assert cap is None or got <= cap
        if got > 1:
            assert np.minimum(n, got).sum() <= total < np.minimum(n, got + 1).sum()


def test_selection_cap_bounds_every_split_of_a_cross_validation():
    """Several repeats and folds (the selection's real splits): with the cap, no split's models train on more
    than the total rows, and one more row of cap would exceed it on the split with the most rows."""
    rng = np.random.default_rng(1)
    for t in range(150):
        S = int(rng.integers(2, 30))
        n_rows = [int(v) for v in rng.integers(2, 250, size=S)]
        splits = cv_splits(n_rows, int(rng.integers(2, 6)), int(rng.integers(1, 4)), 0.2, t)
        perm = rng.permutation(S)
        k = int(rng.integers(1, S))
        cuts = np.sort(rng.choice(np.arange(1, S), k - 1, replace=False)) if k > 1 else []
        clusters = [tuple(int(i) for i in c) for c in np.split(perm, cuts)]
        cap, site_cap, total = int(rng.integers(20, 800)), int(rng.integers(5, 150)), int(rng.integers(10, 1500))
        sel = SimpleNamespace(splits=splits)
        got = selection_cap(sel, clusters, _settings(cap, site_cap, total))
        per_split = _group_sizes(splits, clusters, cap, site_cap)
        if max(int(n.sum()) for n in per_split) <= total:
            assert got == cap
            continue
        if got > 1:
            assert max(int(np.minimum(n, got).sum()) for n in per_split) <= total
            assert max(int(np.minimum(n, got + 1).sum()) for n in per_split) > total


# ------------------------------------------------------------------------------------------------ mcnemar_p
GRID = [(b, c) for b in range(0, 31) for c in range(0, 31)] + [
    (0, 500), (500, 0), (260, 240), (240, 260), (5000, 4800), (4800, 5000), (12000, 11000), (1, 10**5),
    (10**5, 1), (50_000, 49_700)]


def test_mcnemar_one_sided_equals_scipys_exact_test():
    for b, c in GRID:
        got = mcnemar_p(b, c, one_sided=True)
        want = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="greater").pvalue
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300), (b, c, got, want)
        assert 0.0 <= got <= 1.0


def test_mcnemar_edge_values():
    assert mcnemar_p(0, 0, one_sided=True) == 1.0 and mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(0, 17, one_sided=True) == 1.0                 # P(B ≥ 0) = 1
    for b in (1, 5, 30):
        assert math.isclose(mcnemar_p(b, 0, one_sided=True), 0.5 ** b, rel_tol=1e-13)   # P(B = b) = ½^b
    assert mcnemar_p(3, 5, one_sided=True) == mcnemar_p(np.int64(3), np.int64(5), one_sided=True)


def test_mcnemar_two_sided_is_scipys_two_sided_test():
    for b, c in [(b, c) for b, c in GRID if max(b, c) <= 12 or b + c > 100]:
        want = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
        assert mcnemar_p(b, c) == want
        assert mcnemar_p(b, c, one_sided=False) == want


# ------------------------------------------------------------------------------------------- multiclass_metrics
def _sklearn_metrics(y, pred, K):
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        confusion_matrix,
        precision_score,
        recall_score,
    )

    labels = list(range(K))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"recall": recall_score(y, pred, labels=labels, average=None, zero_division=np.nan),
                "precision": precision_score(y, pred, labels=labels, average=None, zero_division=np.nan),
                "balanced_accuracy": balanced_accuracy_score(y, pred),
                "accuracy": accuracy_score(y, pred),
                "confusion": confusion_matrix(y, pred, labels=labels).tolist()}


def _cases():
    rng = np.random.default_rng(1)
    for _ in range(80):
        K = int(rng.integers(3, 8))                   # multi-class (two classes go to binary_metrics)
        n = int(rng.integers(1, 60))
        present = rng.choice(K, int(rng.integers(1, K + 1)), replace=False)   # some classes absent from y
        y = rng.choice(present, n)
        P = rng.random((n, K)) ** 3
        P[:, rng.choice(K, int(rng.integers(0, K)), replace=False)] *= 0.01   # some classes never predicted
        yield y, P, K


def test_multiclass_metrics_equal_sklearns():
    checked_nan = checked_absent = 0
    for y, P, K in _cases():
        m = multiclass_metrics(y, P, [f"c{k}" for k in range(K)])
        pred = P.argmax(axis=1)
        want = _sklearn_metrics(y, pred, K)
        recall = np.array([c["recall"] for c in m["per_class"]])
        precision = np.array([c["precision"] for c in m["per_class"]])
        assert np.array_equal(recall, want["recall"], equal_nan=True), (y, pred)
        assert np.array_equal(precision, want["precision"], equal_nan=True), (y, pred)
        assert m["balanced_accuracy"] == want["balanced_accuracy"]
        assert m["accuracy"] == want["accuracy"]
        assert m["confusion"] == want["confusion"]
        assert [c["support"] for c in m["per_class"]] == np.bincount(y, minlength=K).tolist()
        assert [c["class"] for c in m["per_class"]] == [f"c{k}" for k in range(K)]
        never = [f"c{k}" for k in range(K) if np.any(y == k) and not np.any(pred == k)]
        assert m["never_predicted"] == never
        assert m["rows"] == len(y)
        checked_nan += int(np.isnan(precision).any())
        checked_absent += int(np.isnan(recall).any())
    assert checked_nan > 10 and checked_absent > 10           # the undefined cases were exercised


def test_multiclass_metrics_types_and_the_empty_case():
    y = np.array([0, 1, 1, 2])
    P = np.eye(3)[[0, 1, 2, 2]]
    m = multiclass_metrics(y, P, ["a", "b", "c"])
    assert type(m["accuracy"]) is float and type(m["balanced_accuracy"]) is float
    assert all(type(c["recall"]) is float and type(c["support"]) is int for c in m["per_class"])
    assert all(type(v) is int for row in m["confusion"] for v in row)
    assert m["accuracy"] == 0.75 and m["balanced_accuracy"] == (1 + 0.5 + 1) / 3
    e = multiclass_metrics(np.zeros(0, np.int64), np.zeros((0, 3)), ["a", "b", "c"])
    assert e["rows"] == 0 and math.isnan(e["accuracy"]) and math.isnan(e["balanced_accuracy"])
    assert e["confusion"] == [[0] * 3] * 3 and e["never_predicted"] == []
    assert all(math.isnan(c["recall"]) and math.isnan(c["precision"]) for c in e["per_class"])


# ------------------------------------------------------------------------------------------------ tv_distances
@pytest.mark.parametrize("block", [1, 4, 23, 24, 100, 256])
def test_tv_distances_block_by_block_equal_all_pairs_at_once(block):
    rng = np.random.default_rng(block)
    P = rng.dirichlet(np.ones(5) * 0.7, size=23)
    want = 0.5 * np.abs(P[:, None, :] - P[None, :, :]).sum(axis=2)
    got = tv_distances(P, block=block)
    assert got.shape == (23, 23)
    assert np.array_equal(got, want)
    assert np.array_equal(got, got.T) and np.all(np.diag(got) == 0)


def test_tv_distances_default_block_and_list_input():
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(4), size=300)            # more rows than the default block of 256
    want = 0.5 * np.abs(P[:, None, :] - P[None, :, :]).sum(axis=2)
    assert np.array_equal(tv_distances(P), want)
    assert np.array_equal(tv_distances(P.tolist(), block=7), want)
    assert tv_distances(np.array([[1.0, 0.0], [0.0, 1.0]]))[0, 1] == 1.0


# ------------------------------------------------------------------------------------------- fit_site_intercepts
def _si_objective(theta, Z, y, site, S, K):
    """The module docstring's objective and its gradient: Σ −log softmax(zW + c_s)_y + (λ/2)‖W‖² + (λ_c/2)‖c‖²,
    λ = 1 (2 with two classes), λ_c = 10⁻³."""
    n, d = Z.shape
    lam = 2.0 if K == 2 else 1.0
    lam_c = 1e-3
    W, C = theta[: d * K].reshape(d, K), theta[d * K:].reshape(S, K)
    lp = log_softmax(Z @ W + C[site], axis=1)
    f = -lp[np.arange(n), y].sum() + 0.5 * lam * (W * W).sum() + 0.5 * lam_c * (C * C).sum()
    G = np.exp(lp) - np.eye(K)[y]
    gC = np.zeros((S, K))
    np.add.at(gC, site, G)
    return f, np.concatenate([(Z.T @ G + lam * W).ravel(), (gC + lam_c * C).ravel()])


def _si_problem(seed, K, S=5, n=300, d=4):
    rng = np.random.default_rng(seed)
    site = rng.integers(0, S - 1, size=n)              # the last site has no rows
    rates = rng.dirichlet(np.ones(K) * 0.6, size=S)
    y = np.array([rng.choice(K, p=rates[s]) for s in site])
    y[site == 0] = np.where(y[site == 0] == K - 1, 0, y[site == 0])   # site 0 never saw the last class
    Z = rng.normal(size=(n, d))
    Z[:, 0] += 0.8 * y
    return Z, y, site, S


@pytest.mark.parametrize("K", [2, 3, 4])
def test_site_intercepts_loss_is_the_documented_objective_with_its_gradient(K, monkeypatch):
    """The loss the fit minimises (caught on its way to L-BFGS): its value is the docstring's objective and its
    gradient equals central finite differences, at random points."""
    Z, y, site, S = _si_problem(K, K)
    seen = []
    real = si_mod.lbfgs

    def spy(fun, x, *args, **kw):
        seen.append((fun, x.copy()))
        return real(fun, x, *args, **kw)

    monkeypatch.setattr(si_mod, "lbfgs", spy)
    si_mod.fit_site_intercepts(Z, y, site, S, K)
    (fun, x0), = seen
    rng = np.random.default_rng(K)
    for theta in (x0, rng.normal(size=x0.shape), 3 * rng.normal(size=x0.shape)):
        f, g = fun(theta.copy())
        f_ref, g_ref = _si_objective(theta, Z, y, site, S, K)
        assert math.isclose(f, f_ref, rel_tol=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10)
        h = 1e-6
        fd = np.array([(fun(theta + h * e)[0] - fun(theta - h * e)[0]) / (2 * h) for e in np.eye(len(theta))])
        np.testing.assert_allclose(g, fd, rtol=0, atol=1e-4 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("K", [2, 3, 4])
def test_site_intercepts_answer_is_a_stationary_point_of_the_documented_objective(K):
    Z, y, site, S = _si_problem(10 + K, K)
    d = Z.shape[1]
    W, C = si_mod.fit_site_intercepts(Z, y, site, S, K)
    assert W.shape == (d, K) and C.shape == (S, K)
    theta = np.concatenate([W.ravel(), C.ravel()])
    f, g = _si_objective(theta, Z, y, site, S, K)
    assert np.abs(g).max() <= 1e-4 * max(1.0, abs(f))
    # a site without rows keeps intercepts 0 (only λ_c acts on them)
    assert np.allclose(C[S - 1], 0.0, atol=1e-8)
    # and it is as low as scipy gets on the same objective
    res = minimize(_si_objective, np.zeros_like(theta), args=(Z, y, site, S, K), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15})
    assert f <= res.fun + 1e-3 * max(1.0, abs(res.fun)) * 1e-3
    # the site-specific intercepts do their job: each site's predicted class rates track its own rates
    P = np.exp(log_softmax(Z @ W + C[site], axis=1))
    for s in range(S - 1):
        rows = site == s
        np.testing.assert_allclose(P[rows].mean(axis=0), np.bincount(y[rows], minlength=K) / rows.sum(), atol=0.02)
