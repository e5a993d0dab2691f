"""``python -m benchmarks feddag``: FedDAG in one round (:mod:`core.methods.feddag`) against DC, DC-CFL and PACFL.

Tabular stand-ins for the paper's image sets (absolute numbers are not comparable; orderings are):

* Distribution I (official ``flag-non-iid``): 5 client groups, each holds ρK labels (unselected labels first),
  every unassigned client joins group g with probability 1/(5−g); each class's training rows are split over
  its holders with Dirichlet(α′) proportions (≥ 1 row each). ρ ∈ {20 %, 30 %}, α′ ∈ {1, 0.25}.
* Distribution II (concept shift): an IID split; clients are dealt to three concepts y, K−1−y, (y+1) mod K
  (the labels of train and test rows alike), so label histograms cannot tell the concepts apart.
* B.10 replica: 11 distinct class pairs; each client gets one pair; a class's rows are split evenly over the
  pairs that contain it, then over the pair's clients with Dirichlet(1) proportions.

Each cell: 100 stratified public rows → anchor (extended SMOTE, r = 1000, k = 25, a = 1.5); the rest split
80/20 stratified into a training pool (partitioned) and a test pool; a client's test rows are every test-pool row
of the classes it holds (the official ``local_view``; concept shift: all test rows, relabelled by its concept).
Clients with fewer than m − 1 training rows cannot fit PCA to m − 1 and are dropped (counted). Sites run
DC-CFL's participant step; every DC-family row is fitted on the same bundles. Metric: balanced accuracy per
client (mean recall over the classes in its test rows), averaged over clients; mean ± sample std over seeds.
"""

from __future__ import annotations

import json
import os
import sys
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import bench_command, one_thread, worker_count
from benchmarks.dccfl import Cell, site_bundles
from benchmarks.simulation.datasets import load_cached
from core.api import __version__, write_json_atomic, write_text_atomic
from core.api.common import FitContext
from core.api.research import DC, DCCFL, BatchedMLP, derived_seed, extended_smote, site_map, site_order
from core.api.research import feddag_similarity as fd

OLD_RULE = "FedDAG* fused, α by best per site"   # the first record's α rule (alpha_rule = best_per_site), reported
ROWS = ["Local", "DC", "DC-CFL", "PACFL-style", "FedDAG* data", "FedDAG* gradient", "FedDAG* fused", "FedDAG†",
        "FedDAG", OLD_RULE]
CLUSTER_ROWS = ["DC-CFL", "PACFL-style", "FedDAG* data", "FedDAG* gradient", "FedDAG* fused", "FedDAG†", "FedDAG",
                OLD_RULE]
DIST_I = ["I20a1", "I20a0.25", "I30a1", "I30a0.25"]
CHOICES = [
    "Paper's image sets are unavailable: pendigits (10 classes) and letter_recognition (26) stand in; ρK is rounded "
    "(pendigits 2 / 3 labels per group, letter 5 / 8).",
    "All FedDAG similarity, warm-up, clustering and training run at the analyst on the DC-CFL bundle (aligned "
    "reduced rows + labels) in the common space of all sites (affine alignment, pooled standardisation).",
    "FedDAG* rows train one DC-CFL-style model per cluster (per-cluster alignment, MLP [64,32], 50 epochs, "
    "per-site prior correction); FedDAG† / FedDAG train dual encoders in the all-site common space where a cluster "
    "has a second encoder to train (FedDAG: a source cluster in the CC-graph; FedDAG†: always, on its own rows) "
    "and keep them only where they cross-validate better over the cluster's members than its one-encoder model.",
    "Selection as DC-CFL's product (issue #15), the same code: every distinct cluster over α ∈ {0.05, …, 1.0} "
    "(α = 1: one global model) and each site's own-rows model (a logistic regression) are cross-validated "
    "on the received rows (5-fold, repeated ⌈100 / median rows⌉ ≤ 3 times, prior-corrected); α maximises the mean "
    "over sites of the cluster model's accuracy, or the own model's where the site keeps it (DC-CFL's rule, "
    "alpha_rule = cluster), ties → larger α; only then is each site offered the global model (sent where it "
    "cross-validates better than its cluster's) and its own-rows model. The row 'FedDAG* fused, α by best per "
    "site' is the first record's rule (alpha_rule = best_per_site: each α scored with every site's better of "
    "its cluster's and the global model, so no finer α can score below α = 1), reported beside it. The paper's "
    "loss L = L1 + 0.01·L2 is reported with its own arg-min α.",
    "All FedDAG-engine rows of a cell (PACFL-style, FedDAG* ×3, FedDAG†, FedDAG) share one geometry and one "
    "cross-validation/final-model cache keyed by cluster members (same splits and seed), so a cluster that "
    "several rows consider is trained once; the dual encoders' cross-validation does not warm-start (the "
    "warm-up saw every row).",
    "PACFL-style row: top-3 left singular vectors of each site's whole uncentred aligned matrix, smallest angle "
    "between basis vectors, then the same HC grid, cross-validated α, per-site selection and cluster training as "
    "FedDAG*.",
    "Local: each client's own MLP on raw features standardised with one pooled scaler (as the DC-CFL bench).",
    "Concept-shift cell: IID split of the training pool (~87 rows per client), concepts dealt 34/33/33.",
]


