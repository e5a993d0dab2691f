"""Seed-0 comparison of distillation variants (variants_seed0.jsonl; the round that made RBF matching the headline).

python -m benchmarks.records.hfldd.rbf_matching.run_variants DATASET SPLIT SEED ROWS_PER_CLASS >> variants.jsonl

One cell of `python -m benchmarks hfldd` without the baselines (FedAvg, DC-CFL, ...): the previous headline (KIP, random
real start, early stop on a 20 % hold-out) and the variants below, every one with ROWS_PER_CLASS rows per class
(rows_share 0); the control = the same count of random real rows per class, mean of 2 draws; KRR analyst
headline, MLP beside it. The recorded lines came from a scratch copy of this driver run on the code between
commits 8634493 and a5506f8 (before the headline switched to distribution matching), two variant sets at a
time; every variant is spelt out here so that the current code runs all of them in one go.
"""

import json
import resource
import sys

from benchmarks import one_thread
from benchmarks.hfldd import Protocol, run_cell
from benchmarks.simulation.datasets import load_cached

# RBF kernel, no spread rescaling: the settings of that round (the bench's defaults have moved on since).
KIP = {"init": "real", "holdout": 0.2, "kip_weight": 1.0, "mmd_weight": 0.0, "mmd_kernel": "rbf", "match_spread": False}
DM = {"holdout": 0.0, "kip_weight": 0.0, "mmd_weight": 1.0, "mmd_kernel": "rbf", "match_spread": False}
VARIANTS = {
    "learned labels": {**KIP, "learn_labels": True},
    "1000 steps": {**KIP, "steps": 1000, "patience": 20},
    "herding+KIP": {**KIP, "init": "herding"},
    "herding+KIP learned": {**KIP, "init": "herding", "learn_labels": True},
    "herding+DM": {**DM, "init": "herding"},
    "real+DM": {**DM, "init": "real"},
}

ds, split, seed, rpc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
X, y, classes = load_cached(ds, "../shared/datasets")
p = Protocol(splits=(split,), rows_per_class=rpc, rows_share=0.0, baselines=False, control_draws=2, analyst="krr",
             kip=KIP, variants=VARIANTS)
with one_thread():
    rec = run_cell(ds, X, y, classes, split, seed, p)
r = resource.getrusage(resource.RUSAGE_SELF)
line = {"ds": ds, "sp": split, "seed": seed, "rpc": rpc, "cpu": round(r.ru_utime + r.ru_stime, 1)}
for k, v in rec["methods"].items():
    line[k] = {kk: round(v[kk], 4) for kk in ("accuracy", "accuracy_mlp", "accuracy_krr") if kk in v}
    for kk in ("nn_ratio_median", "nn_ratio_min"):
        if kk in v:
            line[k][kk[3:]] = round(v[kk], 3)
print(json.dumps(line))
