"""``python -m benchmarks scale``: the analyst's DC-CFL fit (automatic t, product defaults) at 100 to 10,000 sites.

Synthetic label-skewed sites (issues #15, #36): K classes (default 7), each a Gaussian blob in m columns (default
16); site i holds ``rows`` rows (default 300) of 3 of the K classes (drawn per site; with K = 2, both classes at a
site's own event rate, drawn from U(0.05, 0.5)). Each site runs the product's own site step against one shared
anchor of 1,000 rows: standardise + PCA to m − 1 and shuffle (the method's ``site_compute``), and its own model
cross-validated on its rows, whose scores go into the bundle as ``own_cv`` (what ``participant export`` adds,
:func:`core.methods.promise.own_model_state`). The analyst then runs ``DCCFL().fit`` on the bundles in memory
(import is not timed: see ``benchmarks import-scale``) — the selection over the t grid, the site-intercept
candidates, the final models and each site's paired gate (``site_gate``: the shared model's out-of-fold
predictions and the estimate of the site's own choice) — and renders the HTML report of that result
(:func:`core.report.render_report`). Every point runs in a fresh process, so its peak resident set size
(``ru_maxrss``) is that point's alone; the site step's time is excluded from the fit's CPU time, but its memory
(the bundles the analyst holds) is included.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np

K_CLASSES = 7
CLASSES_PER_SITE = 3
ROWS, COLS = 300, 16
SITES = (100, 1000, 3000, 10000)


def site_rows(i: int, rows: int, centres: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Site i's rows and labels: 3 of the K classes (K > 2), or both at its own event rate (K = 2)."""
    K, cols = centres.shape
    r = np.random.default_rng([seed, i, 1])
    if K == 2:
        y = (r.random(rows) < r.uniform(0.05, 0.5)).astype(np.int64)
        y[:2] = [0, 1]  # both classes present
    else:
        y = r.choice(r.choice(K, CLASSES_PER_SITE, replace=False), rows)
    return centres[y] + r.normal(0, 1.0, size=(rows, cols)), y.astype(np.int64)


def make_bundles(n_sites: int, rows: int, cols: int, seed: int = 0, n_classes: int = K_CLASSES):
    """The S bundles as ``participant export`` makes them (reduction, shuffle and ``own_cv``), in memory."""
    from core.api.common import ReceivedBundle, SiteInput
    from core.api.research import DCCFL, own_model_state

    rng = np.random.default_rng([seed, n_sites, rows, cols])
    centres = rng.normal(0, 0.3 if n_classes > 2 else 0.25, size=(n_classes, cols))
    anchor = rng.normal(0, 1.3, size=(1000, cols))
    method = DCCFL()
    classes = [str(k) for k in range(n_classes)]
    bundles = []
    for i in range(n_sites):
        X, y = site_rows(i, rows, centres, seed)
        ex = method.site_compute(SiteInput(X, y, classes, anchor, settings={"seed": [seed, i]}))
        scores, _ = own_model_state(method, X, y, n_classes)
        manifest = {**ex.manifest, **({"own_cv": scores} if scores is not None else {})}
        bundles.append(ReceivedBundle(site=f"site-{i:05d}", fingerprint="", digest=f"{i:08d}", envelope_id="",
                                      manifest=manifest, arrays=ex.arrays))
    return bundles


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def one_point(n_sites: int, rows: int = ROWS, cols: int = COLS, seed: int = 0, n_classes: int = K_CLASSES) -> dict:
    """Build the bundles, fit DC-CFL with product defaults, render the report; CPU, wall time and peak RSS."""
    from collections import Counter

    from core.api import Identity
    from core.api.analyst import render_report
    from core.api.common import FeatureColumn, FitContext, Kit, Schema
    from core.api.research import DCCFL

    classes = [str(k) for k in range(n_classes)]
    t0, c0 = time.perf_counter(), _cpu()
    bundles = make_bundles(n_sites, rows, cols, seed, n_classes)
    site_s, site_cpu = time.perf_counter() - t0, _cpu() - c0
    rss_bundles = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    method = DCCFL(seed=seed)
    t0, c0 = time.perf_counter(), _cpu()
    result = method.fit(bundles, FitContext(classes))
    fit_s, cpu_s = time.perf_counter() - t0, _cpu() - c0
    rss_fit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    t0, c0 = time.perf_counter(), _cpu()
    kit = Kit(name="scale", task="classification", method="dccfl", analyst=Identity.generate("analyst").card,
              schema=Schema([FeatureColumn(f"x{j}", -10, 10) for j in range(cols)], label="y", classes=classes))
    report_mb = len(render_report(kit, method, result, result.summary).encode("utf-8")) / 1e6
    report_s, report_cpu = time.perf_counter() - t0, _cpu() - c0
    s = result.summary
    updates = Counter((x.get("update") or {}).get("estimate", "none") for x in s["sites"])
    return {"sites": n_sites, "rows": rows, "cols": cols, "classes": n_classes,
            "fit_seconds": round(fit_s, 2), "fit_cpu_seconds": round(cpu_s, 2),
            "site_seconds": round(site_s, 2), "site_cpu_seconds": round(site_cpu, 2),
            "report_seconds": round(report_s, 2), "report_cpu_seconds": round(report_cpu, 2),
            "report_mb": round(report_mb, 2),
            "peak_rss_gb_bundles": round(rss_bundles, 3), "peak_rss_gb_fit": round(rss_fit, 3),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 3),
            "t": s["t"], "n_clusters": s["n_clusters"], "selection": s["selection"],
            "own_model_sites": s["own_model_sites"], "site_choices": dict(sorted(updates.items())),
            "expected_mean": s.get("expected_mean"), "own_model_mean": s.get("own_model_mean"),
            "load_before": round(os.getloadavg()[0], 2)}