def _code(text: str) -> int:
    return zlib.crc32(text.encode())


# ---------------------------------------------------------------------------------------------- partitions
def _dirichlet_sizes(n: int, k: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """The official ``split_array_dirichlet``: round(Dir(α)·n), at least 1, fixed up to sum n."""
    sizes = np.maximum(np.round(rng.dirichlet(np.full(k, float(alpha))) * n).astype(int), 1)
    while sizes.sum() != n:
        if sizes.sum() > n:
            sizes[np.argmax(sizes)] -= sizes.sum() - n
        else:
            sizes[np.argmin(sizes)] += n - sizes.sum()
    return sizes


def distribution_one(y: np.ndarray, n_clients: int, n_labels: int, alpha: float, rng: np.random.Generator,
                     groups: int = 5) -> tuple[list[np.ndarray], np.ndarray]:
    """Distribution I; returns (row indices per client, group of each client)."""
    K = int(y.max()) + 1
    contain: list[list[int]] = [[] for _ in range(n_clients)]
    group = np.full(n_clients, -1)
    selected: set[int] = set()
    for g in range(groups):
        unselected = sorted(set(range(K)) - selected)
        if len(unselected) >= n_labels:
            seq = rng.choice(unselected, n_labels, replace=False).tolist()
        elif unselected:
            rest = sorted(set(range(K)) - set(unselected))
            seq = unselected + rng.choice(rest, n_labels - len(unselected), replace=False).tolist()
        else:
            seq = [g % K] + rng.choice([c for c in range(K) if c != g % K], n_labels - 1, replace=False).tolist()
        selected.update(seq)
        for i in range(n_clients):
            if not contain[i] and rng.random() < 1.0 / (groups - g):
                contain[i] = list(seq)
                group[i] = g
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in range(K):
        holders = [i for i in range(n_clients) if c in contain[i]]
        if not holders:
            continue
        rows = rng.permutation(np.flatnonzero(y == c))
        for i, chunk in zip(holders, np.split(rows, np.cumsum(_dirichlet_sizes(len(rows), len(holders), alpha,
                                                                                rng))[:-1]), strict=True):
            parts[i].append(chunk)
    return [np.sort(np.concatenate(p)) if p else np.zeros(0, np.int64) for p in parts], group


def pairs_b10(y: np.ndarray, n_clients: int, n_pairs: int, rng: np.random.Generator,
              alpha: float = 1.0) -> tuple[list[np.ndarray], np.ndarray]:
    """The B.10 replica: ``n_pairs`` distinct class pairs, one per client."""
    K = int(y.max()) + 1
    allp = list(combinations(range(K), 2))
    pairs = [allp[k] for k in rng.choice(len(allp), n_pairs, replace=False)]
    group = rng.permutation(np.arange(n_clients) % n_pairs)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in range(K):
        with_c = [p for p, pr in enumerate(pairs) if c in pr]
        if not with_c:
            continue
        for p, rows in zip(with_c, np.array_split(rng.permutation(np.flatnonzero(y == c)), len(with_c)), strict=True):
            members = np.flatnonzero(group == p)
            for i, chunk in zip(members, np.split(rows, np.cumsum(_dirichlet_sizes(len(rows), len(members), alpha,
                                                                                    rng))[:-1]), strict=True):
                parts[i].append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts], group


def concept_map(concept: int, y: np.ndarray, K: int) -> np.ndarray:
    return y if concept == 0 else (K - 1 - y) if concept == 1 else (y + 1) % K


