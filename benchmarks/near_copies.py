"""``python -m benchmarks near-copies``: the distillation mode's near-copy rule (issue #25), measured.

1. Baseline (why the default fraction is 0.5): at label-skewed sites of 25–60 rows (``small_sites.make_sites``),
   each real reduced row's distance to its nearest other real row, in units of the site's spacing (the median of
   those distances, :func:`core.methods.hfldd.near_copies.spacing_of`) — how close one real patient lies to the
   next. Its low quantiles say how close a row may lie to a real one and still be no nearer than other patients are.
2. Cost: ``hfldd`` (product defaults, except ``kip_steps`` = 100) at the same sites; each site distils once, then
   ships its rows as distilled (fraction 0) or after :func:`~core.methods.hfldd.near_copies.keep_apart` at each
   fraction (the rule runs after the distillation, so the rows differ only by it); the analyst fits each variant;
   every site applies the raw package (no own-model choice) to its test rows. Reported: mean test accuracy and
   the rows moved and dropped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np

TABLES = ("statlog_vehicle", "cardiotocography_10class", "digits")
FRACTIONS = (0.0, 0.25, 0.5, 1.0)
ROWS = (25, 60)
DIMENSION = 15


def run_table(name: str, X: np.ndarray, y: np.ndarray, classes: list[str], seed: int) -> dict:
    from scipy.spatial import cKDTree

    from benchmarks.small_sites import make_sites
    from core.api.common import FitContext, ReceivedBundle, SiteInput
    from core.api.research import HFLDD, keep_apart, site_map, spacing_of

    anchor, sites = make_sites(X, y, seed, rows=ROWS, min_rows=ROWS[0])
    method = HFLDD(seed=seed)
    exports, ratios = [], []
    for i, (Xtr, ytr, _, _) in enumerate(sites):
        ex = method.site_compute(SiteInput(Xtr, ytr, classes, anchor, settings={
            "seed": seed * 100 + i, "kip_steps": 100, "min_distance": 0.0, "dimension": min(DIMENSION, X.shape[1])}))
        real = site_map(ex.private_arrays).transform(Xtr)
        dd, _ = cKDTree(real).query(real, k=2)
        ratios.append(dd[:, 1] / spacing_of(real))
        exports.append((ex, real))
    ratios_all = np.concatenate(ratios)
    out = {"table": name, "seed": seed, "sites": [int(len(s[1])) for s in sites],
           "baseline_quantiles": {f"q{int(q * 100):02d}": float(np.quantile(ratios_all, q))
                                  for q in (0.01, 0.05, 0.10, 0.25, 0.5)},
           "variants": {}}
    names = np.asarray(classes, dtype=object)
    for f in FRACTIONS:
        bundles, moved, dropped, closest = [], 0, 0, []
        for i, (ex, real) in enumerate(exports):
            arrays = dict(ex.arrays)
            Xd, yd, info = keep_apart(arrays["x_distilled"], arrays["y_distilled"], real, f, seed=i)
            arrays["x_distilled"], arrays["y_distilled"] = Xd.astype(np.float32), yd.astype(np.int32)
            moved, dropped = moved + info["moved"], dropped + info["dropped"]
            closest.append(float(cKDTree(real).query(Xd)[0].min() / info["spacing"]))
            bundles.append(ReceivedBundle(f"site-{i}", "", f"{seed}-{i}", "", ex.manifest, arrays))
        result = method.fit(bundles, FitContext(classes))
        accs = []
        for (manifest, arrays), (ex, _), (_, _, Xte, yte) in zip(result.packages, exports, sites, strict=True):
            pred = method.apply(manifest, arrays, ex.private_arrays, Xte)["prediction"]
            accs.append(float(np.mean(pred == names[yte])))
        out["variants"][str(f)] = {"mean_accuracy": float(np.mean(accs)), "accuracy": accs, "moved": int(moved),
                                   "dropped": int(dropped), "shipped": int(sum(len(b.arrays["y_distilled"])
                                                                               for b in bundles)),
                                   "closest_ratio": float(min(closest))}
    return out


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from benchmarks.small_sites import load
    from core.api import write_json_atomic

    tables = args.dataset or list(TABLES)
    seeds = list(range(int(args.seeds if args.seeds != 10 else 1)))
    t0 = time.perf_counter()
    rows = []
    for name in tables:
        X, y, classes = load(name, args.data_dir)
        for seed in seeds:
            rows.append(run_table(name, X, y, classes, seed))
            say(json.dumps(rows[-1]))
    out = {"tables": rows, "seeds": seeds, "wall_seconds": time.perf_counter() - t0}
    if args.json:
        write_json_atomic(args.json, out)
    return out
