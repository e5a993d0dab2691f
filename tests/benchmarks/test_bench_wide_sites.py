"""``python -m benchmarks wide-sites`` (issue #25): the sites it draws, and a clustering cell end to end."""

import numpy as np
from sklearn.datasets import load_digits

from benchmarks.wide_sites import N_SITES, ROWS, clustering_cell, make_sites


def test_six_wide_small_sites_with_label_skew():
    X, y = load_digits(return_X_y=True)
    anchor, sites = make_sites(X.astype(float), y, 0)
    assert anchor.shape == (1000, 64) and len(sites) == N_SITES
    for Xtr, ytr, _, yte in sites:
        assert Xtr.shape[1] == 64 and Xtr.shape[0] <= ROWS[1] and Xtr.shape[0] < 64
        assert len(np.unique(ytr)) <= 6 and set(np.unique(yte)) <= set(range(10))


def test_the_rule_clusters_every_site_where_the_papers_dimension_is_refused():
    X, y = load_digits(return_X_y=True)
    cell = clustering_cell(X.astype(float), y, 0)
    assert "--dimension" in cell["old"]["refused"] and "Numbers per row" in cell["old"]["refused"]
    for cond in ("rule", "m10"):
        assert -1 <= cell[cond]["ari_truth"] <= 1 and np.isfinite(cell[cond]["ari_pooled_kmeans"])
