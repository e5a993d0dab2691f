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

Issue #25: every registered classification method (the registry, :func:`classification_methods`), each site
exported as ``participant export`` does (the promise's check rows for site-scored methods, ``own_cv`` in the
manifest, the own-rows model kept) and each package applied through the seam
(:func:`core.methods.promise.promised_columns`: the analyst's or the site's choice); and a wide table (``digits``,
sklearn's 8 × 8 hand-written digits, 64 columns) at sites of 25–60 rows, reduced to the kit's ``dimension`` 15.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

DATASETS = ("heart_statlog", "dry_bean", "statlog_vehicle", "cardiotocography_10class", "landsat_satimage")
ISSUE_TABLES = ("statlog_vehicle", "cardiotocography_10class")  # issue #25's tables (with digits, below)
N_SITES = 6
ROWS = (20, 500)
TEST_ROWS = 200


def make_sites(X: np.ndarray, y: np.ndarray, seed: int, n_sites: int = N_SITES, rows=ROWS,
               test_rows: int = TEST_ROWS, min_rows: int | None = None):
    """(anchor, [(X_train, y_train, X_test, y_test)]) for one seed (module docstring 1–2); a site with fewer than
    ``min_rows`` training rows (default: the table's columns, what PCA to m − 1 needs) is left out."""
    from sklearn.model_selection import train_test_split

    from core.api.research import extended_smote

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
        enough = len(tr) >= max(5, X.shape[1] if min_rows is None else min_rows)
        if enough and len(np.unique(y[tr])) >= 2 and len(te) > 0:
            sites.append((X[tr], y[tr], X[te], y[te]))
    return anchor, sites


def classification_methods() -> list[str]:
    """Every registered classification method (the registry, not a list kept here)."""
    from core.api.common import METHODS

    return [name for name, cls in METHODS.items() if cls.task == "classification"]


def export_site(method, X: np.ndarray, y: np.ndarray, classes: list[str], anchor: np.ndarray | None,
                settings: dict):
    """What ``participant export`` makes of a site's rows, in memory: the method's export with the promise's check
    rows (:func:`core.methods.promise.export_with_check`), the ``own_cv`` scores in the manifest and the own-rows
    model in the private state. Returns (manifest, arrays, private arrays)."""
    from core.api.common import SiteInput
    from core.api.research import export_with_check, own_model_state

    known = {st.name for st in method.site_settings_spec()}
    site = SiteInput(X, y.astype(np.int64), classes, anchor if method.needs_anchor else None,
                     settings={k: v for k, v in settings.items() if k in known})
    ex = export_with_check(method, site)
    cv, private = own_model_state(method, X, y.astype(np.int64), len(classes), settings=site.settings)
    manifest = {**ex.manifest, "method": method.name, "family": method.family, **({"own_cv": cv} if cv else {})}
    return manifest, ex.arrays, {**ex.private_arrays, **private}


def run_round(method, sites: list, classes: list[str], anchor: np.ndarray | None, seed: int,
              site_settings: dict | None = None) -> tuple[list[dict], Any, float]:
    """One in-memory round of ``method`` over ``sites`` [(X_train, y_train, X_test, y_test)]: per site the applied
    result's and the own model's test accuracy, what was used and who chose (:mod:`core.methods.promise`), and
    the summary's "alone" number beside the bundle's own_cv; also the result and the fit's seconds."""
    from core.api.common import FitContext, ReceivedBundle
    from core.api.research import local_predict_proba, promised_columns

    bundles, state = [], []
    for i, (Xtr, ytr, _, _) in enumerate(sites):
        manifest, arrays, private = export_site(method, Xtr, ytr, classes, anchor,
                                                {"seed": seed * 100 + i, **(site_settings or {})})
        bundles.append(ReceivedBundle(site=f"site-{i}", fingerprint="", digest=f"{seed}-{i}", envelope_id="",
                                      manifest=manifest, arrays=arrays))
        state.append(private)
    t0 = time.perf_counter()
    result = method.fit(bundles, FitContext(classes))
    fit_s = time.perf_counter() - t0
    entries = {x["site"]: x for x in result.summary.get("sites", [])}
    names = np.asarray(classes, dtype=object)
    rows = []
    for b, (manifest, arrays), private, (_, ytr, Xte, yte) in zip(bundles, result.packages, state, sites,
                                                                     strict=True):
        columns, choice = promised_columns(method, manifest, private, Xte,
                                           lambda r, m=manifest, a=arrays, p=private: method.apply(m, a, p, r),
                                           arrays=arrays)
        pkg_ok = np.asarray(columns["prediction"], dtype=object) == names[yte]
        own_ok = local_predict_proba(private, Xte).argmax(1) == yte
        x = entries.get(b.site, {})
        cv = b.manifest.get("own_cv") or {}
        sent_ok = np.asarray(method.apply(manifest, arrays, private, Xte)["prediction"], dtype=object) == names[yte]
        rows.append({"train_rows": int(len(ytr)), "test_rows": int(len(yte)), "classes": sorted(set(ytr.tolist())),
                     "package": float(pkg_ok.mean()), "own_model": float(own_ok.mean()),
                     "diff_pt": 100 * float(pkg_ok.mean() - own_ok.mean()),
                     "sent": "own" if manifest.get("model") == "own" else "cluster",
                     "used": (choice or {}).get("model"), "chosen_by": (choice or {}).get("by"),
                     "expected": (x.get("expected") or {}).get("accuracy"),
                     "expected_own": (x.get("own_model") or {}).get("accuracy"),
                     "own_cv": cv.get("accuracy"), "right": pkg_ok, "own_right": own_ok,
                     # the site's own choice (core.learn.site_update): what it uses, on how many paired rows
                     **({"kind": choice["kind"], "weight": choice["weight"], "paired_rows": choice["rows"],
                         "paired_on": choice["paired_on"]} if choice and "kind" in choice else {}),
                     "as_sent": float(sent_ok.mean())})
    return rows, result, fit_s


def run_cell(name: str, X: np.ndarray, y: np.ndarray, classes: list[str], seed: int,
             settings: dict | None = None, method: str = "dccfl", rows=ROWS, site_settings: dict | None = None
             ) -> dict[str, Any]:
    from core.api.common import get_method
    from core.api.research import CHECK_SHARE

    # a site is kept when every method can reduce it: after a site-scored method's check rows, still ≥ m + 1 rows
    least = rows[0] if site_settings else int(np.ceil((X.shape[1] + 1) / (1 - CHECK_SHARE))) + 1
    anchor, sites = make_sites(X, y, seed, rows=rows, min_rows=least)
    from core.api import ConfigError

    cls = get_method(method).__class__
    m = cls.with_known({"seed": seed, **(settings or {})})
    try:
        out, result, fit_s = run_round(m, sites, classes, anchor, seed, {**BENCH_SITE.get(method, {}),
                                                                         **(site_settings or {})})
    except ConfigError as exc:  # the method refuses these sites
        return {"dataset": name, "method": method, "seed": seed, "sites": [], "refused": exc.message,
                "fit_seconds": 0.0}
    for r in out:
        r.pop("right")
        r.pop("own_right")
    return {"dataset": name, "method": method, "seed": seed, "sites": out, "t": result.summary.get("t"),
            "n_clusters": result.summary.get("n_clusters"), "fit_seconds": fit_s}


def _stats(diffs) -> dict:
    d = np.asarray(list(diffs), np.float64)
    return {"sites": int(d.size), "mean_diff_pt": float(d.mean()) if d.size else None,
            "worst_diff_pt": float(d.min()) if d.size else None, "below_minus_2pt": int(np.sum(d < -2))}


def summarise(cells: list[dict]) -> dict:
    diffs = np.array([s["diff_pt"] for c in cells for s in c["sites"]])
    per_ds: dict = {}
    per_method: dict = {}
    for c in cells:
        m = c.get("method", "dccfl")
        per_ds.setdefault(c["dataset"], []).extend(s["diff_pt"] for s in c["sites"])
        per_method.setdefault(m, {}).setdefault(c["dataset"], []).extend(s["diff_pt"] for s in c["sites"])
    return {"sites": int(diffs.size), "mean_diff_pt": float(diffs.mean()), "worst_diff_pt": float(diffs.min()),
            "sites_below_minus_2pt": int(np.sum(diffs < -2)),
            "mean_package": float(np.mean([s["package"] for c in cells for s in c["sites"]])),
            "mean_own_model": float(np.mean([s["own_model"] for c in cells for s in c["sites"]])),
            "per_dataset": {d: {**_stats(v), "below_minus_2pt": _stats(v)["below_minus_2pt"]}
                            for d, v in per_ds.items()},
            "per_method": {m: {"all": _stats(x for v in by.values() for x in v),
                               "per_dataset": {d: _stats(v) for d, v in by.items()}}
                           for m, by in per_method.items()}}


# Site settings of the run: hfldd's distillation takes 100 steps instead of the product's 300 (a 30-row site's export
# takes ~25 s at 300 on the shared machine; the run must stay within 10 minutes on one core).
BENCH_SITE = {"hfldd": {"kip_steps": 100}}
WIDE = {"digits": {"rows": (25, 60), "dimension": 15}}  # 64 columns; sites of 25–60 rows; the kit's --dimension


def load(name: str, data_dir):
    """A benchmark table: sklearn's digits (8 × 8 pixels, 64 columns, bundled with scikit-learn) or a UCI CSV."""
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.data.astype(np.float64), d.target.astype(np.int64), [str(k) for k in range(10)]
    from benchmarks.simulation.datasets import load_benchmark_csv

    return load_benchmark_csv(name, data_dir)


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from core.api import write_json_atomic

    datasets = args.dataset or [*ISSUE_TABLES, *WIDE]
    methods = getattr(args, "method", None) or classification_methods()
    seeds = list(range(int(args.seeds if args.seeds != 10 else 2)))
    cells = []
    t0 = time.perf_counter()
    for d in datasets:
        X, y, classes = load(d, args.data_dir)
        wide = WIDE.get(d, {})
        for method in methods:
            for seed in seeds:
                cell = run_cell(d, X, y, classes, seed, method=method, rows=wide.get("rows", ROWS),
                                site_settings={"dimension": wide["dimension"]} if wide else None)
                cells.append(cell)
                say(json.dumps({"dataset": d, "method": method, "seed": seed,
                                "fit_seconds": round(cell["fit_seconds"], 1),
                                "sites": [(s["train_rows"], round(s["diff_pt"], 1), s["used"], s["chosen_by"])
                                          for s in cell["sites"]]}))
    out = {"summary": summarise(cells), "cells": cells, "seeds": seeds, "datasets": datasets, "methods": methods,
           "wall_seconds": time.perf_counter() - t0}
    say(json.dumps(out["summary"]["per_method"], indent=1))
    if args.json:
        from pathlib import Path

        from core.api import write_text_atomic

        write_json_atomic(args.json, out)
        command = " ".join(["nice python -m benchmarks small-sites", f"--seeds {len(seeds)}",
                            *(f"--dataset {d}" for d in (args.dataset or [])),
                            *(f"--method {m}" for m in (getattr(args, "method", None) or [])),
                            "--data-dir ../shared/datasets", f"--json {args.json}"])
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
    lines += ["", "## Per method (every registered classification method)", "",
              "| method | data set | sites | mean Δ (pt) | worst Δ (pt) | sites < −2 pt |",
              "|---|---|---:|---:|---:|---:|"]
    def pt(v, digits):
        return "–" if v is None else f"{v:+.{digits}f}"

    for m, v in s.get("per_method", {}).items():
        a = v["all"]
        lines.append(f"| **{m}** | all | {a['sites']} | {pt(a['mean_diff_pt'], 2)} | {pt(a['worst_diff_pt'], 1)} | "
                     f"{a['below_minus_2pt']} |")
        for d, w in v["per_dataset"].items():
            lines.append(f"| {m} | {d} | {w['sites']} | {pt(w['mean_diff_pt'], 2)} | {pt(w['worst_diff_pt'], 1)} | "
                         f"{w['below_minus_2pt']} |")
    used = [(c.get("method"), x) for c in out["cells"] for x in c["sites"]]
    lines += ["", "Who kept what (sites): " + "; ".join(
        f"{m}: package {sum(1 for mm, x in used if mm == m and x.get('used') == 'package')}, updated "
        f"{sum(1 for mm, x in used if mm == m and x.get('used') == 'updated')}, own "
        f"{sum(1 for mm, x in used if mm == m and x.get('used') == 'own')}" for m in s.get("per_method", {}))]
    for m in s.get("per_method", {}):
        sent = [100 * (x["as_sent"] - x["own_model"]) for mm, x in used if mm == m and "as_sent" in x]
        if sent:
            lines += ["", f"{m}'s package as sent, before the site's check (test rows): mean "
                      f"{pt(float(np.mean(sent)), 2)} pt against the own model, worst {pt(min(sent), 1)} pt, "
                      f"{sum(d < -2 for d in sent)} of {len(sent)} sites below −2 pt."]
    refused = [c for c in out["cells"] if c.get("refused")]
    if refused:
        lines += ["", "Refused cells (no package: every site keeps its own model):", ""]
        lines += [f"- {c['method']} on {c['dataset']}, seed {c['seed']}: {c['refused']}" for c in refused]
    lines += ["", "## Every site more than 2 pt below its own model", "",
              "| method | data set | seed | training rows | test rows | package | own model | used (chosen by) | CV "
              "expected | CV own |", "|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for c in out["cells"]:
        for x in c["sites"]:
            if x["diff_pt"] < -2:
                lines.append(f"| {c.get('method', 'dccfl')} | {c['dataset']} | {c['seed']} | {x['train_rows']} | "
                             f"{x['test_rows']} | {x['package']:.3f} | {x['own_model']:.3f} | "
                             f"{x.get('used')} ({x.get('chosen_by')}) | "
                             f"{x['expected'] if x['expected'] is None else round(x['expected'], 3)} | "
                             f"{x['expected_own'] if x['expected_own'] is None else round(x['expected_own'], 3)} |")
    return "\n".join(lines) + "\n"
