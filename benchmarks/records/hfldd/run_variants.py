"""Seed-0 comparison of distillation variants against the random-real control (variants_spread_seed0.jsonl).

python -m benchmarks.records.hfldd.run_variants DATASET SPLIT SEED [VARIANT ...] >> variants.jsonl

One cell of `python -m benchmarks hfldd` without the baselines (FedAvg, DC-CFL, ...): the headline ("Distilled":
energy-distance matching from an energy-herding start, then each class's rows given the real rows' spread) and the
named variants below (all of them by default), with the bench's budget (max(5, ⌈0.25·n_c⌉) rows per class); the
control = the same count of random real rows per class, mean of 2 draws. Both analysts: the MLP (what the product
trains) and NTK kernel ridge regression. DATASET dry_bean runs the large-site cell instead (2 IID sites, 40 rows per
class, 40 anchor rows shipped; SPLIT is ignored). Each line: accuracy per analyst, spread ratio (shipped rows' mean
squared distance to their class's real mean over the real rows'), NN ratio (median / min), the control's draws.

The recorded lines were run in groups of a few variants each, and in the lines written before the headline switched
to energy matching the row "Distilled" is the previous headline, "rbf matching" below.
"""

import json
import resource
import sys

from benchmarks import one_thread
from benchmarks.hfldd import Protocol, run_cell
from benchmarks.simulation.datasets import load_cached

RBF = {"mmd_kernel": "rbf", "match_spread": False}            # the previous headline's matching
KIP = {"init": "real", "holdout": 0.2, "kip_weight": 1.0, "mmd_weight": 0.0, **RBF}
HKIP = {**KIP, "init": "herding"}
VARIANTS = {
    "rbf matching": RBF,
    "herd0": {**RBF, "steps": 0},                              # the RBF-herding start itself (real rows)
    "s0.25": {**RBF, "mmd_scales": [0.25]},                    # RBF ℓ² = d/4
    "s0.1": {**RBF, "mmd_scales": [0.1]},
    "multi": {**RBF, "mmd_scales": [0.25, 1, 4]},              # mean of three RBFs
    "spread": {**RBF, "match_spread": True},
    "herd0+spread": {**RBF, "steps": 0, "match_spread": True},
    "rbf+spread full batch": {**RBF, "match_spread": True, "target_batch": 100000},
    "rbfU": {**RBF, "mmd_unbiased": True},
    "energy": {"match_spread": False},
    "energy+spread": {},                                       # = the headline
    "energy+spread lr.03": {"lr": 0.03},
    "energy+spread 1000 steps": {"steps": 1000},
    "real energy+spread": {"init": "real"},
    "energyU": {"match_spread": False, "mmd_unbiased": True},
    "energyU+spread": {"mmd_unbiased": True},
    "KIP (real start, hold-out stop)": KIP,
    "hKIP": HKIP,
    "hKIP+spread": {**HKIP, "match_spread": True},
    "kmeans+spread": {"init": "kmeans", "steps": 0},          # k-means centroids, rescaled (may hold a real row)
    "kmeans+energy+spread": {"init": "kmeans"},
}

ds, split, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sys.argv[4:] or list(VARIANTS)
X, y, classes = load_cached(ds, "../shared/datasets")
if ds == "dry_bean":
    split = f"C{len(classes)}"
    p = Protocol(n_clients=2, rows_per_class=40, rows_share=0.0, anchor_ship=40, splits=(split,), baselines=False,
                 control_draws=2, variants={n: VARIANTS[n] for n in names})
else:
    p = Protocol(splits=(split,), baselines=False, control_draws=2, variants={n: VARIANTS[n] for n in names})
with one_thread():
    rec = run_cell(ds, X, y, classes, split, seed, p)
r = resource.getrusage(resource.RUSAGE_SELF)
line = {"ds": ds, "sp": split, "seed": seed, "cpu": round(r.ru_utime + r.ru_stime, 1)}
for k, v in rec["methods"].items():
    line[k] = {kk: round(v[kk], 4) for kk in ("accuracy_mlp", "accuracy_krr", "spread_ratio", "nn_ratio_median",
                                               "nn_ratio_min", "bundle_bytes_mean") if kk in v}
    if "draws" in v:
        line[k]["draws"] = [round(x, 4) for x in v["draws"]]
print(json.dumps(line))
