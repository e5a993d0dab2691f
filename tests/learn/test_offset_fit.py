"""Intercepts (and one slope) on fixed offsets for many problems at once (issue #36, core/learn/offset_fit.py), and
the site update's batched fits over row sets (core/learn/site_update.py, :func:`fit_kind_sets`).

The claims tested: the answer maximises the module docstring's penalised, weighted multinomial log-likelihood
(checked against scipy.optimize on the same objective); the returned log-likelihood is that objective's data term at
the answer; weights of 0/1 are the same as fitting the subset alone; a batch gives every problem its own answer; and
:func:`fit_kind_sets` on row sets equals :func:`fit_kind` on each set's rows alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from core.learn.offset_fit import RIDGE, fit_offsets_batch
from core.learn.site_update import fit_kind, fit_kind_sets, log_proba


def _problem(rng, n, K, G=1, slope=False, strength=1.0):
    """G problems sharing labels y: offsets B (G, n, K) that carry some signal about y, a wrong base rate, and a
    slope covariate L (the offsets' own log-probabilities, as the site's recalibration uses)."""
    y = rng.choice(K, n, p=rng.dirichlet(np.ones(K) * 3))
    B = strength * rng.normal(size=(G, n, K)) + rng.normal(size=(G, 1, K))
    B[:, np.arange(n), y] += rng.uniform(0.2, 2.0, size=(G, 1))
    L = log_softmax(B, axis=2) if slope else None
    return B, y, L


def _objective(theta, B, y, L, w, ridge=RIDGE):
    """−f of the module docstring for one problem and its gradient: z = B + a + (β − 1)L, a₀ = 0."""
    n, K = B.shape
    a = np.concatenate([[0.0], theta[:K - 1]])
    t = theta[K - 1] if L is not None else 0.0
    Z = B + a + (t * L if L is not None else 0.0)
    lp = log_softmax(Z, axis=1)
    f = -(w * lp[np.arange(n), y]).sum() + ridge * (theta @ theta)
    R = np.eye(K)[y] - np.exp(lp)                     # ∂ log p_y / ∂ z
    g = np.empty_like(theta)
    g[:K - 1] = -(w[:, None] * R).sum(axis=0)[1:]
    if L is not None:
        g[K - 1] = -(w * (R * L).sum(axis=1)).sum()
    return f, g + 2 * ridge * theta


def _scipy_fit(B, y, L, w):
    K = B.shape[1]
    q = K - 1 + (L is not None)
    res = minimize(_objective, np.zeros(q), args=(B, y, L, w), jac=True, method="BFGS",
                   options={"gtol": 1e-11, "maxiter": 2000})
    grad = _objective(res.x, B, y, L, w)[1]
    assert np.abs(grad).max() < 1e-6, res            # scipy's answer is a stationary point (|H| ~ n: θ to ~1e-8)
    return res.x


def _theta(a, b, slope):
    return np.concatenate([a[1:], [b - 1.0]]) if slope else a[1:].copy()


def _loglik(B, y, L, w, a, b):
    Z = B + a + ((b - 1.0) * L if L is not None else 0.0)
    return float((w * log_softmax(Z, axis=1)[np.arange(len(y)), y]).sum())


@pytest.mark.parametrize(("K", "slope", "weighted"), [(2, False, False), (3, False, True), (5, False, False),
                                                      (2, True, False), (3, True, True), (4, True, False)])
def test_the_answer_minimises_the_documented_objective(K, slope, weighted):
    rng = np.random.default_rng(K + 10 * slope + 100 * weighted)
    G, n = 4, 150
    B, y, L = _problem(rng, n, K, G, slope)
    w = (rng.random((G, n)) < 0.7).astype(np.float64) if weighted else None
    a, b, ll = fit_offsets_batch(B, y, L, w)
    assert a.shape == (G, K) and b.shape == (G,) and ll.shape == (G,)
    assert np.all(a[:, 0] == 0.0)                     # the first class is the reference
    if not slope:
        assert np.all(b == 1.0)
    for g in range(G):
        wg = np.ones(n) if w is None else w[g]
        Lg = None if L is None else L[g]
        want = _scipy_fit(B[g], y, Lg, wg)
        np.testing.assert_allclose(_theta(a[g], b[g], slope), want, rtol=0, atol=1e-6)
        # the log-likelihood returned is the data term (no penalty) at the answer
        np.testing.assert_allclose(ll[g], _loglik(B[g], y, Lg, wg, a[g], b[g]), rtol=1e-12, atol=1e-10)


def test_a_known_base_rate_shift_is_recovered():
    """Offsets that are the truth's log-odds shifted by δ: the intercept fit removes δ (many rows)."""
    rng = np.random.default_rng(5)
    n, K = 20000, 3
    eta = rng.normal(size=(n, K))
    y = np.array([rng.choice(K, p=p) for p in softmax(eta, axis=1)])
    delta = np.array([0.0, 0.8, -0.5])
    a, _, _ = fit_offsets_batch((eta + delta)[None], y)
    np.testing.assert_allclose(a[0], -delta, atol=0.06)


