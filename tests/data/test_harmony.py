"""The site-side units check: a column in another unit is named before export; natural differences are not."""

import numpy as np
import pytest

from core.data.harmony import unit_warnings
from core.data.schema import FeatureColumn, Schema


def _schema(**stats) -> Schema:
    return Schema([FeatureColumn("height", type="numeric", **stats), FeatureColumn("age")])


@pytest.fixture
def kit_sample():
    rng = np.random.default_rng(0)
    return np.column_stack([rng.normal(170, 10, 500), rng.normal(60, 12, 500)])


def _published(sample: np.ndarray) -> Schema:
    h = sample[:, 0]
    return _schema(min=float(h.min()), max=float(h.max()), mean=float(h.mean()), std=float(h.std()))


def test_a_site_from_the_same_population_is_not_flagged(kit_sample):
    rng = np.random.default_rng(1)
    site = np.column_stack([rng.normal(173, 8, 40), rng.normal(65, 10, 40)])  # taller, narrower: natural
    assert unit_warnings(_published(kit_sample), site) == []


def test_a_column_in_another_unit_is_named_with_what_was_expected(kit_sample):
    rng = np.random.default_rng(2)
    site = np.column_stack([rng.normal(170, 10, 60) * 2.54 + 10, rng.normal(60, 12, 60)])
    (warning,) = unit_warnings(_published(kit_sample), site)
    assert warning.startswith("column 'height' does not look like the kit's")
    assert "over 60 rows" in warning and "the kit's sample has mean 169.7" in warning and "another unit" in warning


def test_a_rescaled_column_with_the_same_centre_is_caught_by_its_spread(kit_sample):
    site = np.column_stack([170 + (kit_sample[:60, 0] - 170) * 3, kit_sample[:60, 1]])
    assert len(unit_warnings(_published(kit_sample), site)) == 1


def test_ranges_alone_catch_values_outside_them():
    schema = _schema(min=150.0, max=200.0)
    rng = np.random.default_rng(3)
    assert unit_warnings(schema, np.column_stack([rng.uniform(150, 200, 50), rng.normal(size=50)])) == []
    inches = np.column_stack([rng.uniform(59, 79, 50), rng.normal(size=50)])
    assert "outside the kit's range 150 to 200" in unit_warnings(schema, inches)[0]


def test_without_published_statistics_nothing_is_compared():
    rng = np.random.default_rng(4)
    assert unit_warnings(_schema(), np.column_stack([rng.normal(1000, 1, 50), rng.normal(size=50)])) == []


def test_cells_the_site_filled_are_left_out_of_the_comparison(kit_sample):
    schema = Schema([FeatureColumn("height", mean=170.0, std=10.0, missing="impute", indicator=True)])
    rng = np.random.default_rng(5)
    present = rng.normal(170, 10, 30)
    filled = np.full(30, 400.0)  # would shift the mean if it were counted
    X = np.column_stack([np.concatenate([present, filled]), np.r_[np.zeros(30), np.ones(30)]])
    assert unit_warnings(schema, X) == []


def test_a_narrow_subgroup_of_the_kits_sample_is_not_a_unit(kit_sample):
    """A site holding one group (a third of the kit's spread, centre inside the sample) is not flagged."""
    rng = np.random.default_rng(6)
    site = np.column_stack([rng.normal(165, 3.5, 80), rng.normal(60, 4, 80)])
    assert unit_warnings(_published(kit_sample), site) == []


def test_the_block_pass_gives_each_columns_own_mean_spread_and_share_outside():
    """The units check's statistics come from two passes over blocks of rows, not a pass over the matrix per column;
    they are each column's own (finite cells, those this site filled left out), overall and per class, as a
    column-by-column computation gives them; a column of only the range's two ends is the kit's coding."""
    from core.data.harmony import RANGE_MARGIN, column_moments

    rng = np.random.default_rng(4)
    n = 1000
    y = rng.integers(0, 3, n)
    X = np.column_stack([rng.normal(5, 2, n) + y, rng.normal(-3, 0.5, n), (rng.random(n) < 0.2).astype(float),
                         rng.integers(0, 2, n).astype(float)])
    X[::17, 0] = np.nan
    got = column_moments(X, [0, 1, 3], [-1, 2, -1], y, 3, [(1.0, 9.0), (-4.0, -2.0), (0.0, 1.0)], block=64)
    kept = [np.isfinite(X[:, 0]), X[:, 2] == 0, np.ones(n, bool)]
    for c, col, keep, (lo, hi) in zip(got, [0, 1, 3], kept, [(1, 9), (-4, -2), (0, 1)], strict=True):
        v, labels = X[keep, col], y[keep]
        assert c.n == v.size
        np.testing.assert_allclose([c.mean, c.sd], [v.mean(), v.std()], rtol=1e-12)
        pad = RANGE_MARGIN * (hi - lo)
        assert c.outside == pytest.approx(np.mean((v < lo - pad) | (v > hi + pad)), rel=1e-15)
        assert c.counts.tolist() == [np.sum(labels == k) for k in range(3)]
        np.testing.assert_allclose(c.means, [v[labels == k].mean() for k in range(3)], rtol=1e-12)
        np.testing.assert_allclose(c.m2, [((v[labels == k] - v[labels == k].mean()) ** 2).sum() for k in range(3)],
                                   rtol=1e-10)
    assert [c.coded for c in got] == [False, False, True]
    alone = column_moments(X, [1], [2], None, 1, [(None, None)], block=100)[0]  # no labels, no range
    assert alone.n == got[1].n and alone.mean == pytest.approx(got[1].mean, rel=1e-13) and alone.outside is None


