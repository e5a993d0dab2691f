"""GOLD: the CPL engine, the site's FCPL with the guard, federated scaling, the analyst, apply, k-FED, the bench."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from benchmarks.baselines.kfed import kfed
from core.errors import ConfigError
from core.methods.gold import cpl as G


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(1):
        yield


def _blobs(sizes, seed=0, spread=0.5, gap=12.0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [gap, 0, 0], [0, gap, 0], [gap, gap, gap]])[: len(sizes)]
    X = np.vstack([c + spread * rng.standard_normal((n, 3)) for c, n in zip(centres, sizes, strict=True)])
    y = np.repeat(np.arange(len(sizes)), sizes)
    return X, y


def test_singleton_weights_are_undefined_so_the_cluster_is_eliminated():
    X, _ = _blobs([10, 10])
    labels = np.r_[np.zeros(10, int), np.ones(9, int), 2]  # cluster 2 is a singleton
    W = G._feature_weights(X, labels, 3)
    assert np.all(np.isfinite(W[:2])) and np.allclose(W[:2].sum(axis=1), 1.0)
    assert np.all(np.isnan(W[2]))


def test_cpl_eliminates_a_planted_singleton_and_recovers_unequal_blobs_with_k_unknown():
    X, y = _blobs([400, 60, 15])
    X = np.vstack([X, [[40.0, 40.0, 40.0]]])  # a planted outlier row
    y = np.r_[y, 3]
    res = G.cpl(X, round(0.5 * len(X)), rng=0)  # k = half the rows: k unknown
    assert np.array_equal(G.CPL(random_state=0).fit_predict(X), res.labels)
    assert res.counts.min() > 1  # the outlier is not a cluster of its own
    assert len(res.counts) < 20  # almost all 238 candidates were eliminated
    blob = y < 3
    found = set()
    for j in range(len(res.counts)):  # every cluster lies inside one blob, and every blob is found
        inside = np.unique(y[blob & (res.labels == j)])
        assert len(inside) == 1
        found.add(int(inside[0]))
    assert found == {0, 1, 2}
    # the whole pipeline with k = auto over three sites: every global cluster lies inside one blob
    X, y = _blobs([400, 60, 15])
    order = np.random.default_rng(1).permutation(len(X))
    parts = np.array_split(order, 3)
    sites = [G.fcpl_site(X[p], seed=i) for i, p in enumerate(parts)]
    model = G.gold_fit(sites, "auto", seed=0)
    sil = model.auto["silhouette"]
    assert model.k == model.auto["chosen"] == max(sil, key=lambda c: (sil[c], -c)) and 2 in sil
    assert set(model.level_sizes) & set(sil) == {c for c in model.level_sizes if c in sil}
    pred = np.concatenate([G.site_labels(s, g) for s, g in zip(sites, model.micro_global, strict=True)])
    truth = np.concatenate([y[p] for p in parts])
    for c in np.unique(pred):
        assert len(np.unique(truth[pred == c])) == 1


def test_guard_ships_no_centroid_of_fewer_than_min_rows():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(120, 4)) * 3)  # integer columns: a 2-row mean would reveal its rows
    plain = G.fcpl_site(X, seed=0)
    assert plain.counts.min() < G.MIN_SIZE  # FCPL alone ships tiny micro-clusters
    for guard in ("merge", "drop", "pool", "ward"):
        s = G.fcpl_site(X, seed=0, min_size=G.MIN_SIZE, guard=guard)
        assert s.counts.min() >= G.MIN_SIZE
        assert s.guard_rows == int(plain.counts[plain.counts < G.MIN_SIZE].sum()) > 0
        for j, c in enumerate(s.centroids):  # each shipped centroid is the mean of its ≥ 5 rows
            assert np.allclose(c, X[s.labels == j].mean(axis=0))
            assert (s.labels == j).sum() == s.counts[j]
    assert (G.fcpl_site(X, seed=0, min_size=5, guard="merge").labels >= 0).all()
    dropped = G.fcpl_site(X, seed=0, min_size=5, guard="drop")
    assert (dropped.labels == -1).sum() == dropped.guard_rows
    merged = G.fcpl_site(X, seed=0, min_size=5)
    noisy = G.fcpl_site(X, seed=0, min_size=5, noise=0.1)  # optional noise on what is shipped, not on the counts
    assert np.array_equal(noisy.counts, merged.counts) and not np.allclose(noisy.centroids, merged.centroids)
    tiny = G.fcpl_site(X[:3], seed=0, min_size=5)  # a site with fewer rows than the minimum ships nothing
    assert len(tiny.counts) == 0 and (tiny.labels == -1).all()


def test_pooling_guards_join_neighbouring_small_groups_before_a_large_one():
    """Two 3-row groups side by side, one 30-row group far away, one 2-row group beside it: "merge" pushes both
    3-row groups into the far large group; "pool" and "ward" pool them (6 rows) and leave the large one alone
    except for its 2-row neighbour; every kept group then holds ≥ 5 rows, every row kept, means exact."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, .1, (30, 2)) + [10, 0], rng.normal(0, .1, (3, 2)), rng.normal(0, .1, (3, 2)) + [1, 0],
                   rng.normal(0, .1, (2, 2)) + [10.5, 0]])
    lab = np.repeat([0, 1, 2, 3], [30, 3, 3, 2])
    merged = G.fcpl_site(X, standardise=False, init_labels=lab, min_size=5, guard="merge")
    assert len(merged.counts) == 1 and merged.guard_rows == 8 and merged.guard_clusters == 3
    for how in ("pool", "ward"):
        s = G.fcpl_site(X, standardise=False, init_labels=lab, min_size=5, guard=how)
        assert sorted(s.counts) == [6, 32] and (s.labels >= 0).all()
        assert s.labels[30] == s.labels[35] != s.labels[0] == s.labels[36]
        for j, c in enumerate(s.centroids):
            assert np.allclose(c, X[s.labels == j].mean(axis=0)) and s.counts[j] >= 5
    with pytest.raises(ConfigError, match="unknown guard"):
        G.fcpl_site(X, standardise=False, init_labels=lab, min_size=5, guard="nearest")


