"""The site's units check (:mod:`core.data.harmony`) on the real clinical tables: false alarms at natural sites,
and what it catches when a site's columns are in another unit.

For every clinical case (:data:`benchmarks.clinical.CASES`, the same sites), the kit is inferred the way
``dcstudio kit new`` makes it, from a pooled sample of 200 rows of all sites (the sample's mean, spread and
level shares published, ranges not), and every site's own CSV is read against it as ``participant export``
reads it. Then each site is given again with every numeric column as x·2.54 + 10 (the issue's "inches for
centimetres" stand-in), and with one column at a time so converted. Reported: the sites flagged with their
own data (false alarms), the sites and columns flagged after the conversion (detections).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.clinical import CASES, load_case

SAMPLE_ROWS = 200


def _warnings(schema, frame: pd.DataFrame, folder: Path, name: str) -> list[str]:
    from core.data.harmony import unit_warnings
    from core.data.tabular import read_table

    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return unit_warnings(schema, read_table(path, schema, labels=False).X)


def run_case(case_name: str, data_dir: str | None) -> dict[str, Any]:
    from core.data.schema import infer_schema

    case = CASES[case_name]
    frame, sites = load_case(case, data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sample = frame.sample(n=min(SAMPLE_ROWS, len(frame)), random_state=0)
        sample.to_csv(folder / "sample.csv", index=False)
        schema, _ = infer_schema(folder / "sample.csv", label=case.label, with_statistics=True)
        numeric = [f.name for f in schema.features if f.type == "numeric"]
        out: dict[str, Any] = {"case": case_name, "numeric_columns": numeric, "sites": {}}
        for name in sorted(sites.unique()):
            rows = frame[sites.to_numpy() == name].drop(columns=[case.label])
            own = _warnings(schema, rows, folder, f"{name}-own")
            converted = rows.copy()
            converted[numeric] = converted[numeric] * 2.54 + 10
            every = _warnings(schema, converted, folder, f"{name}-all")
            single = {}
            for col in numeric:
                one = rows.copy()
                one[col] = one[col] * 2.54 + 10
                single[col] = any(f"'{col}'" in w for w in _warnings(schema, one, folder, f"{name}-{col}"))
            out["sites"][str(name)] = {"rows": int(len(rows)), "own_warnings": own,
                                       "all_converted_flagged_columns": sum(f"'{c}'" in " ".join(every)
                                                                            for c in numeric),
                                       "single_column_caught": single}
    return out


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks units [--dataset CASE]… [--data-dir DIR] [--json FILE]``."""
    from core.fileio import write_json_atomic, write_text_atomic

    cases = args.dataset or list(CASES)
    results = [run_case(c, args.data_dir) for c in cases]
    command = "python -m benchmarks units" + "".join(f" --dataset {c}" for c in args.dataset or []) + (
        f" --data-dir {args.data_dir}" if args.data_dir else "") + (f" --json {args.json}" if args.json else "")
    lines = [f"Command: `{command}`", "",
             "| case | sites | numeric columns | sites flagged with their own data | sites flagged when every numeric "
             "column is x·2.54 + 10 | single converted columns caught |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        s = r["sites"]
        caught = [v for x in s.values() for v in x["single_column_caught"].values()]
        lines.append(f"| {r['case']} | {len(s)} | {len(r['numeric_columns'])} | "
                     f"{sum(bool(x['own_warnings']) for x in s.values())} | "
                     f"{sum(x['all_converted_flagged_columns'] > 0 for x in s.values())} | "
                     f"{sum(caught)} of {len(caught)} |")
    for r in results:
        for site, x in r["sites"].items():
            for w in x["own_warnings"]:
                lines.append(f"- {r['case']}: false alarm at {site} ({x['rows']} rows): {w}")
            missed = [c for c, caught in x["single_column_caught"].items() if not caught]
            if missed:
                lines.append(f"- {r['case']}: at {site} ({x['rows']} rows), converting only {', '.join(missed)} "
                             "was not caught")
    lines += ["", "A column the kit's sample holds as one constant value (colon's `study`) has no spread to compare "
              "with, so nothing can be said of it; its ranges are not published by default (`kit new --ranges` adds "
              "them, and with them the out-of-range test)."]
    say(*lines)
    out = {"experiment": "units", "command": command, "cases": results}
    if args.json:
        write_json_atomic(args.json, out)
        write_text_atomic(Path(args.json).with_suffix(".md"), "# The site's units check on the clinical tables\n\n"
                          + (__doc__ or "").split("\n\n", 1)[1] + "\n" + "\n".join(lines) + "\n")
    return out
