"""A site's ``participant apply`` on a large CSV, beside a bare ``pandas.read_csv`` of the same file (issue #36).

``python -m benchmarks apply [--rows N] [--seeds R]``: a whole DC-CFL round is made in-process first — three sites of
2,000 rows (rows of the large file's distribution, 50 numeric columns, 3 classes; the measured site holds one class,
so it has no own-rows model and applies the shared model), each exporting with the product defaults, and the
analyst's run — then, ``R`` times (default 3) and alternating in the same run so
both see the same load, two commands each in a fresh process:

1. the bare read: ``python -c "import pandas; pandas.read_csv(path)"``;
2. ``dcstudio participant apply --package … --identity … --csv BIG.csv --out RESULT.csv`` as a site runs it (the
   identity locked at the default scrypt cost, unlocked from ``DCSTUDIO_PASSPHRASE``).

The product runs as installed, its modules read from their compiled bytecode (:func:`benchmarks.child_usage.installed`).
Each process's CPU time (user + system) and peak RSS are the kernel's (:mod:`benchmarks.child_usage`). Targets
(issue #36): apply ≤ 2× the bare read's CPU time and ≤ 1.5× its peak memory at 1,000,000 rows.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
from pathlib import Path

PASS = "benchmark passphrase"


def make_round(work: Path, *, features: int = 50, classes: int = 3, sites: int = 3, site_rows: int = 2000,
               seed: int = 0, site_work_factor: int = 18) -> dict:
    """Identities, a DC-CFL kit, a plain anchor, the sites' bundles and the analyst's packages under ``work``;
    the site identities use ``site_work_factor`` (the CLI's default 18 unless a test asks for less)."""
    import pandas as pd

    from benchmarks.tabular_synth import write_synthetic_csv
    from core.api.common import Kit
    from core.cli import main

    def run(*argv) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main([str(a) for a in argv])
        if code != 0:
            raise RuntimeError(f"dcstudio {' '.join(map(str, argv[:2]))} failed while making the round")

    os.environ["DCSTUDIO_PASSPHRASE"] = PASS
    pool = work / "pool.csv"
    write_synthetic_csv(pool, 2 * classes * sites * site_rows, features, classes, seed)  # the big file's first rows
    frame = pd.read_csv(pool, dtype=str, keep_default_na=False)
    names = [f"site{i}" for i in range(sites)]
    # the measured site (site0) holds one class only: it has no own-rows model, so it applies the shared model
    parts = [frame[frame["label"] == "0"].iloc[:site_rows]]
    rest = frame[frame["label"] != "0"]
    parts += [rest.iloc[i * site_rows:(i + 1) * site_rows] for i in range(sites - 1)]
    for name, part in zip(names, parts, strict=True):
        part.to_csv(work / f"{name}.csv", index=False)
    frame.iloc[:300].to_csv(work / "seed.csv", index=False)  # the lead site's shareable sample for the anchor
    run("keys", "new", "--name", "analyst", "--out", work / "analyst", "--work-factor", 14)
    run("kit", "new", "--identity", work / "analyst/analyst.dcid", "--name", "apply-bench", "--schema-from", pool,
        "--label", "label", "--method", "dccfl", "--out", work / "p.dckit")
    run("anchor", "new", "--kit", work / "p.dckit", "--seed-csv", work / "seed.csv", "--plain", "--out",
        work / "p.dcanchor")
    fingerprint = Kit.load(work / "p.dckit").analyst.fingerprint
    for name in names:
        run("keys", "new", "--name", name, "--out", work / name, "--work-factor", site_work_factor)
        run("participant", "export", "--kit", work / "p.dckit", "--anchor", work / "p.dcanchor", "--identity",
            work / name / f"{name}.dcid", "--analyst-fingerprint", fingerprint, "--csv", work / f"{name}.csv",
            "--out", work / "bundles" / f"{name}.dcbundle", "--accept-poor-privacy")  # the default kit's risk (#35)
    run("analyst", "run", "--kit", work / "p.dckit", "--identity", work / "analyst/analyst.dcid", "--bundles",
        work / "bundles", "--out", work / "out", "--confirm", *[work / n / f"{n}.dcpub" for n in names])
    return {"site": names[0], "package": work / "out" / f"{names[0]}.dcpkg",
            "identity": work / names[0] / f"{names[0]}.dcid"}


def run(rows: int = 1_000_000, features: int = 50, repeats: int = 3, folder: Path | None = None,
        site_work_factor: int = 18, site_rows: int = 2000, sites: int = 3) -> dict:
    from benchmarks import machine
    from benchmarks.child_usage import bare_read, dcstudio, installed, measured
    from benchmarks.tabular_synth import write_synthetic_csv

    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        work = Path(tmp)
        big = work / "big.csv"
        write_synthetic_csv(big, rows, features, 3, seed=0)
        r = make_round(work, features=features, site_work_factor=site_work_factor, site_rows=site_rows, sites=sites)
        env = {"DCSTUDIO_PASSPHRASE": PASS, **installed(work)}
        apply = [*dcstudio(), "participant", "apply", "--package", str(r["package"]), "--identity",
                 str(r["identity"]), "--csv", str(big), "--out", str(work / "RESULT.csv")]
        reads, applies = [], []
        for i in range(repeats):  # paired and alternating: both see the same load
            reads.append(measured(bare_read(big)))
            applies.append(measured(apply, env=env, log=work / f"apply{i}.log"))
        said = (work / "apply0.log").read_text(errors="replace")
        size_mb = big.stat().st_size / 1e6
        out_mb = (work / "RESULT.csv").stat().st_size / 1e6
    ratios = [a["cpu_seconds"] / b["cpu_seconds"] for a, b in zip(applies, reads, strict=True)]
    memory = [a["peak_rss_mb"] / b["peak_rss_mb"] for a, b in zip(applies, reads, strict=True)]
    return {"rows": rows, "features": features, "csv_mb": round(size_mb, 1), "result_mb": round(out_mb, 1),
            "repeats": repeats, "read": reads, "apply": applies,
            "cpu_ratio_median": round(statistics.median(ratios), 2), "cpu_ratios": [round(x, 2) for x in ratios],
            "memory_ratio_max": round(max(memory), 2),
            "model_used": "own" if "trained on your own rows" in said.lower() else "package",
            "apply_said": said.strip().splitlines()[-6:],
            "load_avg_1_5_15": [round(v, 2) for v in os.getloadavg()], "machine": machine("pandas")}


def run_from_args(args, say) -> dict:
    from benchmarks import print_and_record

    rows = args.rows or 1_000_000
    seeds = args.seeds if getattr(args, "seeds_given", False) else 3
    return print_and_record(run(rows, repeats=seeds), args, say)