def test_federated_scaling_equals_the_pooled_zscore_of_the_union():
    rng = np.random.default_rng(4)
    sites = [rng.normal(loc=i, scale=1 + i, size=(50 + 10 * i, 5)) * [1, 10, 100, 0.1, 1] for i in range(3)]
    union = np.vstack(sites)
    mean, std = G.pooled_scaler([G.column_stats(X) for X in sites])
    assert np.allclose(mean, union.mean(axis=0)) and np.allclose(std, union.std(axis=0))
    Zu = (union - union.mean(axis=0)) / union.std(axis=0)
    start = 0
    for i, X in enumerate(sites):
        fed = G.fcpl_site(X, mean=mean, std=std, seed=i)
        Z = Zu[start:start + len(X)]
        start += len(X)
        pooled = G.fcpl_site(Z, mean=np.zeros(5), std=np.ones(5), seed=i)
        assert np.array_equal(fed.labels, pooled.labels)  # the same geometry, so the same micro-clusters
        assert np.allclose(fed.centroids, mean + std * pooled.centroids)  # centroids map back exactly


def test_apply_labels_rows_back_in_the_site_order_and_new_rows_by_nearest_centroid():
    X, y = _blobs([60, 40, 30], seed=5)
    rng = np.random.default_rng(6)
    parts = np.array_split(rng.permutation(len(X)), 2)
    sites = [G.fcpl_site(X[p], seed=i, min_size=5) for i, p in enumerate(parts)]
    model = G.gold_fit(sites, 3, seed=0)
    for s, p, g in zip(sites, parts, model.micro_global, strict=True):
        lab = G.site_labels(s, g)
        assert lab.shape == (len(p),)
        assert np.array_equal(lab, g[s.labels])  # row i gets its micro-cluster's global cluster
        for j, c in enumerate(s.centroids):  # micro-cluster j is the mean of the site's rows labelled j
            assert np.allclose(c, X[p][s.labels == j].mean(axis=0))
    # new rows: nearest global centroid; a centroid itself is labelled with its own cluster
    assert np.array_equal(G.nearest_centroid(model.centroids_raw, model), np.arange(3))
    assert model.centroids_raw.shape == (3, 3)


def test_the_within_spread_from_column_sums_equals_the_rows_and_the_estimated_silhouette_is_the_rows():
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(8)
    X = rng.normal(size=(90, 4)) * [1, 5, 0.5, 2] + [0, 3, 1, -2]
    parts = [np.arange(0, 50), np.arange(50, 90)]
    sites = [G.fcpl_site(X[p], seed=i, min_size=5) for i, p in enumerate(parts)]
    mean, std = G.pooled_scaler([s.stats for s in sites])
    T = np.vstack([(s.centroids - mean) / std for s in sites])
    w = np.concatenate([s.counts for s in sites]).astype(np.float64)
    Z = (X - mean) / std
    own = np.concatenate([s.labels + off for s, off in zip(sites, [0, len(sites[0].counts)], strict=True)])
    truth = ((Z - T[own]) ** 2).sum(axis=1).mean()  # each row's squared distance to its micro-cluster's mean
    assert np.isclose(G.within_spread(sites, mean, std, T, w), truth)
    # σ² = 0: the centroids' own weighted silhouette; with every micro-cluster a single row, the rows' silhouette
    lab = (T[:, 0] > 0).astype(np.int64)
    assert np.isclose(G.weighted_silhouette(T, lab, np.ones(len(T)), 0.0), silhouette_score(T, lab))


