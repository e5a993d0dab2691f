"""How much sites differ (core/learn/heterogeneity.py): DerSimonian–Laird pooling agrees with the meta-analysis's
own τ² and I², the prediction interval widens with τ², AUCs pool on the logit scale, and the plain sentence never
contradicts its figures (issue #33 item 11: "coefficients differ … I² = 0 %")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.learn.heterogeneity import differ_words, pool, pool_aucs
from core.methods.metalr.fixed_effect import i_squared
from core.methods.metalr.random_effects import dersimonian_laird


def test_pool_agrees_with_the_meta_analysis_and_a_hand_computed_case():
    # w = 1 each, mean 2, Q = 4 + 0 + 4 = 8 on 2 df, c = 3 − 3/3 = 2: τ² = (8 − 2)/2 = 3; I² = 6/8
    p = pool([0.0, 2.0, 4.0], [1.0, 1.0, 1.0])
    assert p.q == pytest.approx(8.0) and p.df == 2 and p.tau2 == pytest.approx(3.0) and p.i2 == pytest.approx(0.75)
    assert p.estimate == pytest.approx(2.0) and p.high - p.low == pytest.approx(2 * 1.959964 * math.sqrt(4 / 3))
    rng = np.random.default_rng(0)
    b, s = rng.normal(0, 1, 7), rng.uniform(0.2, 1.0, 7)
    p = pool(b, s)
    assert p.tau2 == pytest.approx(dersimonian_laird(b, s**2)) and p.i2 == pytest.approx(i_squared(p.q, p.df))
    assert p.pi_low < p.low < p.estimate < p.high < p.pi_high  # a new site varies more than the mean is uncertain


def test_equal_sites_have_nothing_beyond_chance_and_aucs_pool_on_the_logit_scale():
    p = pool_aucs([(0.8, 0.7, 0.88)] * 4)
    assert p.estimate == pytest.approx(0.8, abs=1e-6) and p.i2 == 0.0 and p.tau2 == 0.0 and p.p_value == 1.0
    assert 0.7 < p.low < 0.8 < p.high < 0.88  # four sites' worth of evidence: narrower than one site's
    assert pool_aucs([(0.8, float("nan"), 0.9)]) is None and pool([], []) is None
    assert pool([1.0], [0.5]).df == 0 and pool([1.0], [0.5]).pi_low is None


@pytest.mark.parametrize("i2,p,df", [(0.0, 0.74, 4), (0.0, 1.0, 30), (0.3, 0.2, 10), (0.56, 0.02, 4),
                                     (0.9, 1e-6, 30), (0.0, None, 0)])
def test_the_sentence_follows_its_figures(i2, p, df):
    text = differ_words(i2, p, df, "the coefficients")
    if not df:
        assert "cannot be measured" in text
    elif p < 0.05:
        assert "differ between sites more than chance" in text and f"{round(100 * i2)} %" in text
    elif i2 == 0:
        assert "no more than chance" in text and "none of their spread" in text
    else:
        assert text.startswith("No clear sign") and "differ between sites more than" not in text
