"""Issue #24: the formal noise option's mechanism: clipping bound, σ calibration, randomised response, and the
DC site side using it (public scale, data-independent map, what its (ε, δ) does and does not cover)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from core.errors import ConfigError
from core.methods import SiteInput, get_method
from core.privacy import mechanism as dp


@pytest.mark.parametrize("eps,delta", [(0.5, 1e-5), (1.0, 1e-6), (4.0, 1e-5), (20.0, 1e-8)])
def test_sigma_matches_the_analytic_calibration(eps, delta):
    def delta_at(s):  # Balle & Wang's δ(ε) at σ = s for Δ = 2, written out
        return norm.cdf(1 / s - eps * s / 2) - math.exp(eps) * norm.cdf(-1 / s - eps * s / 2)

    sigma = dp.analytic_gaussian_sigma(eps, delta, 2.0)
    assert delta_at(sigma) <= delta * (1 + 1e-6)  # (ε, δ)-DP at σ ...
    assert delta_at(sigma * 0.999) > delta  # ... and not at a smaller σ: the smallest
    if eps < 1:
        assert sigma <= dp.classic_gaussian_sigma(eps, delta, 2.0)


def test_clipping_bounds_every_row():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((500, 6)) * rng.uniform(0.1, 5, (500, 1))
    short = np.linalg.norm(Z, axis=1) <= 2.0
    before = Z.copy()
    dp.clip_rows(Z, 2.0)
    assert np.all(np.linalg.norm(Z, axis=1) <= 2.0 + 1e-9)
    assert np.array_equal(Z[short], before[short])  # rows within the bound are unchanged


def test_randomised_response_keeps_at_the_stated_rate():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 60_000)
    out = dp.randomised_response(y, 3, 1.0, rng)
    keep = math.e / (math.e + 2)
    assert np.mean(out == y) == pytest.approx(keep, abs=0.01)
    assert out.min() >= 0 and out.max() <= 2


@pytest.fixture
def site():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 5)) * [1, 10, 100, 2, 3] + [0, 50, 300, 1, 2]
    y = (X[:, 0] > 0).astype(np.int64)
    anchor = X.mean(0) + X.std(0) * rng.standard_normal((300, 5))
    return SiteInput(X, y, ["n", "y"], anchor, None, {"seed": 4, "privacy_epsilon": 2.0}, scale=X.std(0) * 1.1,
                     centre=X.mean(0) + 0.1)


def test_dc_export_under_formal_noise(site):
    ex = get_method("dccfl").site_compute(site)
    acc = ex.manifest["privacy"]
    assert acc["delta"] == pytest.approx(1 / 400 ** 2) and acc["epsilon_rows"] + acc["epsilon_labels"] == 2.0
    assert acc["sigma"] == pytest.approx(dp.analytic_gaussian_sigma(acc["epsilon_rows"], acc["delta"], 2 * acc["clip"]))
    assert np.all(np.linalg.norm(ex.arrays["anchor_tilde"], axis=1) <= acc["clip"] * (1 + 1e-5))
    assert "variance_kept" not in ex.manifest and ex.manifest["reduction"] == "random-orthogonal"
    # the map is the kit's public scale and a matrix with orthonormal columns, not fitted to the rows
    F = ex.private_arrays["f_matrix"] * site.scale[:, None]
    assert np.allclose(F.T @ F, np.eye(F.shape[1]), atol=1e-9)
    assert np.allclose(ex.private_arrays["f_offset"], site.centre)
    # the classes ship randomised, and the counts are those of the randomised classes
    assert np.array_equal(np.bincount(ex.arrays["y"], minlength=2), ex.arrays["label_counts"])
    perm = ex.private_arrays["permutation"]
    assert 0.5 < np.mean(ex.arrays["y"] == site.y[perm]) < 0.95


def test_formal_noise_needs_the_kits_public_statistics(site):
    site.scale = None
    with pytest.raises(ConfigError, match="public mean and spread"):
        get_method("dccfl").site_compute(site)


def test_formal_noise_off_leaves_the_export_unchanged(site):
    site.settings = {"seed": 4}
    a = get_method("dccfl").site_compute(site)
    site.settings = {"seed": 4, "privacy_epsilon": None}
    b = get_method("dccfl").site_compute(site)
    assert np.array_equal(a.arrays["x_tilde"], b.arrays["x_tilde"]) and "privacy" not in a.manifest