# ---------------------------------------------------------------------------------------------- cells
def make_cell(dataset: str, X: np.ndarray, y: np.ndarray, classes: list[str], split: str, seed: int,
              n_clients: int = 100) -> tuple[Cell, np.ndarray]:
    """A DC-CFL bench :class:`Cell` (clients' train rows, local-view test rows) plus each client's true group."""
    from sklearn.model_selection import train_test_split

    ss = np.random.SeedSequence([int(seed), _code(dataset), _code(split)])
    s_pub, s_anc, s_tt, s_part = (int(c.generate_state(1)[0]) for c in ss.spawn(4))
    rest, public = train_test_split(np.arange(len(y)), test_size=100, stratify=y, random_state=s_pub)
    anchor = extended_smote(X[public], 1000, k=25, a=1.5, rng=np.random.default_rng(s_anc))
    tr_pool, te_pool = train_test_split(rest, test_size=0.2, stratify=y[rest], random_state=s_tt)
    rng = np.random.default_rng(s_part)
    K = len(classes)
    ytr = y[tr_pool]
    concepts = np.zeros(n_clients, np.int64)
    if split.startswith("I") and split != "II":
        rho, alpha = split[1:].split("a")
        n_labels = max(1, int(round(int(rho) / 100 * K)))
        parts, group = distribution_one(ytr, n_clients, n_labels, float(alpha), rng)
    elif split == "II":
        parts = np.array_split(rng.permutation(len(ytr)), n_clients)
        group = rng.permutation(np.arange(n_clients) % 3)
        concepts = group
    elif split == "B10":
        parts, group = pairs_b10(ytr, n_clients, 11, rng)
    else:
        raise ValueError(f"unknown split {split}")
    m = X.shape[1]
    clients, kept, dropped = [], [], 0
    for i, q in enumerate(parts):
        if len(q) < max(5, m - 1):
            dropped += 1
            continue
        idx = tr_pool[q]
        yi = concept_map(int(concepts[i]), y[idx], K)
        if split == "II":
            te = te_pool
        else:
            te = te_pool[np.isin(y[te_pool], np.unique(y[idx]))]
        clients.append((X[idx], yi, X[te], concept_map(int(concepts[i]), y[te], K)))
        kept.append(i)
    cell = Cell(dataset, split, int(seed), list(classes), clients, anchor, dropped, 0)
    return cell, np.asarray(group)[kept]


