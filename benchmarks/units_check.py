"""The site's units check (:mod:`core.data.harmony`): false alarms at natural sites and at label-skewed sites, and
what it catches when a site's columns are in another unit.

1. The clinical tables (:data:`benchmarks.clinical.CASES`, the same sites). The kit is inferred the way
   ``dcstudio kit new`` makes it, from a pooled sample of 200 rows of all sites (the sample's mean, spread, level
   shares and per-class medians and spreads published, ranges not), and every site's own CSV is read against it
   as ``participant export`` reads it for a method that reads labels (DC-CFL, the default): with its labels, so the
   check compares class by class. Then each site is given again with every numeric column as x·2.54 + 10 (the
   issue's "inches for centimetres" stand-in), and with one column at a time so converted. Reported: the sites
   flagged with their own data (false alarms), the sites and columns flagged after the conversion (detections);
   and the same without labels (the rule a site without labels, or a kit without per-class statistics, uses).
2. The DC-CFL benchmark's label-skewed clients (``benchmarks/dccfl.py``, docs/results/dccfl: covertype, dry bean,
   gesture phase; splits C = 2, C = 3, Dir(0.1); 100 clients per cell). The kit is inferred from the cell's 100
   public rows (the protocol's public seed set, stratified), written as a CSV with its class names; every client's
   training rows are checked with their labels (class by class) and without (the whole sample); then with every
   column as x·2.54 + 10.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.clinical import CASES, load_case

SAMPLE_ROWS = 200
DCCFL_DATASETS = ("covertype", "drybean", "gesture")
DCCFL_SPLITS = ("C2", "C3", "Dir0.1")


def _warnings(schema, frame: pd.DataFrame, folder: Path, name: str, labels: bool) -> list[str]:
    from core.api.common import read_table
    from core.api.research import unit_warnings

    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    t = read_table(path, schema, labels=labels)
    return unit_warnings(schema, t.X, t.y, t.unseen)


def run_case(case_name: str, data_dir: str | None) -> dict[str, Any]:
    from core.api.common import infer_schema

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
            rows = frame[sites.to_numpy() == name]
            site: dict[str, Any] = {"rows": int(len(rows))}
            for mode, labels in (("with_labels", True), ("without_labels", False)):
                own = _warnings(schema, rows, folder, f"{name}-own", labels)
                converted = rows.copy()
                converted[numeric] = converted[numeric] * 2.54 + 10
                every = _warnings(schema, converted, folder, f"{name}-all", labels)
                single = {}
                for col in numeric:
                    one = rows.copy()
                    one[col] = one[col] * 2.54 + 10
                    single[col] = any(f"'{col}'" in w for w in _warnings(schema, one, folder, f"{name}-{col}",
                                                                           labels))
                site[mode] = {"own_warnings": own,
                              "all_converted_flagged_columns": sum(f"'{c}'" in " ".join(every) for c in numeric),
                              "single_column_caught": single}
            out["sites"][str(name)] = site
    return out


def run_dccfl_cell(dataset: str, split: str, seed: int, data_dir: str | None) -> dict[str, Any]:
    """One DC-CFL cell: its clients checked against a kit made from its 100 public rows (module docstring, 2)."""
    from benchmarks.dccfl import Protocol, make_cell
    from benchmarks.simulation.datasets import load_cached
    from core.api.common import infer_schema
    from core.api.research import unit_warnings

    X, y, classes = load_cached(dataset, data_dir)
    cell = make_cell(dataset, X, y, classes, split, seed, Protocol())
    columns = [f"x{j}" for j in range(X.shape[1])]
    with tempfile.TemporaryDirectory() as tmp:
        sample = pd.DataFrame(X[cell.public], columns=columns)
        sample["label"] = np.asarray(classes, dtype=object)[y[cell.public]]
        sample.to_csv(Path(tmp) / "public.csv", index=False)
        schema, _ = infer_schema(Path(tmp) / "public.csv", label="label", with_statistics=True)
    kept = [columns.index(c) for c in schema.feature_names]  # a column constant in the public rows is left out
    to_kit = np.array([schema.classes.index(c) for c in classes])
    flagged = {"with_labels": 0, "without_labels": 0, "converted_with_labels": 0}
    examples: list[str] = []
    for Xtr, ytr, _, _ in cell.clients:
        rows, labels = Xtr[:, kept], to_kit[ytr]
        own = unit_warnings(schema, rows, labels)
        flagged["with_labels"] += bool(own)
        flagged["without_labels"] += bool(unit_warnings(schema, rows))
        flagged["converted_with_labels"] += bool(unit_warnings(schema, rows * 2.54 + 10, labels))
        examples += own[:1]
    return {"dataset": dataset, "split": split, "seed": seed, "clients": len(cell.clients), "columns": len(kept),
            "flagged": flagged, "examples": examples[:3]}


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks units [--dataset NAME]… [--seeds N] [--data-dir DIR] [--json FILE]``: NAME is a
    clinical case or a DC-CFL data set (default: all of both; ``--seeds`` DC-CFL cells per split, default 3)."""
    from benchmarks.simulation.datasets import default_data_dir
    from core.api import write_json_atomic, write_text_atomic

    chosen = args.dataset or [*CASES, *DCCFL_DATASETS]
    cases = [c for c in chosen if c in CASES]
    dccfl = [d for d in chosen if d in DCCFL_DATASETS]
    seeds = args.seeds if getattr(args, "seeds_given", False) else 3
    base = Path(args.data_dir) if args.data_dir else default_data_dir()
    results = [run_case(c, args.data_dir) for c in cases]
    cells = [run_dccfl_cell(d, s, seed, str(base) if base else None) for d in dccfl for s in DCCFL_SPLITS
             for seed in range(seeds)]
    command = "python -m benchmarks units" + "".join(f" --dataset {c}" for c in args.dataset or []) + (
        f" --seeds {seeds}" if dccfl else "") + (f" --data-dir {args.data_dir}" if args.data_dir else "") + (
        f" --json {args.json}" if args.json else "")
    lines = [f"Command: `{command}`", ""]
    if results:
        lines += ["## 1. Clinical tables", "",
                  "| case | sites | numeric columns | check | sites flagged with their own data | sites flagged when "
                  "every numeric column is x·2.54 + 10 | single converted columns caught |",
                  "|---|---:|---:|---|---:|---:|---:|"]
        for r in results:
            s = r["sites"]
            for mode, words in (("with_labels", "class by class (labels)"), ("without_labels", "whole sample")):
                caught = [v for x in s.values() for v in x[mode]["single_column_caught"].values()]
                lines.append(f"| {r['case']} | {len(s)} | {len(r['numeric_columns'])} | {words} | "
                             f"{sum(bool(x[mode]['own_warnings']) for x in s.values())} | "
                             f"{sum(x[mode]['all_converted_flagged_columns'] > 0 for x in s.values())} | "
                             f"{sum(caught)} of {len(caught)} |")
        total = sum(len(r["sites"]) for r in results)
        for mode in ("with_labels", "without_labels"):
            caught = sum(x[mode]["all_converted_flagged_columns"] > 0 for r in results for x in r["sites"].values())
            alarms = sum(bool(x[mode]["own_warnings"]) for r in results for x in r["sites"].values())
            lines.append(f"- {mode.replace('_', ' ')}: {caught} of {total} converted sites caught, {alarms} false "
                         "alarm(s)")
        for r in results:
            for site, x in r["sites"].items():
                for w in x["with_labels"]["own_warnings"]:
                    lines.append(f"- {r['case']}: false alarm at {site} ({x['rows']} rows): {w}")
                missed = [c for c, ok in x["with_labels"]["single_column_caught"].items() if not ok]
                if missed:
                    lines.append(f"- {r['case']}: at {site} ({x['rows']} rows), converting only {', '.join(missed)} "
                                 "was not caught (class by class)")
        lines += ["", "A column the kit's sample holds as one constant value (colon's `study`) has no spread to "
                  "compare with, so nothing can be said of it; its ranges are not published by default (`kit new "
                  "--ranges` adds them, and with them the out-of-range test)."]
    if cells:
        lines += ["", "## 2. DC-CFL's label-skewed clients", "",
                  "| data set | split | seeds | clients | flagged, class by class (labels) | flagged, whole sample "
                  "(no labels) | every column x·2.54 + 10: caught (labels) |", "|---|---|---:|---:|---:|---:|---:|"]
        for d in dccfl:
            for s in DCCFL_SPLITS:
                cs = [c for c in cells if c["dataset"] == d and c["split"] == s]
                n = sum(c["clients"] for c in cs)
                f = {k: sum(c["flagged"][k] for c in cs) for k in cs[0]["flagged"]}
                lines.append(f"| {d} | {s} | {len(cs)} | {n} | {f['with_labels']} | {f['without_labels']} | "
                             f"{f['converted_with_labels']} of {n} |")
        n = sum(c["clients"] for c in cells)
        lines.append(f"- in all: {sum(c['flagged']['with_labels'] for c in cells)} of {n} clients flagged class by "
                     f"class, {sum(c['flagged']['without_labels'] for c in cells)} on the whole sample; "
                     f"{sum(c['flagged']['converted_with_labels'] for c in cells)} of {n} converted clients caught")
        for c in cells:
            for w in c["examples"][:1]:
                lines.append(f"- {c['dataset']} {c['split']} seed {c['seed']}: e.g. {w}")
    say(*lines)
    out = {"experiment": "units", "command": command, "cases": results, "dccfl": cells}
    if args.json:
        import os

        from benchmarks import machine
        from benchmarks.clinical import _commit

        out.update({"commit": _commit(), "machine": machine(), "load": os.getloadavg()[0]})
        write_json_atomic(args.json, out)
        write_text_atomic(Path(args.json).with_suffix(".md"), "# The site's units check\n\n"
                          + (__doc__ or "").split("\n\n", 1)[1] + "\n"
                          + f"Commit: {out['commit'] or 'unknown'}. Machine: {out['machine']}; load average at the "
                          f"end {out['load']:.1f}.\n\n" + "\n".join(lines) + "\n")
    return out
