"""A site's ``participant export`` as a user runs it, beside a bare ``pandas.read_csv`` of the same file (issues #15,
#36).

``python -m benchmarks export [--rows N] [--seeds R]`` measures two tables:

* ``numeric``: N rows (default 1,000,000) × 50 numeric columns and a 3-class label (:func:`write_synthetic_csv`);
* ``text``: 200,000 rows like a hospital's, 6 numeric and 10 text columns with 2 % empty cells and a yes/no outcome
  (:func:`write_clinical_like_csv`), whose kit one-hot encodes the words and fills the empty cells.

For each, the project is made in-process as its people would (``keys new``, ``kit new --schema-from`` the table's
first 2,000 rows, ``anchor new --seed-csv`` those rows), then ``R`` times (default 3), alternating in the same run
so both see the same load, two commands each in a fresh process:

1. the bare read: ``python -c "import pandas; pandas.read_csv(path)"``;
2. ``dcstudio participant export --kit … --anchor … --identity … --csv … --out … --analyst-fingerprint …`` into
   a fresh workspace, the identity locked at the CLI's default scrypt cost and unlocked from
   ``DCSTUDIO_PASSPHRASE``: everything a site's export does (read and check the CSV, PCA, reduction, shuffle, the
   own-rows model and its cross-validation, the privacy check, seal, workspace, audit log).

The product runs as installed, its modules read from their compiled bytecode (:func:`benchmarks.child_usage.installed`).
Each process's CPU time (user + system) and peak RSS are the kernel's (:mod:`benchmarks.child_usage`); the ratio is
taken per pair and the median reported. Targets (issue #36): export ≤ 2.3× the bare read's CPU time for both
tables, peak memory ≤ 1.5 GB at 1,000,000 × 50.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import tempfile
from pathlib import Path

PASS = "benchmark passphrase"
SAMPLE_ROWS = 2000


def make_project(work: Path, table: Path, *, site_work_factor: int = 18) -> list[str]:
    """Keys, a DC-CFL kit from the table's first rows, a plain anchor seeded with them; the export's argv tail."""
    import pandas as pd

    from core.api.common import Kit
    from core.cli import main

    def run(*argv) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main([str(a) for a in argv])
        if code != 0:
            raise RuntimeError(f"dcstudio {' '.join(map(str, argv[:2]))} failed while making the project")

    os.environ["DCSTUDIO_PASSPHRASE"] = PASS
    sample = work / "sample.csv"
    pd.read_csv(table, nrows=SAMPLE_ROWS, dtype=str, keep_default_na=False).to_csv(sample, index=False)
    label = "label" if "label" in pd.read_csv(sample, nrows=0).columns else "outcome"
    run("keys", "new", "--name", "analyst", "--out", work / "analyst", "--work-factor", 14)
    run("keys", "new", "--name", "site", "--out", work / "site", "--work-factor", site_work_factor)
    run("kit", "new", "--identity", work / "analyst/analyst.dcid", "--name", "export-bench", "--schema-from", sample,
        "--label", label, "--method", "dccfl", "--out", work / "p.dckit")
    run("anchor", "new", "--kit", work / "p.dckit", "--seed-csv", sample, "--plain", "--out", work / "p.dcanchor")
    return ["participant", "export", "--kit", str(work / "p.dckit"), "--anchor", str(work / "p.dcanchor"),
            "--identity", str(work / "site/site.dcid"), "--csv", str(table),
            "--analyst-fingerprint", Kit.load(work / "p.dckit").analyst.fingerprint, "--accept-poor-privacy"]


def run_table(kind: str, rows: int, repeats: int = 3, folder: Path | None = None, site_work_factor: int = 18) -> dict:
    """Write the table, make its project, measure ``repeats`` pairs (module docstring)."""
    from benchmarks.child_usage import bare_read, dcstudio, installed, measured
    from benchmarks.tabular_synth import write_clinical_like_csv, write_synthetic_csv

    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        work = Path(tmp)
        table = work / f"{kind}.csv"
        if kind == "numeric":
            write_synthetic_csv(table, rows, 50, 3, seed=0)
        else:
            write_clinical_like_csv(table, rows, seed=0)
        export = [*dcstudio(), *make_project(work, table, site_work_factor=site_work_factor)]
        env = {"DCSTUDIO_PASSPHRASE": PASS, **installed(work)}
        reads, exports = [], []
        for i in range(repeats):  # paired and alternating: both see the same load
            reads.append(measured(bare_read(table)))
            exports.append(measured([*export, "--out", str(work / f"b{i}.dcbundle"), "--workspace",
                                     str(work / f"ws{i}")], env=env, log=work / f"export{i}.log"))
        said = (work / "export0.log").read_text(errors="replace").strip().splitlines()
        size_mb = table.stat().st_size / 1e6
        bundle_mb = (work / "b0.dcbundle").stat().st_size / 1e6
    ratios = [e["cpu_seconds"] / r["cpu_seconds"] for e, r in zip(exports, reads, strict=True)]
    return {"table": kind, "rows": rows, "csv_mb": round(size_mb, 1), "bundle_mb": round(bundle_mb, 1),
            "repeats": repeats, "read": reads, "export": exports,
            "cpu_ratio_median": round(statistics.median(ratios), 2), "cpu_ratios": [round(x, 2) for x in ratios],
            "read_cpu_median": round(statistics.median(r["cpu_seconds"] for r in reads), 3),
            "export_cpu_median": round(statistics.median(e["cpu_seconds"] for e in exports), 3),
            "export_peak_rss_mb": max(e["peak_rss_mb"] for e in exports),
            "read_peak_rss_mb": max(r["peak_rss_mb"] for r in reads),
            "export_said": [line for line in said if line.startswith(("read ", "leaves", "privacy", "(arrays"))][:6],
            "load_avg_1_5_15": [round(v, 2) for v in os.getloadavg()]}


def run(rows: int = 1_000_000, text_rows: int = 200_000, repeats: int = 3, folder: Path | None = None,
        site_work_factor: int = 18) -> dict:
    from benchmarks import machine

    tables = [run_table("numeric", rows, repeats, folder, site_work_factor)]
    if text_rows:
        tables.append(run_table("text", text_rows, repeats, folder, site_work_factor))
    return {"tables": tables, "machine": machine("pandas")}


def main(argv: list[str] | None = None) -> dict:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks export")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--text-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    res = run(args.rows, args.text_rows, args.repeats)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()


def run_from_args(args, say) -> dict:
    from benchmarks import print_and_record

    repeats = args.seeds if getattr(args, "seeds_given", False) else 3
    return print_and_record(run(args.rows or 1_000_000, repeats=repeats), args, say)
