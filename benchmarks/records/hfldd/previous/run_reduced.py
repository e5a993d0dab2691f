"""The reduced runs of the previous round (commit c998299, KIP headline; 2 cores shared by ~8 jobs).

python -m benchmarks.records.hfldd.previous.run_reduced DATASET SPLITS SEEDS OUT.json [--quick] [--large]
python -m benchmarks.records.hfldd.previous.run_reduced --merge OUT.json IN1.json IN2.json ...
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.hfldd import Protocol, markdown, rerender, run

COMMAND = "python -m benchmarks.records.hfldd.previous.run_reduced "

if sys.argv[1] == "--merge":
    out, ins = Path(sys.argv[2]), [json.loads(Path(p).read_text()) for p in sys.argv[3:]]
    merged = dict(ins[0])
    merged["cells"] = [c for r in ins for c in r["cells"]]
    merged["seed_list"] = sorted({s for r in ins for s in r["seed_list"]})
    merged["command"] = " ; ".join(r["command"] for r in ins) + " ; " + COMMAND + " ".join(sys.argv[1:])
    merged["wall_seconds"] = sum(r["wall_seconds"] for r in ins)
    merged["finished"] = max(r["finished"] for r in ins)
    kl = {}
    for r in ins:
        for k, v in r["kl"].items():
            kl.setdefault(k, []).append(v)
    merged["kl"] = {k: {q: sum(x[q] for x in v) / len(v) for q in ("ari", "n_clusters")} for k, v in kl.items()}
    out.write_text(json.dumps(merged))
    print(markdown(rerender(out)))
    sys.exit(0)

ds, splits, out = sys.argv[1], tuple(sys.argv[2].split(",")), sys.argv[4]
seeds = [int(s) for s in sys.argv[3].split(",")]
p = Protocol(splits=splits)
if "--quick" in sys.argv:
    p = replace(p, select_fl=False, control_draws=1)
large = None
if "--large" in sys.argv:
    large = {"dataset": "dry_bean", "n_sites": 2, "seed": 0, "rows_per_class": 40, "anchor_ship": 40}
cmd = COMMAND + " ".join(sys.argv[1:])
res = run([ds] if ds != "-" else [], seeds, p, json_path=out, command=cmd, large=large)
print(markdown(res))