def growth(points: list[dict], key: str) -> float | None:
    """The exponent b of key ∝ sites^b, least squares on the logs of every point."""
    pts = [(math.log(p["sites"]), math.log(p[key])) for p in points if p.get(key) and p[key] > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return round(float(np.polyfit(x, y, 1)[0]), 3)


def run(sites: list[int], rows: int = ROWS, cols: int = COLS, n_classes: int = K_CLASSES, say=print) -> dict:
    out = []
    for n in sites:
        load = os.getloadavg()
        cmd = [sys.executable, "-c", "import json; from benchmarks.scale import one_point; "
               f"print(json.dumps(one_point({int(n)}, {int(rows)}, {int(cols)}, 0, {int(n_classes)})))"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scale point {n} failed: {done.stderr[-2000:]}")
        point = json.loads(done.stdout.strip().splitlines()[-1])
        point["load_avg_1_5_15"] = [round(v, 2) for v in load]
        point["load_avg_after"] = [round(v, 2) for v in os.getloadavg()]
        out.append(point)
        say(json.dumps(point))
    exponents = {"fit_cpu_seconds": growth(out, "fit_cpu_seconds"), "peak_rss_gb": growth(out, "peak_rss_gb"),
                 "peak_rss_gb_fit_minus_bundles": None}
    extra = [{**p, "fit_memory": p["peak_rss_gb_fit"] - p["peak_rss_gb_bundles"]} for p in out]
    exponents["peak_rss_gb_fit_minus_bundles"] = growth(extra, "fit_memory")
    say(f"growth exponents (∝ sites^b, least squares over {len(out)} points): fit CPU time b = "
        f"{exponents['fit_cpu_seconds']}, peak RSS b = {exponents['peak_rss_gb']}, the fit's memory above the "
        f"bundles' b = {exponents['peak_rss_gb_fit_minus_bundles']}")
    return {"points": out, "growth_exponents": exponents}


def run_from_args(args, say) -> dict:
    """``python -m benchmarks scale [--sites 100,1000,3000,10000] [--rows 300] [--classes 7] [--json FILE]``."""
    from benchmarks import print_and_record

    sites = [int(v) for v in (getattr(args, "sites", None) or ",".join(map(str, SITES))).split(",")]
    return print_and_record(run(sites, rows=args.rows or ROWS, n_classes=getattr(args, "classes", None) or K_CLASSES,
                                say=say), args, say)
