"""Issue #35 (part B), finding 2: under a formal option no ``--seed`` gives the noise back.

The attack of the issue replays the export's draws from a guessed seed — the map, the shuffle, the noise and the
label flips, in the order one seeded generator drew them — and compares with the bundle. With the protective
draws from the operating system (core/privacy/protective.py) no seed of 0…10⁴ reproduces the shipped rows or
classes; the control shows the same replay finds the seed when the draws follow it (as before the fix)."""

from __future__ import annotations

import numpy as np
import pytest

import core.methods.dc_site as dc_site
from core.methods import get_method
from core.methods.base import SiteInput
from core.privacy import mechanism as dp

SEEDS = range(10_001)


@pytest.fixture
def site():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 5)) * [1, 10, 100, 2, 3] + [0, 50, 300, 1, 2]
    y = (X[:, 0] > 0).astype(np.int64)
    anchor = X.mean(0) + X.std(0) * rng.standard_normal((200, 5))
    return SiteInput(X, y, ["n", "y"], anchor, None, {"seed": 7, "privacy_epsilon": 1.0}, scale=X.std(0) * 1.1,
                     centre=X.mean(0) + 0.1)


def replay(site: SiteInput, seed: int, acc: dict, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows and classes one generator seeded with ``seed`` would ship (the draws in the export's order)."""
    rng = np.random.default_rng(seed)
    Q = dp.random_orthogonal(site.X.shape[1], k, rng)
    perm = rng.permutation(len(site.X))
    Z = (((site.X - site.centre) / site.scale) @ Q)[perm].astype(np.float32)
    dp.clip_rows(Z, acc["clip"])
    Z += (rng.standard_normal(Z.shape) * acc["sigma"]).astype(np.float32)
    y = dp.randomised_response(site.y[perm], len(site.classes), acc["epsilon_labels"], rng)
    return Z, y


def seeds_that_replay(site: SiteInput, export) -> list[int]:
    X, y, acc = export.arrays["x_tilde"], export.arrays["y"], export.manifest["privacy"]
    hits = []
    for s in SEEDS:
        Z, labels = replay(site, s, acc, X.shape[1])
        if np.allclose(Z, X, atol=1e-4) or (np.array_equal(labels, y) and np.allclose(Z[:5], X[:5], atol=1e-4)):
            hits.append(s)
    return hits


def test_no_seed_of_ten_thousand_replays_the_noise(site):
    export = get_method("dccfl").site_compute(site)
    assert seeds_that_replay(site, export) == []
    again = get_method("dccfl").site_compute(site)  # the same seed draws fresh noise, a fresh map and shuffle
    assert not np.allclose(again.arrays["x_tilde"], export.arrays["x_tilde"])
    assert not np.array_equal(again.private_arrays["permutation"], export.private_arrays["permutation"])


def test_control_the_replay_finds_the_seed_when_the_draws_follow_it(site, monkeypatch):
    """Before the fix one generator seeded by ``--seed`` drew everything: the same replay finds it."""
    monkeypatch.setattr(dc_site, "protective_rng", lambda: np.random.default_rng(7))
    export = get_method("dccfl").site_compute(site)
    assert 7 in seeds_that_replay(site, export)


def test_meta_lr_formal_estimates_differ_under_one_seed(site):
    site.anchor = None
    site.settings = {"seed": 7, "privacy_epsilon": 1.0}
    method = get_method("meta-lr")
    a, b = method.site_compute(site), method.site_compute(site)
    assert not np.allclose(a.arrays["coef"], b.arrays["coef"])
