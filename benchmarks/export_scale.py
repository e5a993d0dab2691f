"""Participant export of a large CSV versus a bare ``pandas.read_csv`` of the same file.

``python -m benchmarks export [--rows N]``: writes a synthetic CSV (50 feature columns + label), then runs each
measurement in a fresh child process so its peak RSS (``ru_maxrss``) and its imports are its own:
1. ``pandas.read_csv(path)`` alone (imports included);
2. a whole ``participant export`` (imports, unlock the identity, read + validate the CSV, generate the anchor,
   PCA to m − 1, reduce the anchor, shuffle, fit the site's own-rows baseline, seal with age encryption and
   signature, save the workspace) through :class:`core.participant.ParticipantRound`.
3. the *floor*: the least work any export in this bundle format must do, with no checks and nothing kept —
   the same whole-file ``pandas.read_csv`` as (1), one reduction of every row (row blocks on two threads
   straight from pandas' columns, no matrix copy), the reduced rows' SHA-256 and CRC-32 (on two threads),
   age encryption to a file whose bytes are hashed again, fsync. It tells how much of the export's time is
   the product's own (checks, anchor, shuffle, own-rows model, workspace) and how much the format's.
The three alternate (read, export, floor, read, …) ``repeats`` times in the same run, so all see the same
machine load; the medians are reported. Without ``--rows`` it measures 10,000 and 1,000,000 rows.
Targets (issue #15): export ≤ 2× the bare read at 1M rows, ≤ 1.5 s total at 10,000 rows.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
mode, csv, work = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
if mode == "read":
    import pandas as pd
    df = pd.read_csv(csv)
    rows = len(df)
elif mode == "floor":  # the least any export must do (see the module docstring)
    import hashlib, io, os, zlib
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np, pandas as pd, pyrage
    from threadpoolctl import threadpool_limits
    frame = pd.read_csv(csv)
    cols = [frame[c].to_numpy() for c in frame.columns[:-1]]
    rows, m = len(frame), len(cols)
    W = np.random.default_rng(0).standard_normal((m, m - 1))
    Y = np.empty((rows, m - 1), np.float32)
    def reduce_block(s):
        B = np.empty((min(16384, rows - s), m))
        for j, c in enumerate(cols):
            B[:, j] = c[s:s + 16384]
        Y[s:s + 16384] = B @ W
    with threadpool_limits(1), ThreadPoolExecutor(2) as ex:
        list(ex.map(reduce_block, range(0, rows, 16384)))
    raw = memoryview(Y).cast("B")
    with ThreadPoolExecutor(2) as ex:
        inner = [ex.submit(hashlib.sha256, raw), ex.submit(zlib.crc32, raw)]
        [f.result() for f in inner]
    class Hashing:
        def __init__(self, fh): self.fh, self.h = fh, hashlib.sha256()
        def write(self, d): self.fh.write(d); self.h.update(d); return len(d)
        def flush(self): self.fh.flush()
    with open(work + "/floor.age", "wb") as fh:
        pyrage.encrypt_io(io.BytesIO(raw), Hashing(fh), [pyrage.x25519.Identity.generate().to_public()])
        fh.flush()
        os.fsync(fh.fileno())
else:
    from pathlib import Path
    from core.formats.anchor import AnchorFile
    from core.formats.identity import Identity
    from core.formats.kit import Kit
    from core.participant import ParticipantRound
    from core.formats.workspace import SiteWorkspace
    w = Path(work)
    kit = Kit.load(w / "p.dckit")
    job = ParticipantRound(kit, w / "p.dckit", Identity.load(w / "site.dcid", "bench"), SiteWorkspace(w / "ws"),
                           anchor=AnchorFile.load(w / "p.dcanchor"), site_settings={"seed": 0})
    job.confirm_analyst(kit.analyst, how="benchmark: the kit's own signer")
    job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
    rows = job.load(csv).n_rows
    job.seal(w / "site.dcbundle")
wall = time.perf_counter() - t0
print(json.dumps({"seconds": wall, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rows": rows}))
"""


def _child(mode: str, csv: Path, work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # the repository root
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(csv), str(work)], capture_output=True,
                         text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(rows: int = 1_000_000, features: int = 50, repeats: int = 5, folder: Path | None = None) -> dict:
    import statistics

    import numpy as np

    from benchmarks.tabular_synth import write_synthetic_csv
    from core.formats.anchor import make_anchor
    from core.formats.identity import Identity
    from core.formats.kit import Kit

    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        work = Path(tmp)
        csv = work / "big.csv"
        t0 = time.perf_counter()
        schema = write_synthetic_csv(csv, rows, features, 3, seed=0)
        write_s = time.perf_counter() - t0
        analyst, site = Identity.generate("analyst"), Identity.generate("site")
        site.save(work / "site.dcid", "bench", log_n=14)
        kit = Kit(name="scale", task="classification", schema=schema, method="dccfl", analyst=analyst.card)
        kit.save(work / "p.dckit", analyst)
        seed_rows = np.random.default_rng(0).standard_normal((100, features))
        make_anchor(kit.project_id, schema.encoded_names, kind="smote", rows=1000, seed_rows=seed_rows).save(
            work / "p.dcanchor")
        reads, exports, floors = [], [], []
        for _ in range(repeats):  # interleaved: all three see the same load
            reads.append(_child("read", csv, work))
            exports.append(_child("export", csv, work))
            floors.append(_child("floor", csv, work))
        size_mb = csv.stat().st_size / 1e6
    med_read = statistics.median(r["seconds"] for r in reads)
    med_export = statistics.median(r["seconds"] for r in exports)
    return {"rows": rows, "features": features, "csv_mb": round(size_mb, 1), "csv_write_seconds": round(write_s, 1),
            "read_seconds_median": round(med_read, 3), "read_seconds": [round(r["seconds"], 2) for r in reads],
            "read_peak_rss_mb": round(max(r["peak_rss_mb"] for r in reads)),
            "export_seconds_median": round(med_export, 3),
            "export_seconds": [round(r["seconds"], 2) for r in exports],
            "export_peak_rss_mb": round(max(r["peak_rss_mb"] for r in exports)),
            "ratio_of_medians": round(med_export / med_read, 2), "repeats": repeats,
            "floor_seconds_median": round(statistics.median(r["seconds"] for r in floors), 3),
            "floor_seconds": [round(r["seconds"], 2) for r in floors],
            "floor_ratio_of_medians": round(statistics.median(r["seconds"] for r in floors) / med_read, 2),
            "load_avg_1_5_15": [round(v, 2) for v in os.getloadavg()],
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}


def run_sizes(sizes: list[int], repeats: int = 5) -> dict:
    return {"points": [run(n, repeats=repeats) for n in sizes]}


def main(argv: list[str] | None = None) -> dict:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks export")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    res = run(args.rows, args.features, args.repeats)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()


def run_from_args(args, say) -> dict:
    from benchmarks import print_and_record

    return print_and_record(run_sizes([args.rows] if args.rows else [10_000, 1_000_000]), args, say)
