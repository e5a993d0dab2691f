"""Variants of GOLD's k-means server step on the same shipped averages (docs/results/gold/README.md §5,
"Choosing among the restarts"): the bench's partitions (``benchmarks.gold_server``, seeds 0–4, k given), the
product's site step run once per partition, then every analyst step below on what the sites shipped. Score:
ARI of every site's rows against their kind; mean over the partition seeds; analyst seed 0.

``python -m benchmarks.records.gold.server_step_variants [--analyst-seeds N]`` (N > 1: the mean over analyst
seeds 0..N−1 as well). About a minute, one thread.

Reweighting: √count, log(1 + count), counts capped at their median or twice it. Seeding: farthest-first from
the heaviest average (k-FED's server seeding) then Lloyd; k-means++ drawing ∝ w (D² + σ̄²), σ̄² the rows' mean
squared distance to their average (the spread inside each micro-cluster). Choice among runs: the rows' sum of
squares (= the averages' count-weighted one plus a constant), the rows' estimated silhouette, with or without
a farthest-first candidate and a tie band.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from benchmarks import gold_server as S
from core.api.common import ReceivedBundle, SiteInput, get_method
from core.api.research import gold_cpl as G
from core.api.research import site_order


def shipped(name: str, seed: int) -> dict:
    """What the analyst receives on one partition, in the analyst's canonical site order: the standardised
    averages T, their counts w, σ̄², k, the kinds of the rows and each row's index into T."""
    X, y, parts = S.wine_sites(seed) if name == "wine" else S.gold_sites(name, seed, None)
    parts = [p for p in parts if len(p) >= S.MIN_SITE_ROWS]
    m = get_method("gold", {})
    exports, bundles = [], []
    for i, p in enumerate(parts):
        ex = m.site_compute(SiteInput(X[p], None, [], None, settings=m.check_site_settings({"seed": i})))
        exports.append(ex)
        bundles.append(ReceivedBundle(f"site{i}", "", "", "", {**ex.manifest, "method": m.name}, dict(ex.arrays)))
    order = site_order(bundles)
    sites = [G.SiteResult(exports[i].arrays["centroids"], exports[i].arrays["counts"], np.zeros(0, np.int64),
                          {"n": np.array([float(len(parts[i]))]), "sum": exports[i].arrays["col_sum"],
                           "sumsq": exports[i].arrays["col_sumsq"]}, 0, 0, 0, 0, 0, 0) for i in order]
    mean, std = G.pooled_scaler([s.stats for s in sites])
    T = np.vstack([(s.centroids - mean) / std for s in sites])
    w = np.concatenate([s.counts for s in sites]).astype(np.float64)
    offsets = np.cumsum([0] + [len(s.counts) for s in sites])
    rows = np.concatenate([offsets[pos] + exports[i].private_arrays["micro_labels"] for pos, i in enumerate(order)])
    return {"T": T, "w": w, "k": int(len(np.unique(y))), "spread2": G.within_spread(sites, mean, std, T, w),
            "kinds": np.concatenate([y[parts[i]] for i in order]), "rows": rows}


def _lloyd(T: np.ndarray, w: np.ndarray | None, start: np.ndarray) -> KMeans:
    return KMeans(len(start), init=start, n_init=1).fit(T, sample_weight=w)


def _runs(c: dict, seed: int, fit_w: np.ndarray | None, farthest: bool, n: int = 10) -> list[KMeans]:
    states = np.random.default_rng(seed).integers(2**31 - 1, size=n)
    runs = [KMeans(c["k"], n_init=1, random_state=int(s)).fit(c["T"], sample_weight=fit_w) for s in states]
    start = G.farthest_first(c["T"], c["w"], c["k"]) if farthest else None
    return runs + ([_lloyd(c["T"], fit_w, start)] if start is not None else [])


def _sse(c: dict, lab: np.ndarray) -> float:
    T, w = c["T"], c["w"]
    return sum(float((w[lab == j, None] * (T[lab == j] - np.average(T[lab == j], axis=0, weights=w[lab == j]))
                      ** 2).sum()) for j in np.unique(lab))


