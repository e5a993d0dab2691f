"""Throughput of the sealed envelope: seal and open one float32 array between two fresh identities.

``python -m benchmarks.io_throughput [--size-mb 200] [--repeats 3]``. MB here is 10^6 bytes. Peak RSS is the
process's high-water mark (``resource.getrusage``), read after the seal runs and again after the open
runs, so "open" includes everything before it; "copies" expresses the growth over the RSS measured before
the payload was allocated in units of the payload size.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.api import Identity
from core.api.research import Payload, open_sealed, seal

TARGET_MB_S = 300.0


def _peak_rss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def run(size_mb: int = 200, repeats: int = 3) -> dict[str, Any]:
    """Seal and open ``size_mb`` MB ``repeats`` times each; return MB/s (best, median) and peak RSS."""
    if size_mb < 1 or repeats < 1:
        raise ValueError("size_mb and repeats must be at least 1")
    sender, recipient = Identity.generate("bench site"), Identity.generate("bench analyst")
    n_bytes = size_mb * 1_000_000
    gc.collect()
    rss_before = _peak_rss_bytes()
    x = np.random.default_rng(0).standard_normal(n_bytes // 4, dtype=np.float32)
    payload = Payload({"bench": "io_throughput"}, {"x": x})
    seal_s: list[float] = []
    open_s: list[float] = []
    file_size = 0
    with tempfile.TemporaryDirectory(prefix="dcstudio-bench-") as tmp:
        paths = [Path(tmp) / f"bench{i}.dcbundle" for i in range(repeats)]
        for path in paths:  # a new file each time: replacing the last one would also time its deletion
            t0 = time.perf_counter()
            sealed = seal(path, payload, kind="bundle", project_id="bench", sender=sender,
                          recipient=recipient.card)
            seal_s.append(time.perf_counter() - t0)
            file_size = sealed.size
        rss_after_seal = _peak_rss_bytes()
        for path in paths:
            t0 = time.perf_counter()
            opened = open_sealed(path, recipient, expect_kind="bundle", expect_project="bench",
                                 expect_sender=sender.card)
            open_s.append(time.perf_counter() - t0)
            y = opened.payload.arrays["x"]
            step = 1 << 22  # compare in slices: a whole-array comparison would allocate 0.25 copies
            if y.shape != x.shape or any(not np.array_equal(y[i:i + step], x[i:i + step])
                                         for i in range(0, x.size, step)):
                raise AssertionError("round trip changed the array")
            del y
            del opened
            gc.collect()
        rss_after_open = _peak_rss_bytes()

    def rate(seconds: list[float]) -> dict[str, float]:
        return {"best": size_mb / min(seconds), "median": size_mb / statistics.median(seconds)}

    def copies(peak: int | None) -> float | None:
        return None if peak is None or rss_before is None else (peak - rss_before) / n_bytes

    return {
        "size_mb": size_mb, "repeats": repeats, "file_bytes": file_size,
        "seal_mb_s": rate(seal_s), "open_mb_s": rate(open_s),
        "seal_seconds": seal_s, "open_seconds": open_s,
        "peak_rss_mb": {"before": None if rss_before is None else rss_before / 1e6,
                        "after_seal": None if rss_after_seal is None else rss_after_seal / 1e6,
                        "after_open": None if rss_after_open is None else rss_after_open / 1e6},
        "payload_copies": {"seal": copies(rss_after_seal), "open": copies(rss_after_open)},
        "target_mb_s": TARGET_MB_S,
        "machine": " ".join(p for p in (platform.machine(), platform.processor(), f"{os.cpu_count()} CPUs")
                            if p),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.io_throughput",
                                 description="Seal and open one float32 array; print MB/s.")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    r = run(args.size_mb, args.repeats)
    rss, cp = r["peak_rss_mb"], r["payload_copies"]

    def fmt(v: float | None, spec: str) -> str:
        return "n/a" if v is None else format(v, spec)

    print(f"envelope throughput: {r['size_mb']} MB float32, {r['repeats']} runs, {r['machine']}")
    print(f"{'':6}{'best MB/s':>11}{'median MB/s':>13}{'peak RSS MB':>13}{'copies':>8}")
    for step in ("seal", "open"):
        rr = r[f"{step}_mb_s"]
        print(f"{step:6}{rr['best']:>11.0f}{rr['median']:>13.0f}{fmt(rss['after_' + step], '.0f'):>13}"
              f"{fmt(cp[step], '.2f'):>8}")
    ok = min(r["seal_mb_s"]["median"], r["open_mb_s"]["median"]) >= TARGET_MB_S
    print(f"target {TARGET_MB_S:.0f} MB/s each way: {'met' if ok else 'NOT met'} (medians)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def run_from_args(args, say) -> dict:
    from benchmarks import print_and_record

    return print_and_record(run(), args, say)