def test_kmeans_server_step_weights_each_average_by_its_rows_and_is_seeded():
    T = np.array([[0.0], [4.0], [10.0]])
    plain = G.kmeans_server(T, None, 2, seed=0)  # each average once: {0, 4} | {10} (sum of squares 8 < 18)
    heavy = G.kmeans_server(T, np.array([100.0, 100.0, 1.0]), 2, seed=0)  # the rows: {0} | {4, 10} (36 < 800)
    assert plain[0] == plain[1] != plain[2] and heavy[0] != heavy[1] == heavy[2]
    assert np.array_equal(G.kmeans_server(T, np.ones(3), 2, seed=3), G.kmeans_server(T, np.ones(3), 2, seed=3))
    with pytest.raises(ConfigError, match="unknown server step"):
        G.gold_fit([G.SiteResult(T, np.ones(3, np.int64) * 5, np.zeros(0, np.int64), G.column_stats(T), 0, 0, 0,
                                 0, 0, 0)], 2, server="remc")


def test_the_default_server_step_keeps_a_small_distinct_group_apart_where_the_sum_of_squares_splits_a_big_one():
    # four averages of 50 rows spread over −3..3 and one of 5 rows at 10; k = 2
    T, w = np.array([[-3.0], [-1.0], [1.0], [3.0], [10.0]]), np.array([50.0, 50.0, 50.0, 50.0, 5.0])
    least_squares = G.kmeans_server(T, w, 2, seed=0)  # {−3, −1} | {1, 3, 10}: sum of squares ≈ 433 < 1 000
    assert least_squares[0] == least_squares[1] != least_squares[2] == least_squares[4]
    chosen = G.separated_kmeans(T, w, 2, seed=0, spread2=0.5)  # {−3 … 3} | {10}: estimated silhouette .70 > .56
    assert len(set(chosen[:4])) == 1 and chosen[4] != chosen[0]
    assert np.array_equal(chosen, G.separated_kmeans(T, w, 2, seed=0, spread2=0.5))
    # k-FED's seeding from the heaviest average; too few distinct averages → no such start
    assert G.farthest_first(T, w, 2)[:, 0].tolist() == [-3.0, 10.0]
    assert G.farthest_first(np.zeros((3, 1)), np.ones(3), 2) is None
    # the product's step in gold_fit; count_weighted = False keeps the ablation's plain k-means
    stats = G.column_stats(np.repeat(T, w.astype(int), axis=0))
    site = G.SiteResult(T, w.astype(np.int64), np.zeros(0, np.int64), stats, 0, 0, 0, 0, 0, 0)
    fitted = G.gold_fit([site], 2, mean=np.zeros(1), std=np.ones(1), server="kmeans").micro_global[0]
    assert len(set(fitted[:4])) == 1 and fitted[4] != fitted[0]
    plain = G.gold_fit([site], 2, mean=np.zeros(1), std=np.ones(1), server="kmeans", count_weighted=False)
    assert np.array_equal(plain.micro_global[0], G.kmeans_server(T, None, 2, 0))


def test_remc_failure_is_retried_and_counted_then_reported():
    E = np.array([[0, 0], [0, 0], [1, 1], [1, 1]])
    with pytest.raises(G.REMCFailure):
        G.remc(E, 3)
    X, _ = _blobs([30, 30])
    sites = [G.fcpl_site(X, seed=0)]
    with pytest.raises(ConfigError, match="REMC could not form"):
        G.gold_fit(sites, len(sites[0].counts) + 1, seed=0, max_retries=2)


def test_cpl_work_is_linear_in_rows_per_epoch(monkeypatch):
    """CPL's work per row visit does not grow with the rows (the authors' code is O(n²) an epoch): counted, not
    timed — the Python lines run per visit inside ``cpl`` are the same at 500 and 5,000 rows, and the per-epoch
    passes over all rows (the feature weights) run once an epoch."""
    import sys

    from core.methods.gold import cpl as module

    def counted(n):
        X = np.random.default_rng(7).normal(size=(n, 5))
        lines, epochs_seen = [0], [0]
        real = module._feature_weights
        monkeypatch.setattr(module, "_feature_weights", lambda *a: (epochs_seen.__setitem__(0, epochs_seen[0] + 1),
                                                                   real(*a))[1])

        def trace(frame, event, arg):
            if frame.f_code is module.cpl.__code__:
                if event == "line":
                    lines[0] += 1
                return trace
            return None

        sys.settrace(trace)
        try:
            res = G.cpl(X, 20, rng=0, max_epochs=2)
        finally:
            sys.settrace(None)
        return lines[0] / res.row_visits, res, epochs_seen[0]

    small, r_small, e_small = counted(500)
    large, r_large, e_large = counted(5000)
    assert r_large.row_visits <= 3 * 5000 and r_small.row_visits <= 3 * 500  # one visit per row and epoch
    assert e_small <= r_small.epochs and e_large <= r_large.epochs  # a pass over all rows: once an epoch
    assert large < 1.2 * small, (small, large)  # per visit: a constant number of lines (+ per-epoch, amortised)