def _by_silhouette(c: dict, runs: list[KMeans], tie: float) -> np.ndarray:
    sil = np.array([G.weighted_silhouette(c["T"], r.labels_, c["w"], c["spread2"]) for r in runs])
    tied = np.flatnonzero(sil >= sil.max() - tie)
    return runs[min(tied, key=lambda i: (_sse(c, runs[i].labels_), i))].labels_


def _by_sse(c: dict, runs: list[KMeans]) -> np.ndarray:
    return min(runs, key=lambda r: _sse(c, r.labels_)).labels_


def _spread_pp(c: dict, seed: int) -> np.ndarray:
    """k-means++ drawing each next start ∝ w_i (D_i² + σ̄²), count-weighted Lloyd; least sum of 10 runs."""
    T, w, k, rng, runs = c["T"], c["w"], c["k"], np.random.default_rng(seed), []
    for _ in range(10):
        idx = [int(rng.choice(len(T), p=w / w.sum()))]
        d2 = ((T - T[idx[0]]) ** 2).sum(1)
        while len(idx) < k:
            p = w * (d2 + c["spread2"])
            p[idx] = 0.0
            j = int(rng.choice(len(T), p=p / p.sum()))
            idx.append(j)
            d2 = np.minimum(d2, ((T - T[j]) ** 2).sum(1))
        runs.append(_lloyd(T, w, T[idx]))
    return _by_sse(c, runs)


def _weighted(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict, int], np.ndarray]:
    return lambda c, s: G.kmeans_server(c["T"], f(c["w"]), c["k"], s)


VARIANTS: dict[str, Callable[[dict, int], np.ndarray]] = {
    "first pass: count-weighted, least sum of squares of 10 k-means++ runs": _weighted(lambda w: w),
    "unweighted": lambda c, s: G.kmeans_server(c["T"], None, c["k"], s),
    "weights √count": _weighted(np.sqrt),
    "weights log(1 + count)": _weighted(np.log1p),
    "counts capped at their median": _weighted(lambda w: np.minimum(w, np.median(w))),
    "counts capped at twice their median": _weighted(lambda w: np.minimum(w, 2 * np.median(w))),
    "farthest-first from the heaviest average, count-weighted Lloyd":
        lambda c, s: _lloyd(c["T"], c["w"], G.farthest_first(c["T"], c["w"], c["k"])).labels_,
    "the same, unweighted Lloyd": lambda c, s: _lloyd(c["T"], None, G.farthest_first(c["T"], c["w"], c["k"])).labels_,
    "k-means++ drawing ∝ w (D² + σ̄²)": _spread_pp,
    "unweighted runs, kept by the rows' sum of squares": lambda c, s: _by_sse(c, _runs(c, s, None, False)),
    "10 k-means++ runs kept by the rows' estimated silhouette":
        lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], False), 0.0),
    "+ the farthest-first run": lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], True), 0.0),
    "+ silhouettes within .001 tie (the product: separated_kmeans)":
        lambda c, s: G.separated_kmeans(c["T"], c["w"], c["k"], s, c["spread2"]),
    "the same, tie within .005": lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], True), 0.005),
    "the same, tie within .01": lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], True), 0.01),
    "kept rule without the farthest-first run, 10 k-means++ runs":
        lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], False), G.SILHOUETTE_TIE),
    "kept rule without the farthest-first run, 20 k-means++ runs":
        lambda c, s: _by_silhouette(c, _runs(c, s, c["w"], False, 20), G.SILHOUETTE_TIE),
}


def main(analyst_seeds: int = 1) -> None:
    with threadpool_limits(1):
        data = {(name, seed): shipped(name, seed) for name in S.CASES for seed in range(5)}
        print("| analyst step on the same averages | " + " | ".join(S.CASES) + " |")
        print("|---|" + "---|" * len(S.CASES))
        for label, step in VARIANTS.items():
            means = []
            for name in S.CASES:
                scores = [adjusted_rand_score(c["kinds"], step(c, a)[c["rows"]])
                          for (n, _), c in data.items() if n == name for a in range(analyst_seeds)]
                means.append(f"{np.mean(scores):.3f}")
            print(f"| {label} | " + " | ".join(means) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[args.index("--analyst-seeds") + 1]) if "--analyst-seeds" in args else 1)
