"""The ward's decision threshold: given (0 < T < 1) or picked on labelled rows by a sensitivity or specificity."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from core.errors import ConfigError
from core.learn.threshold import check_threshold, rates_at, threshold_for


def _sens_spec(y, p, t):
    (tn, fp), (fn, tp) = confusion_matrix(y, (p >= t).astype(int), labels=[0, 1])
    return tp / (tp + fn), tn / (tn + fp)


@pytest.fixture
def scores():
    rng = np.random.default_rng(1)
    y = (rng.random(300) < 0.3).astype(int)
    p = np.clip(0.3 + 0.25 * y + rng.normal(0, 0.18, 300), 0.001, 0.999).round(3)  # ties on purpose
    return y, p


def test_rates_match_sklearn(scores):
    y, p = scores
    for t in (0.1, 0.37, 0.5, 0.9):
        sens, spec = rates_at(y, p, [t])
        assert (sens[0], spec[0]) == pytest.approx(_sens_spec(y, p, t))


@pytest.mark.parametrize("target", [0.5, 0.8, 0.9, 0.95, 1.0])
def test_sensitivity_rule_is_the_largest_threshold_reaching_it(scores, target):
    y, p = scores
    t = threshold_for(y, p, sensitivity=target)
    assert _sens_spec(y, p, t)[0] >= target
    above = np.unique(p[p > t])  # every larger threshold that changes a decision misses the target
    assert all(_sens_spec(y, p, u)[0] < target for u in above)


@pytest.mark.parametrize("target", [0.5, 0.8, 0.9, 0.99, 1.0])
def test_specificity_rule_is_the_smallest_threshold_reaching_it(scores, target):
    y, p = scores
    t = threshold_for(y, p, specificity=target)
    assert _sens_spec(y, p, t)[1] >= target
    below = np.unique(p[p < t])
    assert all(_sens_spec(y, p, u)[1] < target for u in below)


def test_refusals_are_one_sentence(scores):
    y, p = scores
    for bad in (0, 1, -0.2, 1.5, "x"):
        with pytest.raises(ConfigError, match="threshold must"):
            check_threshold(bad)
    assert check_threshold("0.25") == 0.25
    with pytest.raises(ConfigError, match="not both"):
        threshold_for(y, p, sensitivity=0.8, specificity=0.8)
    with pytest.raises(ConfigError, match="between 0"):
        threshold_for(y, p, sensitivity=0)
    with pytest.raises(ConfigError, match="there are none"):
        threshold_for(np.zeros(5, int), p[:5], sensitivity=0.9)
