"""KIP distiller and the HFLDD pieces (core/methods/hfldd/kip.py): small synthetic data, a few seconds each."""

from __future__ import annotations

import numpy as np
import pytest

from core.control import JobControl
from core.errors import Cancelled, ConfigError
from core.methods.hfldd.kip import (
    KIPDistiller,
    KIPSettings,
    anchor_whitening,
    distill_sites,
    kernel_herding,
    kl_clusters,
    kl_matrix,
    krr_predict,
    nn_disclosure,
    ntk_fc1,
)


def _gaussians(n=200, d=5, sep=3.0, seed=0, k=2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    centres *= sep / np.linalg.norm(centres[0] - centres[1])
    y = np.arange(n) % k
    return centres[y] + rng.normal(size=(n, d)), y


@pytest.mark.slow
def test_kip_reduces_its_own_loss():
    X, y = _gaussians(n=150, d=6, sep=2.0, k=3, seed=1)
    kd = KIPDistiller(rows_per_class=3, steps=80, lr=0.02, target_batch=64, patience=1000, random_state=0).fit(X, y)
    curve = kd.loss_curve_
    assert len(curve) == 80
    assert curve[-20:].mean() < 0.8 * curve[:5].mean()
    # the hold-out loss (early-stopping criterion) improves on the initial real rows too
    assert kd.val_curve_[:, 1].min() < kd.val_curve_[0, 1]


@pytest.mark.slow
def test_two_rows_per_class_classify_separated_gaussians_like_the_full_data():
    X, y = _gaussians(n=400, d=5, sep=6.0, seed=2)
    Xte, yte = _gaussians(n=400, d=5, sep=6.0, seed=2)  # same centres, fresh noise below
    rng = np.random.default_rng(9)
    centres = np.stack([X[y == c].mean(0) for c in (0, 1)])
    Xte = centres[yte] + rng.normal(size=Xte.shape)
    kd = KIPDistiller(rows_per_class=2, steps=100, random_state=0).fit(X, y)
    assert kd.X_distilled_.shape == (4, 5) and sorted(kd.y_distilled_.tolist()) == [0, 0, 1, 1]
    acc_small = np.mean(kd.krr_predict(Xte).argmax(1) == yte)
    Y = np.eye(2)[y] - 0.5
    mu, sd = X.mean(0), X.std()
    acc_full = np.mean(krr_predict((X - mu) / sd, Y, (Xte - mu) / sd).argmax(1) == yte)
    assert acc_full > 0.97
    assert acc_small >= acc_full - 0.01


@pytest.mark.slow
def test_seeded_runs_are_identical_and_seeds_differ():
    X, y = _gaussians(n=120, d=4, k=3, seed=3)
    a = KIPDistiller(rows_per_class=2, steps=30, random_state=5).fit(X, y)
    b = KIPDistiller(rows_per_class=2, steps=30, random_state=5).fit(X, y)
    c = KIPDistiller(rows_per_class=2, steps=30, random_state=6).fit(X, y)
    np.testing.assert_array_equal(a.X_distilled_, b.X_distilled_)
    np.testing.assert_array_equal(a.loss_curve_, b.loss_curve_)
    assert not np.allclose(a.X_distilled_, c.X_distilled_)


@pytest.mark.slow
def test_a_site_distilled_in_a_batch_equals_the_site_alone():
    sites = [_gaussians(n=n, d=4, k=k, seed=s) for n, k, s in ((80, 2, 0), (150, 3, 1), (60, 2, 2))]
    s = KIPSettings(rows_per_class=3, steps=40, n_classes=3, patience=2, random_state=1)
    together = distill_sites(sites, s)
    alone = distill_sites([sites[1]], s, site_ids=[1])[0]
    np.testing.assert_allclose(together[1].X, alone.X, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(together[1].y, alone.y)


def test_cancel_stops_distillation():
    X, y = _gaussians(n=100, d=4)
    control = JobControl(lambda f, t: control.cancel())
    with pytest.raises(Cancelled):
        KIPDistiller(rows_per_class=2, steps=500, eval_every=5).fit(X, y, control=control)


def test_initialisations_and_settings():
    X, y = _gaussians(n=100, d=4, k=2, seed=4)
    real = KIPDistiller(rows_per_class=3, steps=0, init="real").fit(X, y)
    # zero steps: the initial rows are real rows, each at distance 0 from the data
    assert nn_disclosure(real.X_distilled_, X)["copies"] == 6
    means = KIPDistiller(rows_per_class=3, steps=0, init="means", init_noise=0.0, holdout=0.0).fit(X, y)
    np.testing.assert_allclose(means.X_distilled_[means.y_distilled_ == 0][0], X[y == 0].mean(0), atol=1e-9)
    with pytest.raises(ConfigError):
        KIPDistiller(kernel="poly")
    with pytest.raises(ConfigError):
        distill_sites([(X, y)], KIPSettings(scale="anchor"))


def _mmd2(A, B, l2):
    def k(P, Q):
        return np.exp(-((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1) / (2 * l2))
    return k(A, A).mean() - 2 * k(A, B).mean() + k(B, B).mean()


def test_kernel_herding_picks_rows_closer_in_mmd_than_random_rows():
    rng = np.random.default_rng(3)
    Z = np.vstack([rng.normal(size=(150, 3)), rng.normal(size=(50, 3)) + 4.0])  # two modes, 3 : 1
    idx = kernel_herding(Z, 8)
    assert len(set(idx.tolist())) == 8 and (idx >= 150).sum() in (1, 2, 3)  # both modes, in about their shares
    random = [_mmd2(Z[rng.choice(200, 8, replace=False)], Z, 3.0) for _ in range(50)]
    assert _mmd2(Z[idx], Z, 3.0) < np.quantile(random, 0.1)
    start = KIPDistiller(rows_per_class=4, steps=0, init="herding", holdout=0.0).fit(*_gaussians(n=80, d=4, seed=2))
    assert nn_disclosure(start.X_distilled_, _gaussians(n=80, d=4, seed=2)[0])["copies"] == 8  # real rows


def test_distribution_matching_brings_each_class_closer_to_its_rows_and_leaves_them():
    """kip_weight = 0, mmd_weight > 0: class-wise MMD² only; from random real rows it lowers every class's MMD
    to the class's rows and ends on no real row."""
    X, y = _gaussians(n=120, d=4, k=2, seed=6)
    X[y == 1] *= np.array([3.0, 0.3, 1.0, 1.0])  # an elongated class: its spread matters, not only its mean
    kw = dict(rows_per_class=4, init="real", holdout=0.0, kip_weight=0.0, mmd_weight=1.0, mmd_length2=4.0,
              target_batch=200, random_state=1)
    start = KIPDistiller(steps=0, **kw).fit(X, y)
    moved = KIPDistiller(steps=150, lr=0.02, **kw).fit(X, y)
    for c in (0, 1):
        before = _mmd2(start.X_distilled_[start.y_distilled_ == c], X[y == c], 4.0)
        after = _mmd2(moved.X_distilled_[moved.y_distilled_ == c], X[y == c], 4.0)
        assert after < 0.7 * before, (c, before, after)
    assert nn_disclosure(moved.X_distilled_, X)["copies"] == 0


def _energy(A, B):
    def m(P, Q):
        return np.sqrt(((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)).mean()
    return 2 * m(A, B) - m(A, A) - m(B, B)


def _spread(Xs, ys, X, y):
    """Σ over the shipped rows of ‖x̃ − μ_c‖² over the same count of the real rows' mean ‖x − μ_c‖²."""
    num = sum(((Xs[ys == c] - X[y == c].mean(0)) ** 2).sum() for c in np.unique(ys))
    den = sum((ys == c).sum() * ((X[y == c] - X[y == c].mean(0)) ** 2).sum(1).mean() for c in np.unique(ys))
    return num / den


def test_energy_matching_brings_each_class_closer_to_its_rows_and_leaves_them():
    """mmd_kernel='energy': the class-wise energy distance (MMD with k = −‖x − x'‖) falls from the random start."""
    X, y = _gaussians(n=120, d=4, k=2, seed=6)
    X[y == 1] *= np.array([3.0, 0.3, 1.0, 1.0])
    kw = dict(rows_per_class=4, init="real", holdout=0.0, kip_weight=0.0, mmd_weight=1.0, mmd_kernel="energy",
              target_batch=200, random_state=1)
    start = KIPDistiller(steps=0, **kw).fit(X, y)
    moved = KIPDistiller(steps=150, lr=0.02, **kw).fit(X, y)
    for c in (0, 1):
        before = _energy(start.X_distilled_[start.y_distilled_ == c], X[y == c])
        after = _energy(moved.X_distilled_[moved.y_distilled_ == c], X[y == c])
        assert after < 0.7 * before, (c, before, after)
    assert nn_disclosure(moved.X_distilled_, X)["copies"] == 0


def test_the_unbiased_self_term_spreads_the_rows_wider_and_match_spread_restores_the_real_spread():
    """With the V-statistic the best k rows of a class huddle nearer its mean than its real rows do; the
    U-statistic (pairs s ≠ s') spreads them wider (here far wider than the real rows: its minimiser over-disperses),
    and match_spread sets the spread to the real rows' exactly."""
    X, y = _gaussians(n=200, d=4, k=2, sep=8.0, seed=4)
    kw = dict(rows_per_class=5, init="herding", holdout=0.0, kip_weight=0.0, mmd_weight=1.0, mmd_kernel="energy",
              target_batch=500, steps=200, lr=0.02, random_state=0)
    v = KIPDistiller(**kw).fit(X, y)
    u = KIPDistiller(mmd_unbiased=True, **kw).fit(X, y)
    sv, su = _spread(v.X_distilled_, v.y_distilled_, X, y), _spread(u.X_distilled_, u.y_distilled_, X, y)
    assert sv < 0.95 and su > sv + 0.1, (sv, su)
    m = KIPDistiller(match_spread=True, **kw).fit(X, y)
    assert abs(_spread(m.X_distilled_, m.y_distilled_, X, y) - 1.0) < 1e-6


def test_ntk_matches_the_recursion_on_a_pair():
    import math

    import torch

    x = np.array([[1.0, 2.0, -1.0]])
    z = np.array([[0.5, -1.0, 2.0]])
    d = 3
    s0 = 2 * (x @ z.T)[0, 0] / d + 0.01
    sx, sz = 2 * (x @ x.T)[0, 0] / d + 0.01, 2 * (z @ z.T)[0, 0] / d + 0.01
    th = math.acos(s0 / math.sqrt(sx * sz))
    s1 = 2 * math.sqrt(sx * sz) * (math.sin(th) + (math.pi - th) * math.cos(th)) / (2 * math.pi) + 0.01
    want = s1 + 2 * s0 * (math.pi - th) / (2 * math.pi)
    got = ntk_fc1(torch.from_numpy(x), torch.from_numpy(z)).item()
    assert got == pytest.approx(want, rel=1e-9)


def test_anchor_whitening_makes_two_sites_kernels_equal():
    """Two affine images of one anchor: whitened coordinates differ by a rotation, so the kernel agrees."""
    import torch

    rng = np.random.default_rng(0)
    anchor = rng.normal(size=(50, 4)) @ rng.normal(size=(4, 4))
    x = rng.normal(size=(7, 4))
    grams = []
    for seed in (1, 2):
        r = np.random.default_rng(seed)
        F, c = r.normal(size=(4, 4)), r.normal(size=4)
        mu, W, W_inv = anchor_whitening(anchor @ F + c)
        Z = torch.from_numpy(((x @ F + c) - mu) @ W)
        np.testing.assert_allclose(((x @ F + c) - mu) @ W @ W_inv + mu, x @ F + c, atol=1e-9)
        grams.append(ntk_fc1(Z, Z).numpy())
    np.testing.assert_allclose(grams[0], grams[1], rtol=1e-7)


def test_kl_matrix_and_clusters():
    rng = np.random.default_rng(0)
    a = rng.dirichlet([5, 1, 1], size=30)
    b = rng.dirichlet([1, 1, 5], size=30)
    soft = [a, a * 0.98 + 0.02 / 3, b, b * 0.98 + 0.02 / 3]
    M = kl_matrix(soft)
    assert M.shape == (4, 4) and np.all(np.diag(M) == 0) and np.all(M >= -1e-12)
    assert M[0, 1] < M[0, 2] and M[2, 3] < M[2, 0]
    labels = kl_clusters(M, n_clusters=2)
    assert labels[0] == labels[1] and labels[2] == labels[3] and labels[0] != labels[2]


def test_nn_disclosure_is_relative_to_the_data_spacing():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(200, 3))
    far = real[:5] + 100.0
    out = nn_disclosure(far, real)
    assert out["ratio_min"] > 10 and out["copies"] == 0 and out["share_below_1"] == 0.0
    assert nn_disclosure(real[:4], real)["ratio_median"] == 0.0
