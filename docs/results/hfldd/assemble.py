"""Assemble hfldd.json / hfldd.md from the finished cells (hfldd_cells.jsonl) and the large-site cell.

PYTHONPATH=. python docs/results/hfldd/assemble.py LARGE_SITE.json STATUS STARTED_UTC (ISO, the run's start)

Used when the benchmark run could not finish every cell in the time available (the record then says how
many of the 18 cells it holds) and to add the large-site cell recorded by a first invocation of the same
command. Rows, targets and the markdown are computed by core.bench.hfldd exactly as `run` does.
"""

import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from core import __version__
from core.bench import machine
from core.bench.hfldd import CHOICES, DEFAULT_KIP, SPLITS, Protocol, markdown, summarise, targets
from core.formats.fileio import write_json_atomic, write_text_atomic

here = Path("docs/results/hfldd")
cells = [json.loads(line) for line in (here / "hfldd_cells.jsonl").read_text().splitlines() if line.strip()]
cells.sort(key=lambda c: (c["dataset"], SPLITS.index(c["split"]), c["seed"]))
rows = summarise(cells)
kl = {}
for ds, sp in dict.fromkeys((c["dataset"], c["split"]) for c in cells):
    g = [c["kl_clustering"] for c in cells if c["dataset"] == ds and c["split"] == sp]
    kl[f"{ds} {sp}"] = {"ari": float(np.mean([v["ari_vs_class_sets"] for v in g])),
                        "n_clusters": float(np.mean([v["n_clusters"] for v in g]))}
status = sys.argv[2]
result = {
    "experiment": "hfldd", "version": __version__, "machine": machine("torch", "sklearn"),
    "command": "dcstudio bench hfldd --seeds 3 --data-dir ../shared/datasets --json docs/results/hfldd/hfldd.json "
               "(cells from hfldd_cells.jsonl; large-site cell from a first invocation of the same command; "
               "assembled by docs/results/hfldd/assemble.py)",
    "status": status, "seed_list": sorted({c["seed"] for c in cells}), "protocol": asdict(Protocol()),
    "kip": DEFAULT_KIP, "choices": CHOICES, "rows": rows, "targets": targets(rows), "kl": kl, "jobs": 2,
    "cells": cells, "large_site": json.loads(Path(sys.argv[1]).read_text()),
    "wall_seconds": (datetime.now(UTC) - datetime.fromisoformat(sys.argv[3])).total_seconds(),
    "cpu_seconds": float(sum(c.get("cpu_seconds", 0.0) for c in cells)),
    "finished": datetime.now(UTC).isoformat(timespec="seconds"),
}
write_json_atomic(here / "hfldd.json", result)
write_text_atomic(here / "hfldd.md", markdown(result))
print(markdown(result))