def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean over the classes present in y_true of the recall of that class."""
    cls = np.unique(y_true)
    return float(np.mean([np.mean(y_pred[y_true == c] == c) for c in cls]))


def _ari(a, b) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(a, b))


def _labels(clusters, n) -> np.ndarray:
    lab = np.zeros(n, np.int64)
    for z, c in enumerate(clusters):
        lab[list(c)] = z
    return lab


def run_local(cell: Cell, seed: int) -> list[float]:
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(np.vstack([c[0] for c in cell.clients]))
    K = len(cell.classes)
    learner = BatchedMLP((64, 32), lr=0.01, momentum=0.5, batch_size=32, epochs=50, random_state=seed)
    learner.fit([(sc.transform(c[0]).astype(np.float32), c[1].astype(np.int64)) for c in cell.clients], K)
    return [balanced_accuracy(c[3], m.predict(sc.transform(c[2]).astype(np.float32)))
            for m, c in zip(learner.models_, cell.clients, strict=True)]


def run_cell(dataset: str, X: np.ndarray, y: np.ndarray, classes: list[str], split: str, seed: int
             ) -> dict[str, Any]:
    t_start, c_start = time.perf_counter(), time.process_time()
    cell, group = make_cell(dataset, X, y, classes, split, seed)
    bundles, private, site_s = site_bundles(cell)
    N, K = len(bundles), len(classes)
    xt = [site_map(p).transform(c[2]) for p, c in zip(private, cell.clients, strict=True)]
    counts = [np.bincount(b.arrays["y"], minlength=K) for b in bundles]
    out: dict[str, dict[str, Any]] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    out["Local"] = {"per_client": run_local(cell, seed), "seconds": time.perf_counter() - t0,
                    "cpu_seconds": time.process_time() - c0}
    index = {c: k for k, c in enumerate(classes)}
    for name, method in (("DC", DC(seed=seed)), ("DC-CFL", DCCFL(seed=seed))):
        t0, c0 = time.perf_counter(), time.process_time()
        res = method.fit(bundles, FitContext(classes))
        fit_s, fit_c = time.perf_counter() - t0, time.process_time() - c0
        accs = []
        for (man, arr), priv, c in zip(res.packages, private, cell.clients, strict=True):
            pred = method.apply(man, arr, priv, c[2])["prediction"]
            accs.append(balanced_accuracy(c[3], np.array([index[p] for p in pred])))
        rec = {"per_client": accs, "seconds": fit_s, "cpu_seconds": fit_c, "n_clusters": res.summary["n_clusters"],
               "t": res.summary["t"], "own_sites": res.summary.get("own_model_sites", 0)}
        if name == "DC-CFL":
            rec["ari"] = _ari(group, _labels(res.details["clusters"], N))
        out[name] = rec
    # The FedDAG-engine rows work as the methods do: canonical site order and DC-CFL's derived seed (so their
    # cross-validation splits are DC-CFL's and its linear own-rows fits are shared, core.learn.cluster_models).
    order = site_order(bundles)
    pos = np.argsort(order)            # pos[i]: client i's index in the canonical order
    canon = [bundles[j] for j in order]
    dseed = derived_seed(seed, canon)
    t0, c0 = time.perf_counter(), time.process_time()
    s0 = fd.settings_with(seed=dseed)
    geo = fd.geometry(canon, K, s0, with_pacfl=True)
    geo_s, geo_c = time.perf_counter() - t0, time.process_time() - c0
    specs = {"PACFL-style": dict(view="pacfl", encoder="single"),
             "FedDAG* data": dict(view="data", encoder="single"),
             "FedDAG* gradient": dict(view="gradient", encoder="single"),
             "FedDAG* fused": dict(view="fused", encoder="single"),
             "FedDAG†": dict(view="fused", encoder="dual", sharing=False),
             "FedDAG": dict(view="fused", encoder="dual", sharing=True),
             OLD_RULE: dict(view="fused", encoder="single", alpha_rule="best_per_site")}   # last: it adds to the cache
    cache: dict = {}   # one cross-validation and one set of final models shared by every row on these bundles
    for name, kw in specs.items():
        t0, c0 = time.perf_counter(), time.process_time()
        r = fd.fit(canon, classes, {"seed": dseed, **kw}, geo=geo, cache=cache)
        fit_s, fit_c = time.perf_counter() - t0, time.process_time() - c0
        accs = [balanced_accuracy(c[3], r.predict_proba(int(pos[i]), xt[i], counts[i]).argmax(axis=1))
                for i, c in enumerate(cell.clients)]
        lab = _labels(r.clusters, N)[pos]
        rec = {"per_client": accs, "seconds": fit_s, "cpu_seconds": fit_c, "alpha": r.alpha,
               "n_clusters": len(r.clusters), "ari": _ari(group, lab), "alpha_min_loss": r.alpha_min_loss,
               "n_clusters_min_loss": r.n_clusters[r.alpha_min_loss],
               "loss": {f"{a:g}": list(v) for a, v in r.loss.items()},
               "clusters_per_alpha": {f"{a:g}": v for a, v in r.n_clusters.items()},
               "curve": {f"{a:g}": v for a, v in r.curve.items()},
               "own_sites": sum(k in ("own", "linear") for k, _ in r.site_models),
               "global_sites": sum(k == "global" for k, _ in r.site_models),
               "dual_clusters": r.cluster_kind.count("dual"),
               "expected_mean": float(np.mean([x["expected"]["accuracy"] for x in r.site_info]))
               if all(x.get("expected") for x in r.site_info) else None}
        if r.weights is not None:
            rec["w_mean"] = float(np.mean(r.weights))
            rec["w_gradient_share"] = float(np.mean(r.weights > 0.5))
        if name in ("FedDAG†", "FedDAG"):
            rec["edges"] = sum(len(q) for q in r.sources)
            rec["dual_candidates"] = sum(1 for q in r.sources if q) if name == "FedDAG" else len(r.clusters)
        out[name] = rec
    # cluster recovery of each distance over the whole grid (B.10 target; reported everywhere)
    recovery = {}
    for view in ("data", "gradient", "fused", "pacfl"):
        M, _ = fd.view_matrix(geo, {**s0, "view": view})
        parts = fd.partitions(M, list(fd.ALPHA_GRID), s0["linkage"])
        recovery[view] = {f"{a:g}": [int(lab.max()) + 1, _ari(group, lab[pos])] for a, lab in parts.items()}
    for rec in out.values():
        rec["balanced_accuracy"] = float(np.mean(rec["per_client"]))
    return {"dataset": dataset, "split": split, "seed": seed, "clients": N, "dropped": cell.dropped_partition,
            "groups": int(len(np.unique(group))), "participant_seconds": site_s, "geometry_seconds": geo_s,
            "geometry_cpu_seconds": geo_c, "cpu_seconds": time.process_time() - c_start,
            "geometry_parts": geo.seconds, "recovery": recovery,
            "methods": {k: {kk: vv for kk, vv in v.items() if kk != "per_client"} for k, v in out.items()},
            "seconds": time.perf_counter() - t_start}


def _task(dataset: str, data_dir: str | None, split: str, seed: int) -> dict[str, Any]:
    X, y, classes = load_cached(dataset, data_dir)
    with one_thread():
        return run_cell(dataset, X, y, classes, split, seed)


def measure_timing(dataset: str, split: str, data_dir: str | None, seed: int = 0) -> dict[str, Any]:
    """Analyst time of ``dccfl`` and of ``feddag`` (its default, FedDAG*, and ``encoder = dual``, FedDAG) on the
    same bundles, through the methods' ``fit`` (canonical order, derived seed), one thread; wall and CPU
    seconds. The ratio uses CPU time (load-independent on a shared machine; user + sys of the process)."""
    from core.api.research import FedDAG

    X, y, classes = load_cached(dataset, data_dir)
    with one_thread():
        cell, _ = make_cell(dataset, X, y, classes, split, seed)
        bundles, _, _ = site_bundles(cell)
        out: dict[str, Any] = {"measured_on": f"{dataset} {split} seed {seed}, {len(bundles)} sites, one thread"}
        fits = {"dccfl": lambda: DCCFL(seed=seed), "feddag": lambda: FedDAG(seed=seed),
                "feddag_dual": lambda: FedDAG(seed=seed, encoder="dual")}
        for name, make in fits.items():
            t0, c0 = time.perf_counter(), time.process_time()
            make().fit(bundles, FitContext(classes))
            out[f"{name}_seconds"] = time.perf_counter() - t0
            out[f"{name}_cpu_seconds"] = time.process_time() - c0
        out["ratio"] = out["feddag_cpu_seconds"] / out["dccfl_cpu_seconds"]
        out["ratio_dual"] = out["feddag_dual_cpu_seconds"] / out["dccfl_cpu_seconds"]
        return out


# ---------------------------------------------------------------------------------------------- summary
def _ms(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def summarise(cells: list[dict]) -> list[dict]:
    rows = []
    for key in sorted({(c["dataset"], c["split"]) for c in cells}):
        g = sorted((c for c in cells if (c["dataset"], c["split"]) == key), key=lambda c: c["seed"])
        for name in ROWS:
            vals = [c["methods"][name]["balanced_accuracy"] for c in g]
            m, s = _ms(vals)
            row = {"dataset": key[0], "split": key[1], "method": name, "mean": m, "std": s, "values": vals,
                   "seconds": float(np.mean([c["methods"][name]["seconds"] for c in g]))}
            cpu = [c["methods"][name].get("cpu_seconds") for c in g]
            row["cpu_seconds"] = float(np.mean(cpu)) if all(v is not None for v in cpu) else None
            if name in CLUSTER_ROWS:
                row["own_sites"] = [c["methods"][name].get("own_sites", 0) for c in g]
                row["global_sites"] = [c["methods"][name].get("global_sites", 0) or 0 for c in g]
                row["dual"] = [c["methods"][name].get("dual_clusters", 0) or 0 for c in g]
                row["n_clusters"] = [c["methods"][name]["n_clusters"] for c in g]
                row["ari"] = [round(c["methods"][name]["ari"], 3) for c in g]
            rows.append(row)
    return rows


def plateau(rec: dict[str, list], thr: float = 0.95) -> tuple[int, list[str]]:
    """Longest run of consecutive grid α whose ARI ≥ thr, and those α."""
    best, cur, run_best, run = 0, 0, [], []
    for a, (_, ari) in rec.items():
        if ari >= thr:
            cur += 1
            run.append(a)
            if cur > best:
                best, run_best = cur, list(run)
        else:
            cur, run = 0, []
    return best, run_best


def checks(result: dict) -> list[str]:
    rows = {(r["dataset"], r["split"], r["method"]): r for r in result["rows"]}
    cells = result["cells"]
    out = []
    for c in (c for c in cells if c["split"] == "B10"):
        n, run = plateau(c["recovery"]["data"])
        out.append(f"B.10 {c['dataset']} seed {c['seed']}: data distance ARI ≥ 0.95 on {n} consecutive α "
                   f"({', '.join(run) or 'none'}) — target ≥ 2: {'PASS' if n >= 2 else 'FAIL'}")
    for (d, s, m), r in rows.items():
        if s == "II" and m == "FedDAG* fused":
            diff = r["mean"] - rows[(d, s, "DC-CFL")]["mean"]
            out.append(f"Concept shift {d}: FedDAG* fused − DC-CFL = {100 * diff:+.2f} pt (target ≥ +5): "
                       f"{'PASS' if diff >= 0.05 else 'FAIL'}")
    for (d, s, m), r in rows.items():
        if s.startswith("I") and s != "II" and m == "FedDAG* fused":
            dc = rows[(d, s, "DC-CFL")]["mean"]
            pa = rows[(d, s, "PACFL-style")]["mean"]
            full = rows[(d, s, "FedDAG")]["mean"]
            data = rows[(d, s, "FedDAG* data")]["mean"]
            out.append(f"Dist I {d} {s}: FedDAG* − DC-CFL {100 * (r['mean'] - dc):+.2f} pt (≥ −1: "
                       f"{'PASS' if r['mean'] >= dc - 0.01 else 'FAIL'}); FedDAG* − PACFL-style "
                       f"{100 * (r['mean'] - pa):+.2f} pt (≥ 0: {'PASS' if r['mean'] >= pa else 'FAIL'}); FedDAG − "
                       f"FedDAG* {100 * (full - r['mean']):+.2f} pt (≥ 0: {'PASS' if full >= r['mean'] else 'FAIL'}); "
                       f"fused − data-only {100 * (r['mean'] - data):+.2f} pt (reported)"
                       + (f"; FedDAG* − the first record's α rule "
                          f"{100 * (r['mean'] - rows[(d, s, OLD_RULE)]['mean']):+.2f} pt (reported)"
                          if (d, s, OLD_RULE) in rows else ""))
    t = result.get("timing")
    if t and "feddag_cpu_seconds" in t:
        out.append(f"Analyst CPU time ({t['measured_on']}): feddag (default, FedDAG*) {t['feddag_cpu_seconds']:.2f} s "
                   f"vs dccfl {t['dccfl_cpu_seconds']:.2f} s = {t['ratio']:.2f}× (target ≤ 3×): "
                   f"{'PASS' if t['ratio'] <= 3 else 'FAIL'}; encoder = dual (FedDAG) "
                   f"{t['feddag_dual_cpu_seconds']:.2f} s = {t['ratio_dual']:.2f}× "
                   f"({'PASS' if t['ratio_dual'] <= 3 else 'FAIL'}); wall {t['feddag_seconds']:.2f} / "
                   f"{t['feddag_dual_seconds']:.2f} / {t['dccfl_seconds']:.2f} s")
    return out


def markdown(result: dict) -> str:
    rows = result["rows"]
    cols = list(dict.fromkeys((r["dataset"], r["split"]) for r in rows))
    by = {(r["dataset"], r["split"], r["method"]): r for r in rows}
    out = [f"# FedDAG in one round — {result['status']}", "", f"Command: `{result['command']}`", "",
           f"Machine: {result['machine']}", "",
           f"DC Studio {result['version']}; seeds {result['seed_list']}; wall time {result['wall_seconds'] / 60:.1f} "
           f"min ({result['jobs']} worker(s)); CPU time of the cells {result.get('cpu_seconds', 0) / 60:.1f} min "
           f"(user + sys, summed over the workers); finished {result['finished']}.", "",
           "## Balanced accuracy per client (mean over clients; mean ± sample std over seeds)", "",
           "| Method | " + " | ".join(f"{d} {s}" for d, s in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in ROWS:
        out.append(f"| {m} | " + " | ".join(f"{by[(d, s, m)]['mean']:.4f} ± {by[(d, s, m)]['std']:.4f}"
                                              if (d, s, m) in by else "" for d, s in cols) + " |")
    out += ["", "## Clusters picked per seed (count / ARI against the planted groups)", "",
            "| Method | " + " | ".join(f"{d} {s}" for d, s in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in CLUSTER_ROWS:
        out.append(f"| {m} | " + " | ".join(
            " ".join(f"{n}/{a:.2f}" for n, a in zip(by[(d, s, m)]["n_clusters"], by[(d, s, m)]["ari"], strict=True))
            if (d, s, m) in by else "" for d, s in cols) + " |")
    out += ["", "## Analyst wall seconds per fit (mean over seeds; FedDAG rows share one geometry and one "
            "cross-validation cache, so a later row costs only what it adds)", "",
            "| Method | " + " | ".join(f"{d} {s}" for d, s in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in ROWS:
        out.append(f"| {m} | " + " | ".join(f"{by[(d, s, m)]['seconds']:.1f}" if (d, s, m) in by else ""
                                              for d, s in cols) + " |")
    out += ["", "## Analyst CPU seconds per fit (mean over seeds; user + sys of the worker process)", "",
            "| Method | " + " | ".join(f"{d} {s}" for d, s in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in ROWS:
        out.append(f"| {m} | " + " | ".join(f"{by[(d, s, m)]['cpu_seconds']:.1f}" if (d, s, m) in by
                                              and by[(d, s, m)].get("cpu_seconds") is not None else ""
                                              for d, s in cols) + " |")
    out += ["", "## Sites sent their own-rows model / sent the global model / clusters with a dual encoder "
            "(per seed)", "",
            "| Method | " + " | ".join(f"{d} {s}" for d, s in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in CLUSTER_ROWS:
        out.append(f"| {m} | " + " | ".join(
            " ".join(f"{o}/{gl}/{z}" for o, gl, z in zip(by[(d, s, m)].get("own_sites", []),
                                                         by[(d, s, m)].get("global_sites", []),
                                                         by[(d, s, m)].get("dual", []), strict=False))
            if (d, s, m) in by else "" for d, s in cols) + " |")
    geo = {(c["dataset"], c["split"]): [] for c in result["cells"]}
    for c in result["cells"]:
        geo[(c["dataset"], c["split"])].append(c["geometry_seconds"])
    out.append("| (geometry: alignment, V, warm-up, G, P) | " + " | ".join(
        f"{np.mean(geo[k]):.1f}" for k in cols) + " |")
    out += ["", "## Paper's loss: α it would pick (arg-min L) vs the cross-validated α (FedDAG* fused, per seed)",
            ""]
    for c in result["cells"]:
        f = c["methods"]["FedDAG* fused"]
        out.append(f"- {c['dataset']} {c['split']} seed {c['seed']}: cross-validated α {f['alpha']:g} → "
                   f"{f['n_clusters']} clusters; arg-min L α {f['alpha_min_loss']:g} → {f['n_clusters_min_loss']} "
                   "clusters; "
                   f"mean w {f.get('w_mean', float('nan')):.2f} (share of clients with w > 0.5: "
                   f"{f.get('w_gradient_share', float('nan')):.2f})")
    out += ["", "## Recovery of the planted groups by each distance over the α grid (seed 0 of each cell)", ""]
    for c in result["cells"]:
        if c["seed"] != min(x["seed"] for x in result["cells"] if x["split"] == c["split"]
                            and x["dataset"] == c["dataset"]):
            continue
        out.append(f"### {c['dataset']} {c['split']} ({c['groups']} groups, {c['clients']} clients)")
        out.append("")
        out.append("| α | " + " | ".join(f"{v} Z / ARI" for v in c["recovery"]) + " |")
        out.append("|---|" + "---|" * len(c["recovery"]))
        for a in c["recovery"]["data"]:
            out.append(f"| {a} | " + " | ".join(f"{c['recovery'][v][a][0]} / {c['recovery'][v][a][1]:.2f}"
                                                for v in c["recovery"]) + " |")
        out.append("")
    out += ["## Targets", "", *[f"- {x}" for x in result["checks"]], ""]
    if result.get("timing"):
        out += ["## Timing", "", "```json", json.dumps(result["timing"], indent=1), "```", ""]
    out += ["## Choices", "", *[f"- {c}" for c in CHOICES], "",
            "## Cells", "", "| data set | split | seed | clients kept | dropped (< m−1 rows) | seconds |",
            "|---|---|---|---|---|---|"]
    for c in result["cells"]:
        out.append(f"| {c['dataset']} | {c['split']} | {c['seed']} | {c['clients']} | {c['dropped']} | "
                   f"{c['seconds']:.0f} |")
    return "\n".join(out) + "\n"


def machine() -> str:
    from benchmarks import machine as describe

    return describe("torch")


def run(datasets: list[str], splits: list[str], seeds: list[int], *, data_dir: str | None = None, jobs: int = 1,
        json_path: str | None = None, command: str = "", say: Callable[[str], None] = print,
        timing: tuple[str, str] | None = ("pendigits", "I30a0.25"), resume: bool = False) -> dict[str, Any]:
    # Seed-major order, so that a run stopped early has every cell at its first seed(s).
    tasks = [(d, s, seed) for seed in seeds for d in datasets for s in splits
             if not (s in ("II", "B10") and d != datasets[0])]
    started = time.perf_counter()
    cells: list[dict] = []
    log = Path(json_path).with_name(Path(json_path).stem + "_cells.jsonl") if json_path else None
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        if resume and log.exists():   # keep the cells a stopped run finished; run only the others
            cells = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            have = {(c["dataset"], c["split"], c["seed"]) for c in cells}
            cells = [c for c in cells if (c["dataset"], c["split"], c["seed"]) in set(tasks)]
            tasks = [t for t in tasks if t not in have]
            say(f"resuming: {len(cells)} cell(s) kept, {len(tasks)} to run")
        else:
            log.write_text("")

    def done(rec: dict) -> None:
        cells.append(rec)
        if log:
            with log.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
        say(f"[{len(cells)}] {rec['dataset']} {rec['split']} seed {rec['seed']}: " + ", ".join(
            f"{k} {v['balanced_accuracy']:.4f}" for k, v in rec["methods"].items()) + f" ({rec['seconds']:.0f} s)")

    timed: dict[str, Any] = {}
    if jobs <= 1:
        for t in tasks:
            done(_task(t[0], data_dir, t[1], t[2]))
        if timing:
            say("timing the analyst step ...")
            timed = measure_timing(timing[0], timing[1], data_dir)
    else:
        import multiprocessing as mp

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            # the analyst timing runs first, beside the cells, so that it does not form the run's tail
            tfut = pool.submit(measure_timing, timing[0], timing[1], data_dir) if timing else None
            futs = [pool.submit(_task, d, data_dir, s, seed) for d, s, seed in tasks]
            for f in as_completed(futs):
                done(f.result())
            if tfut is not None:
                timed = tfut.result()
    result: dict[str, Any] = {"experiment": "feddag", "version": __version__, "machine": machine(),
                              "command": command, "status": "complete", "jobs": jobs, "seed_list": seeds,
                              "finished": datetime.now(UTC).isoformat(timespec="seconds"),
                              "defaults": fd.DEFAULTS, "choices": CHOICES}
    result["cells"] = sorted(cells, key=lambda c: (c["dataset"], c["split"], c["seed"]))
    result["rows"] = summarise(cells)
    if timed:
        result["timing"] = timed
    result["wall_seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = float(sum(c.get("cpu_seconds", 0.0) for c in cells))
    result["checks"] = checks(result)
    if json_path:
        write_json_atomic(json_path, result)
        write_text_atomic(Path(json_path).with_suffix(".md"), markdown(result))
    return result


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks feddag [--dataset D]… [--seeds N] [--quick] [--json FILE]``; workers: DCSTUDIO_BENCH_JOBS;
    ``DCSTUDIO_BENCH_RESUME=1`` keeps the cells already in ``X_cells.jsonl`` and runs only the missing ones."""
    datasets = args.dataset or ["pendigits", "letter_recognition"]
    if args.quick:
        datasets, splits, seeds = datasets[:1], ["I30a0.25", "II", "B10"], [0]
    else:
        splits, seeds = [*DIST_I, "II", "B10"], list(range(args.seeds))
    jobs = worker_count()
    parts = [bench_command("feddag", args)]
    result = run(datasets, splits, seeds, data_dir=args.data_dir, jobs=jobs, json_path=args.json,
                 command=" ".join(parts) + f"  (as invoked: {' '.join(getattr(sys, 'orig_argv', sys.argv))})",
                 say=say, resume=os.environ.get("DCSTUDIO_BENCH_RESUME") == "1")
    say(markdown(result))
    return result


def rerender(json_path: str, *, status: str = "partial", command: str = "", wall_seconds: float | None = None,
             jobs: int = 2, timing: dict | None = None) -> dict[str, Any]:
    """Rebuild the record (JSON + markdown) from ``X_cells.jsonl``, e.g. for a run stopped before its end."""
    path = Path(json_path)
    log = path.with_name(path.stem + "_cells.jsonl")
    cells = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    seeds = sorted({c["seed"] for c in cells})
    result: dict[str, Any] = {"experiment": "feddag", "version": __version__, "machine": machine(),
                              "command": command, "status": status, "jobs": jobs, "seed_list": seeds,
                              "finished": datetime.now(UTC).isoformat(timespec="seconds"), "defaults": fd.DEFAULTS,
                              "choices": CHOICES,
                              "cells": sorted(cells, key=lambda c: (c["dataset"], c["split"], c["seed"])),
                              "rows": summarise(cells), "wall_seconds": wall_seconds or 0.0,
                              "cpu_seconds": float(sum(c.get("cpu_seconds", 0.0) for c in cells))}
    if timing:
        result["timing"] = timing
    result["checks"] = checks(result)
    write_json_atomic(path, result)
    write_text_atomic(path.with_suffix(".md"), markdown(result))
    return result