def test_kfed_variants_and_the_old_import():
    from benchmarks.baselines.kfed import kfed as old

    assert old is kfed
    X, y = _blobs([40, 40, 40, 40], seed=8)
    sites = [X[i::3] for i in range(3)]
    for variant in ("official", "mufc", "margin"):
        M, labels = kfed(sites, 4, k_local=2, seed=0, variant=variant)
        assert M.shape == (4, 3) and [len(lab) for lab in labels] == [len(s) for s in sites]
    with pytest.raises(ConfigError):
        kfed(sites, 4, variant="nope")


def test_bench_trial_runs_every_row_on_small_data():
    from benchmarks import gold as B

    X, y = _blobs([80, 50, 30, 20], seed=9, spread=2.0)
    rec = B.trial("toy", X, y, 0, B.ROWS)
    assert len(rec["split"]["rows_per_client"]) == 8
    assert set(rec["methods"]) == set(B.ROWS)
    for row, m in rec["methods"].items():
        if "error" not in m:
            assert 0 < m["IV"]["Purity"] <= 1 and 0 < m["III"]["Purity"] <= 1, row
    s = B.summarise([rec])
    assert any(r["method"] == B.PAPER_ROW and r["protocol"] == "IV" for r in s["rows"])
    assert B.purity(np.array([0, 0, 1, 1]), np.array([5, 5, 5, 7])) == 0.75


def test_partition_takes_the_authors_rows_and_classes_per_client():
    from benchmarks import gold as B

    X, y = _blobs([80, 60, 50, 40], seed=2, spread=2.0)
    rows, classes = [10, 25, 40, 5, 12, 30, 8, 20], [2, 3, 4, 2, 2, 3, 2, 4]
    parts = B.non_icd_partition(X, y, np.random.default_rng(0), sizes=(rows, classes))
    for p, n, m in zip(parts, rows, classes, strict=True):
        assert len(p) <= n and len(np.unique(p)) == len(p) and len(np.unique(y[p])) <= m
    st = B.split_stats(parts, y)
    assert np.mean(st["rows_per_client"]) > 0.8 * np.mean(rows)  # capped by the pool only
    generic = B.non_icd_partition(X, y, np.random.default_rng(1))
    for p in generic:  # n = f · (rows of the picked classes), f ≤ 0.35
        assert 2 <= len(p) <= 0.35 * sum((y == c).sum() for c in np.unique(y[p])) + 1


def test_partition_scatters_a_class_in_small_pieces():
    """Sub-clusters of ~25 rows (s ~ U{2..|c|/25}) leave a client's rows of a class in small scattered pieces:
    wider within-class spread and a density that decays faster with the neighbourhood than s ~ U{2..5}."""
    from benchmarks import gold as B

    X = np.random.default_rng(0).normal(size=(1200, 2))
    y = np.repeat([0, 1, 2], 400)
    sizes = ([60] * 8, [1] * 8)
    new = [B.non_icd_partition(X, y, np.random.default_rng(s), sizes=sizes) for s in range(4)]
    old = [B.non_icd_partition(X, y, np.random.default_rng(s), sizes=sizes, sub_rows=None) for s in range(4)]
    assert np.mean([B.class_spread(p, X, y) for p in new]) > np.mean([B.class_spread(p, X, y) for p in old]) + 0.1

    def decay(parts):
        prof = B.density_profile(parts, X, y, (5, 100))
        return prof[100] / prof[5]

    assert np.mean([decay(p) for p in new]) < np.mean([decay(p) for p in old]) - 0.05
    rng = np.random.default_rng(1)
    assert {B._n_subclusters(400, rng, None) for _ in range(200)} == {2, 3, 4, 5}
    assert max(B._n_subclusters(400, rng, 25) for _ in range(200)) == 16
    whole = [np.flatnonzero(y == 0)]  # a client holding a whole class: density 1, spread 1
    assert B.density_profile(whole, X, y, (5, 100)) == {5: 1.0, 100: 1.0}
    assert abs(B.class_spread(whole, X, y) - 1.0) < 1e-12
