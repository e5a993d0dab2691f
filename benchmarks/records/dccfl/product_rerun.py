"""Re-run only the DC-CFL product-default row of ``python -m benchmarks dccfl`` for some seeds and compare it cell by
cell with the recorded cells (docs/results/dccfl/dccfl_cells.jsonl). Usage, from the repository root:

    python -m benchmarks.records.dccfl.product_rerun 0,1 [covertype,drybean,gesture] [DATA_DIR]
"""

import json
import sys
import time

import numpy as np

from benchmarks.dccfl import DATASETS, SPLITS, Protocol, make_cell, run_dc, site_bundles
from benchmarks.simulation.datasets import load_cached
from core.methods.dccfl import DCCFL

seeds = [int(a) for a in sys.argv[1].split(",")]
datasets = sys.argv[2].split(",") if len(sys.argv) > 2 else DATASETS
data_dir = sys.argv[3] if len(sys.argv) > 3 else "../shared/datasets"
rec = {}
for line in open("docs/results/dccfl/dccfl_cells.jsonl"):
    c = json.loads(line)
    rec[(c["dataset"], c["split"], c["seed"])] = c["methods"]["DC-CFL (product defaults)"]["accuracy"]
p = Protocol()
out = []
for d in datasets:
    X, y, classes = load_cached(d, data_dir)
    for sp in SPLITS:
        for seed in seeds:
            cell = make_cell(d, X, y, classes, sp, seed, p)
            bundles, private, _ = site_bundles(cell)
            t0 = time.perf_counter()
            r = run_dc(DCCFL(seed=seed), cell, bundles, private)
            row = {"dataset": d, "split": sp, "seed": seed, "new": r["accuracy"], "old": rec.get((d, sp, seed)),
                   "t": r["t"], "n_clusters": r["n_clusters"], "fit_s": time.perf_counter() - t0}
            out.append(row)
            print(json.dumps(row), flush=True)
diffs = [r["new"] - r["old"] for r in out if r["old"] is not None]
print(json.dumps({"mean_diff_pt": 100 * float(np.mean(diffs)), "min_pt": 100 * float(np.min(diffs)),
                  "max_pt": 100 * float(np.max(diffs)), "cells": len(diffs)}))
