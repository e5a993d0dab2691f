"""The ICA attack's matching of components (core/privacy/assignment.py) is a least-cost assignment: scipy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from core.privacy.assignment import min_cost_assignment


@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (4, 1), (5, 5), (7, 3), (3, 9), (51, 51)])
def test_the_matching_is_scipys(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        cost = rng.random(shape) * 10
        rows, cols = min_cost_assignment(cost)
        r, c = linear_sum_assignment(cost)
        assert rows.tolist() == r.tolist() and cols.tolist() == c.tolist()


def test_ties_give_a_matching_of_the_same_least_cost():
    rng = np.random.default_rng(3)
    for _ in range(50):
        cost = rng.integers(0, 3, size=(6, 6)).astype(float)  # many optimal matchings
        rows, cols = min_cost_assignment(cost)
        r, c = linear_sum_assignment(cost)
        assert sorted(set(cols.tolist())) == list(range(6)) and rows.tolist() == list(range(6))
        assert cost[rows, cols].sum() == cost[r, c].sum()


def test_a_cost_that_is_not_a_finite_matrix_is_refused():
    with pytest.raises(ValueError, match="finite"):
        min_cost_assignment(np.array([[1.0, np.inf], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="matrix"):
        min_cost_assignment(np.ones(3))
