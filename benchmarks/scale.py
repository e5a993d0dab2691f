"""``python -m benchmarks scale``: the analyst's DC-CFL fit (automatic t, product defaults) from 10 to 1,000 sites.

Synthetic label-skewed sites (issue #15): K = 7 classes, each a Gaussian blob in m = 30 columns; site i holds
``rows`` rows of 3 of the 7 classes (drawn per site). Each site runs the product's own site step (standardise +
PCA to m − 1, shuffle) against one shared anchor of 1,000 rows; the analyst then runs ``DCCFL().fit`` on the
bundles in memory (import is not timed: 100 bundles open in 0.4 s). Every point runs in a fresh process, so
its peak resident set size (``ru_maxrss``) is that point's alone; the site step's time is excluded from the
fit time but its memory (the bundles the analyst holds) is included.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

K_CLASSES = 7
CLASSES_PER_SITE = 3


def make_bundles(n_sites: int, rows: int, cols: int, seed: int = 0):
    from core.api.common import ReceivedBundle, SiteInput
    from core.api.research import DCCFL

    rng = np.random.default_rng([seed, n_sites, rows, cols])
    centres = rng.normal(0, 0.3, size=(K_CLASSES, cols))
    anchor = rng.normal(0, 1.3, size=(1000, cols))
    method = DCCFL()
    bundles = []
    for i in range(n_sites):
        r = np.random.default_rng([seed, i, 1])
        cls = r.choice(K_CLASSES, CLASSES_PER_SITE, replace=False)
        y = r.choice(cls, rows)
        X = centres[y] + r.normal(0, 1.0, size=(rows, cols))
        ex = method.site_compute(SiteInput(X, y.astype(np.int64), [str(k) for k in range(K_CLASSES)], anchor,
                                           settings={"seed": [seed, i]}))
        bundles.append(ReceivedBundle(site=f"site-{i:04d}", fingerprint="", digest=f"{i:08d}", envelope_id="",
                                      manifest=ex.manifest, arrays=ex.arrays))
    return bundles


def one_point(n_sites: int, rows: int, cols: int, seed: int = 0) -> dict:
    """Build the bundles, fit DC-CFL with product defaults, report fit time and peak RSS (this process)."""
    from core.api.common import FitContext
    from core.api.research import DCCFL

    t0 = time.perf_counter()
    bundles = make_bundles(n_sites, rows, cols, seed)
    site_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    result = DCCFL(seed=seed).fit(bundles, FitContext([str(k) for k in range(K_CLASSES)]))
    fit_s, c1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    s = result.summary
    return {"sites": n_sites, "rows": rows, "cols": cols, "fit_seconds": fit_s, "fit_cpu_seconds": cpu_s,
            "site_seconds": site_s,
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
            "t": s["t"], "n_clusters": s["n_clusters"], "selection": s["selection"],
            "own_model_sites": s["own_model_sites"], "expected_mean": s.get("expected_mean"),
            "own_model_mean": s.get("own_model_mean"), "load_before": os.getloadavg()[0]}


def run(sites: list[int], rows: int = 2000, cols: int = 30, say=print) -> list[dict]:
    out = []
    for n in sites:
        load = os.getloadavg()
        cmd = [sys.executable, "-c", f"import json; from benchmarks.scale import one_point; "
               f"print(json.dumps(one_point({int(n)}, {int(rows)}, {int(cols)})))"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scale point {n} failed: {done.stderr[-2000:]}")
        point = json.loads(done.stdout.strip().splitlines()[-1])
        point["load_avg_1_5_15"] = [round(v, 2) for v in load]
        out.append(point)
        say(json.dumps(point))
    return out


def run_from_args(args, say) -> dict:
    """``python -m benchmarks scale [--sites 10,30,100,300,1000] [--rows 2000] [--json FILE]``."""
    from benchmarks import print_and_record

    sites = [int(v) for v in (getattr(args, "sites", None) or "10,30,100,300,1000").split(",")]
    return print_and_record({"points": run(sites, rows=args.rows or 2000, say=say)}, args, say)
