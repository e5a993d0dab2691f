"""``python -m benchmarks scale`` at a tiny size: one point's figures, and the growth exponent it prints."""

import math

import pytest

from benchmarks.scale import growth, one_point


def test_one_point_fits_reports_and_counts_every_site():
    point = one_point(4, rows=60, cols=5)
    assert point["sites"] == 4 and point["rows"] == 60
    assert point["fit_cpu_seconds"] > 0 and point["peak_rss_gb"] >= point["peak_rss_gb_bundles"] > 0
    assert sum(point["site_choices"].values()) == 4      # every site has the gate's estimate
    assert 1 <= point["n_clusters"] <= 4 and 0.0 <= point["t"] <= 1.0
    assert point["report_mb"] > 0
    assert 0.0 <= point["expected_mean"] <= 1.0


def test_growth_is_the_least_squares_exponent_of_the_points():
    points = [{"sites": s, "fit_cpu_seconds": 3.0 * s ** 0.8} for s in (100, 1000, 3000, 10000)]
    assert growth(points, "fit_cpu_seconds") == pytest.approx(0.8, abs=1e-3)
    assert growth(points[:1], "fit_cpu_seconds") is None
    assert math.isclose(growth([{"sites": 10, "m": 1.0}, {"sites": 100, "m": 100.0}], "m"), 2.0)
