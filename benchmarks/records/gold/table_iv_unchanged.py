"""Re-run GOLD bench trials and compare every score with the record (``docs/results/gold/gold_trials.jsonl``):
the paper's path (MCPL + REMC) and the bench's ablations must give the recorded numbers exactly.

``python -m benchmarks.records.gold.table_iv_unchanged EC:0 US:1 …`` (data set : seed; the data sets are read
as the GOLD bench reads them). Prints every difference and the largest one; exit status 1 if any differ."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from threadpoolctl import threadpool_limits

from benchmarks.gold import ROWS, load, trial

RECORD = Path("docs/results/gold/gold_trials.jsonl")


def compare(cases: list[tuple[str, int]], record: Path = RECORD) -> tuple[int, float]:
    """(values compared, largest absolute difference) over every recorded method, protocol and metric."""
    rec = {}
    for line in record.read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "gold":
            rec[(r["dataset"], r["seed"])] = r
    n, worst = 0, 0.0
    with threadpool_limits(1):
        for name, seed in cases:
            X, y = load(name)
            fresh = trial(name, X, y, seed, ROWS)["methods"]
            for meth, v in rec[(name, seed)]["methods"].items():
                if "error" in v:
                    continue
                for proto in ("IV", "III"):
                    for met, val in v[proto].items():
                        diff = abs(fresh[meth][proto][met] - val)
                        worst, n = max(worst, diff), n + 1
                        if diff:
                            print(f"DIFF {name} seed {seed} {meth} {proto} {met}: {val} → {fresh[meth][proto][met]}")
    return n, worst


if __name__ == "__main__":
    pairs = [(a.split(":")[0], int(a.split(":")[1])) for a in sys.argv[1:]]
    count, largest = compare(pairs)
    print(f"compared {count} values; largest difference {largest}")
    sys.exit(1 if largest else 0)