def test_a_class_absent_from_the_rows_stays_finite_and_optimal():
    rng = np.random.default_rng(6)
    n, K = 120, 4
    B, y, _ = _problem(rng, n, K)
    y = np.where(y == 2, 0, y)                        # class 2 never occurs
    a, _, _ = fit_offsets_batch(B, y)
    assert np.all(np.isfinite(a)) and a[0, 2] < a[0, [1, 3]].min()
    want = _scipy_fit(B[0], y, None, np.ones(n))
    f_got = _objective(_theta(a[0], 1.0, False), B[0], y, None, np.ones(n))[0]
    f_want = _objective(want, B[0], y, None, np.ones(n))[0]
    assert f_got <= f_want + 1e-8                     # as good as scipy's optimum on the flat direction


@pytest.mark.parametrize("slope", [False, True])
def test_row_weights_equal_fitting_the_subset_alone(slope):
    rng = np.random.default_rng(7 + slope)
    G, n, K = 5, 200, 3
    B, y, L = _problem(rng, n, K, 1, slope)
    w = (rng.random((G, n)) < rng.uniform(0.2, 0.9, size=(G, 1))).astype(np.float64)
    rep = np.broadcast_to(B, (G, n, K))
    Lrep = None if L is None else np.broadcast_to(L, (G, n, K))
    a, b, ll = fit_offsets_batch(rep, y, Lrep, w)
    for g in range(G):
        keep = w[g] > 0
        a1, b1, ll1 = fit_offsets_batch(B[:, keep], y[keep], None if L is None else L[:, keep])
        np.testing.assert_allclose(a[g], a1[0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(b[g], b1[0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(ll[g], ll1[0], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("slope", [False, True])
def test_a_batch_gives_every_problem_its_own_answer(slope):
    """Problems of very different difficulty (from almost no signal to nearly separable, so they stop after
    different numbers of Newton steps) in one batch, against each alone."""
    rng = np.random.default_rng(9 + slope)
    G, n, K = 8, 160, 3
    B, y, L = _problem(rng, n, K, G, slope)
    B *= np.geomspace(0.05, 8.0, G)[:, None, None]
    if L is not None:
        L = log_softmax(B, axis=2)
    w = (rng.random((G, n)) < 0.8).astype(np.float64)
    a, b, ll = fit_offsets_batch(B, y, L, w)
    for g in range(G):
        a1, b1, ll1 = fit_offsets_batch(B[g:g + 1], y, None if L is None else L[g:g + 1], w[g:g + 1])
        np.testing.assert_allclose(a[g], a1[0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(b[g], b1[0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(ll[g], ll1[0], rtol=1e-12, atol=1e-9)


def test_iters_and_ridge_are_the_documented_ones():
    """One Newton step from θ = 0 is H⁻¹∇f of the docstring (the first step is accepted on this easy problem),
    and a larger ridge pulls the answer to 0."""
    rng = np.random.default_rng(11)
    n, K = 300, 3
    B, y, _ = _problem(rng, n, K)
    a1, _, _ = fit_offsets_batch(B, y, iters=1)
    P = softmax(B[0], axis=1)
    grad = (np.eye(K)[y] - P).sum(axis=0)[1:]
    H = np.diag(P.sum(axis=0)[1:]) - P[:, 1:].T @ P[:, 1:] + 2 * RIDGE * np.eye(K - 1)
    np.testing.assert_allclose(a1[0, 1:], np.linalg.solve(H, grad), rtol=1e-10, atol=1e-12)
    a_big, _, _ = fit_offsets_batch(B, y, ridge=1e3)
    a_small, _, _ = fit_offsets_batch(B, y)
    assert np.abs(a_big).max() < 0.05 * np.abs(a_small).max()
    want = _scipy_fit_ridge(B[0], y, 1e3)
    np.testing.assert_allclose(a_big[0, 1:], want, rtol=0, atol=1e-8)


def _scipy_fit_ridge(B, y, ridge):
    res = minimize(_objective, np.zeros(B.shape[1] - 1), args=(B, y, None, np.ones(len(y)), ridge), jac=True,
                   method="BFGS", options={"gtol": 1e-12})
    return res.x


# ----------------------------------------------------------------------------- site_update.fit_kind_sets
def _paired(rng, n, K, flip=False):
    y = rng.choice(K, n)
    eta = rng.normal(size=(n, K))
    eta[np.arange(n), y] += 1.2
    own = softmax(eta + rng.normal(size=(n, K)), axis=1)
    sh = softmax((-1.0 if flip else 1.0) * eta + 0.7 * rng.normal(size=(n, K)) + [0.0, 0.6, -0.4][:K], axis=1)
    return y, log_proba(own), log_proba(sh)


def _assert_params_equal(got, want, atol):
    assert set(got) == set(want)
    for k in got:
        np.testing.assert_allclose(np.asarray(got[k], float), np.asarray(want[k], float), rtol=0, atol=atol,
                                   err_msg=k)


@pytest.mark.parametrize("kind", ["own", "shared", "intercept", "recalibrated", "blend"])
@pytest.mark.parametrize("K", [2, 3])
def test_fit_kind_sets_equals_fit_kind_on_each_sets_rows(kind, K):
    rng = np.random.default_rng(20 + K)
    n, F = 150, 6
    y, L_own, L_sh = _paired(rng, n, K)
    weight = (rng.random((F, n)) < rng.uniform(0.3, 0.9, size=(F, 1))).astype(np.float64)
    got = fit_kind_sets(kind, L_own, L_sh, y, weight)
    assert len(got) == F
    for f in range(F):
        keep = weight[f] > 0
        _assert_params_equal(got[f], fit_kind(kind, L_own[keep], L_sh[keep], y[keep]), atol=1e-8)


def test_fit_kind_sets_recalibration_flips_per_set_as_alone():
    """A shared model that ranks backwards on some row sets (slope < 0 there): those sets, and only those, get the
    intercepts-only fit with slope 0, exactly as each set fitted alone."""
    rng = np.random.default_rng(30)
    n, F, K = 160, 6, 3
    y, L_own, L_good = _paired(rng, n, K)
    _, _, L_bad = _paired(np.random.default_rng(30), n, K, flip=True)
    L_sh = L_good.copy()
    L_sh[n // 2:] = L_bad[n // 2:]                     # the second half of the rows ranked backwards
    weight = np.zeros((F, n))
    weight[:3, : n // 2] = 1.0                         # sets 0–2: good rows (with a few bad ones)
    weight[3:, n // 2:] = 1.0                          # sets 3–5: bad rows
    weight[:, rng.choice(n, 10, replace=False)] = 1.0
    got = fit_kind_sets("recalibrated", L_own, L_sh, y, weight)
    slopes = [p["slope"] for p in got]
    assert min(slopes[:3]) > 0 and max(slopes[3:]) == 0.0, slopes
    for f in range(F):
        keep = weight[f] > 0
        _assert_params_equal(got[f], fit_kind("recalibrated", L_own[keep], L_sh[keep], y[keep]), atol=1e-8)


def test_fit_kind_rejects_an_unknown_kind():
    rng = np.random.default_rng(31)
    y, L_own, L_sh = _paired(rng, 40, 2)
    with pytest.raises(ValueError, match="unknown update"):
        fit_kind_sets("nonsense", L_own, L_sh, y, np.ones((2, 40)))
