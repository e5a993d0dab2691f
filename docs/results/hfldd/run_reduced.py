"""The reduced runs recorded in this folder (the machine was shared by ~8 jobs on 2 cores; see README.md).

PYTHONPATH=. python docs/results/hfldd/run_reduced.py DATASET SPLITS SEEDS OUT.json [--quick]
"""

import sys
from dataclasses import replace

from core.bench.hfldd import Protocol, markdown, run

ds, splits, seeds, out = sys.argv[1], tuple(sys.argv[2].split(",")), [int(s) for s in sys.argv[3].split(",")], sys.argv[4]
p = Protocol(splits=splits)
if "--quick" in sys.argv:
    p = replace(p, select_fl=False, control_draws=1)
large = None
if "--large" in sys.argv:
    large = {"dataset": "dry_bean", "n_sites": 2, "seed": 0, "rows_per_class": 40, "anchor_ship": 40}
cmd = "PYTHONPATH=. python " + " ".join(sys.argv)
res = run([ds] if ds != "-" else [], seeds, p, json_path=out, command=cmd, large=large)
print(markdown(res))
