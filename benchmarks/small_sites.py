"""``python -m benchmarks small-sites``: does a small site ever get a package worse than its own model? (issue #15)

Protocol, per (data set, seed):
1. A public seed set of min(100, 10 %) stratified rows is removed; the anchor is extended SMOTE of it
   (r = 1000, k = 25, a = 1.5), as in ``python -m benchmarks dccfl``.
2. Six sites. Site i draws its training size nᵢ log-uniformly from [20, 500] and a label skew: 3 of the K
   classes (2 when K ≤ 3), mixed by p ~ Dir(1). It then draws nᵢ training rows and a test set of
   ``test_rows`` = 200 rows from the same class mix (rows without replacement; a pool that runs dry shrinks
   the draw). The test set is larger than the training set on purpose: it is the referee, not data the site has.
3. Each site runs the product's site step (PCA to m − 1, shuffle) and keeps its own-rows model (the
   multinomial logistic regression of :mod:`core.learn.local_model`, what ``participant apply --validate``
   compares with); the analyst runs ``DCCFL()`` (product defaults) on the bundles; each site applies its
   package to its test rows.
4. Per site: package accuracy − own-rows-model accuracy (pt). Targets: every site ≥ −2 pt, mean ≥ 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

DATASETS = ("heart_statlog", "dry_bean", "statlog_vehicle", "cardiotocography_10class", "landsat_satimage")
N_SITES = 6
ROWS = (20, 500)
TEST_ROWS = 200


def make_sites(X: np.ndarray, y: np.ndarray, seed: int, n_sites: int = N_SITES, rows=ROWS,
               test_rows: int = TEST_ROWS):
    """(anchor, [(X_train, y_train, X_test, y_test)], public row ids) for one seed (module docstring 1–2)."""
    from sklearn.model_selection import train_test_split

    from core.formats.anchor import extended_smote

    rng = np.random.default_rng([seed, 15])
    K = int(y.max()) + 1
    n_public = max(2 * K, min(100, len(y) // 10))
    rest, public = train_test_split(np.arange(len(y)), test_size=n_public, stratify=y,
                                    random_state=int(rng.integers(2**31)))
    anchor = extended_smote(X[public], 1000, k=25, a=1.5, rng=np.random.default_rng([seed, 16]))
    pools = {k: list(rng.permutation(rest[y[rest] == k])) for k in range(K)}
    per_site = 3 if K > 3 else 2
    budget = len(rest) // n_sites          # a small data set shrinks every site's share, never below 20 + 20
    test_rows = int(min(test_rows, max(20, budget // 2)))
    hi = int(min(rows[1], max(rows[0], budget - test_rows)))
    sites = []
    for _ in range(n_sites):
        n = int(round(np.exp(rng.uniform(np.log(rows[0]), np.log(hi))))) if hi > rows[0] else rows[0]
        cls = rng.choice(K, min(per_site, K), replace=False)
        p = rng.dirichlet(np.ones(len(cls)))
        draws = []
        for size in (n, test_rows):
            counts = rng.multinomial(size, p)
            idx = []
            for k, c in zip(cls, counts, strict=True):
                take = min(int(c), len(pools[k]))
                idx += [pools[k].pop() for _ in range(take)]
            draws.append(rng.permutation(np.asarray(idx, dtype=np.int64)))
        tr, te = draws
        if len(tr) >= max(5, X.shape[1]) and len(np.unique(y[tr])) >= 2 and len(te) > 0:
            sites.append((X[tr], y[tr], X[te], y[te]))
    return anchor, sites


def run_cell(name: str, X: np.ndarray, y: np.ndarray, classes: list[str], seed: int,
             settings: dict | None = None) -> dict[str, Any]:
    from core.learn.local_model import fit_local_model, local_predict_proba
    from core.methods.base import FitContext, ReceivedBundle, SiteInput
    from core.methods.dccfl import DCCFL

    anchor, sites = make_sites(X, y, seed)
    method = DCCFL(**{"seed": seed, **(settings or {})})
    bundles, private = [], []
    for i, (Xtr, ytr, _, _) in enumerate(sites):
        ex = method.site_compute(SiteInput(Xtr, ytr.astype(np.int64), classes, anchor, settings={"seed": [seed, i]}))
        bundles.append(ReceivedBundle(site=f"site-{i}", fingerprint="", digest=f"{seed}-{i}", envelope_id="",
                                      manifest=ex.manifest, arrays=ex.arrays))
        private.append({**ex.private_arrays, **fit_local_model(Xtr, ytr, len(classes))})  # as `participant export`
    t0 = time.perf_counter()
    result = method.fit(bundles, FitContext(classes))
    fit_s = time.perf_counter() - t0
    names = np.asarray(classes, dtype=object)
    rows = []
    for (manifest, arrays), priv, (Xtr, ytr, Xte, yte), x in zip(result.packages, private, sites,
                                                                  [s for s in _by_input(result)], strict=True):
        pkg = float(np.mean(method.apply(manifest, arrays, priv, Xte)["prediction"] == names[yte]))
        own = float(np.mean(local_predict_proba(fit_local_model(Xtr, ytr, len(classes)), Xte).argmax(1) == yte))
        rows.append({"train_rows": int(len(ytr)), "test_rows": int(len(yte)), "classes": sorted(set(ytr.tolist())),
                     "package": pkg, "own_model": own, "diff_pt": 100 * (pkg - own), "sent": manifest.get("model"),
                     "expected": x.get("expected", {}).get("accuracy"),
                     "expected_own": x.get("own_model", {}).get("accuracy")})
    return {"dataset": name, "seed": seed, "sites": rows, "t": result.summary["t"],
            "n_clusters": result.summary["n_clusters"], "fit_seconds": fit_s}


def _by_input(result) -> list[dict]:
    """The summary's per-site entries (canonical order) put back in the caller's bundle order."""
    order = result.details["site_order"]
    out = [None] * len(order)
    for j, i in enumerate(order):
        out[i] = result.summary["sites"][j]
    return out


def summarise(cells: list[dict]) -> dict:
    diffs = np.array([s["diff_pt"] for c in cells for s in c["sites"]])
    per_ds = {}
    for c in cells:
        per_ds.setdefault(c["dataset"], []).extend(s["diff_pt"] for s in c["sites"])
    return {"sites": int(diffs.size), "mean_diff_pt": float(diffs.mean()), "worst_diff_pt": float(diffs.min()),
            "sites_below_minus_2pt": int(np.sum(diffs < -2)),
            "mean_package": float(np.mean([s["package"] for c in cells for s in c["sites"]])),
            "mean_own_model": float(np.mean([s["own_model"] for c in cells for s in c["sites"]])),
            "per_dataset": {d: {"sites": len(v), "mean_diff_pt": float(np.mean(v)), "worst_diff_pt": float(np.min(v)),
                                "below_minus_2pt": int(np.sum(np.asarray(v) < -2))} for d, v in per_ds.items()}}


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from benchmarks.simulation.datasets import load_benchmark_csv
    from core.fileio import write_json_atomic

    datasets = args.dataset or list(DATASETS)
    seeds = list(range(int(args.seeds if args.seeds != 10 else 3)))
    cells = []
    t0 = time.perf_counter()
    for d in datasets:
        X, y, classes = load_benchmark_csv(d, args.data_dir)
        for seed in seeds:
            cell = run_cell(d, X, y, classes, seed)
            cells.append(cell)
            say(json.dumps({"dataset": d, "seed": seed, "t": cell["t"], "fit_seconds": round(cell["fit_seconds"], 1),
                            "sites": [(s["train_rows"], round(s["package"], 3), round(s["own_model"], 3), s["sent"])
                                      for s in cell["sites"]]}))
    out = {"summary": summarise(cells), "cells": cells, "seeds": seeds, "datasets": datasets,
           "wall_seconds": time.perf_counter() - t0}
    say(json.dumps(out["summary"], indent=1))
    if args.json:
        from pathlib import Path

        from core.fileio import write_text_atomic

        write_json_atomic(args.json, out)
        command = " ".join(["python -m benchmarks small-sites", f"--seeds {len(seeds)}",
                            *(f"--dataset {d}" for d in (args.dataset or [])), f"--json {args.json}"])
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out, command))
    return out


def markdown(out: dict, command: str) -> str:
    """The record: targets, the per-data-set summary, and every site whose package is > 2 pt below."""
    import os

    from benchmarks import machine

    s = out["summary"]
    lines = ["# Small sites: package vs the site's own-rows model (issue #15)", "",
             f"Command: `{command}`", "", f"Machine: {machine('torch')}; load average at the end "
             f"{os.getloadavg()[0]:.1f} (shared machine).", "", f"Wall time {out['wall_seconds'] / 60:.1f} min; "
             f"seeds {out['seeds']}.", "", (__doc__ or "").split("\n\n", 1)[1].strip(), "",
             "## Result", "",
             f"- sites: {s['sites']}; mean package − own-rows model: **{s['mean_diff_pt']:+.2f} pt** (target ≥ 0); "
             f"mean accuracy {s['mean_package']:.4f} vs {s['mean_own_model']:.4f}",
             f"- worst site: **{s['worst_diff_pt']:+.1f} pt**; sites more than 2 pt below their own model: "
             f"**{s['sites_below_minus_2pt']}** (target 0)", "",
             "| data set | sites | mean Δ (pt) | worst Δ (pt) | sites < −2 pt |", "|---|---:|---:|---:|---:|"]
    for d, v in s["per_dataset"].items():
        lines.append(f"| {d} | {v['sites']} | {v['mean_diff_pt']:+.2f} | {v['worst_diff_pt']:+.1f} | "
                     f"{v['below_minus_2pt']} |")
    lines += ["", "## Every site more than 2 pt below its own model", "",
              "| data set | seed | training rows | test rows | package | own model | sent | CV expected | CV own |",
              "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for c in out["cells"]:
        for x in c["sites"]:
            if x["diff_pt"] < -2:
                lines.append(f"| {c['dataset']} | {c['seed']} | {x['train_rows']} | {x['test_rows']} | "
                             f"{x['package']:.3f} | {x['own_model']:.3f} | {x['sent']} | "
                             f"{x['expected'] if x['expected'] is None else round(x['expected'], 3)} | "
                             f"{x['expected_own'] if x['expected_own'] is None else round(x['expected_own'], 3)} |")
    return "\n".join(lines) + "\n"
