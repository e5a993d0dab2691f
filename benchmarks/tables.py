"""``python -m benchmarks tables``: the tables hospitals bring (issue #33) — does every round complete with kit
defaults, no site left out, each fix said before it is needed?

Cases: the four public clinical tables (flchain, colon, nwtco, lung: :data:`benchmarks.clinical.CASES`, the same
sites and 75/25 splits) and ``hospital``, a table of our own making (:func:`hospital_sites`) with what stopped
rounds on the hidden tables: one site (a registry, a quarter of the patients) never records ``chol``; a stage
``IV`` on about 1 % of one site's patients only, absent from the kit's sample; a source's own missing-value code
``NA_NA`` (in the sample and in one site's files, held-out rows included); a site whose CSV is French
(semicolons, decimal comma) and writes its 0/1 column ``smoker`` as ``1,0``; an education column written
``LT 8 yrs`` / ``8-12 yrs`` / ``MT 12 yrs``.

Per case and seed, as users would run it: ``kit new`` with defaults on a pooled sample (public tables: 200 rows of
all sites' training rows, and again 30 rows: a kit typed from a small sample; hospital: its 320-row sample); if
``kit new``'s notes name a missing-value code (``--missing-token``), the kit is made again with it, as the note
says — the only fix a round takes, and said before any site needs it. The lead (first) site makes the anchor from
its training CSV; every site exports its training CSV (a site whose columns the units check names would need
``--units-checked``: counted as left out); the analyst runs the kit's method (DC-CFL); every site applies its
package to its test CSV. Recorded per site: exported, left out, what export and apply said (notes), rows
predicted, accuracy.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.api import ConfigError, DCError

DEFAULT_SEEDS = 2
SAMPLE_ROWS = 200
SMALL_SAMPLE_ROWS = 30
HOSPITAL_SAMPLE_ROWS = 320
HOSPITAL_SITES = {"city": 700, "registry": 500, "clinic": 400, "lyon": 400}  # rows before the 75/25 split
RARE_LEVEL_SHARE = 0.012  # stage IV at the clinic only
_TOKEN = re.compile(r"--missing-token '([^']+)'")


# ---- the table of our own making -----------------------------------------------------------------------------
def hospital_frame(n: int, rng: np.random.Generator, *, older: float = 0.0, rare: float = 0.0) -> pd.DataFrame:
    """``n`` patients: age, sex, bmi, chol, stage (I–III, and IV on a ``rare`` share), educ, smoker (0/1) and the
    outcome ``died`` (yes/no) that depends on them; ``older`` shifts the ages (label skew between sites); a few
    cells empty."""
    age = rng.normal(62 + older, 11, n).round(0)
    sex = rng.choice(["F", "M"], n)
    bmi = rng.normal(27, 4.5, n).round(1)
    chol = rng.normal(210, 38, n).round(0)
    stage = rng.choice(["I", "II", "III"], n, p=[0.45, 0.35, 0.20]).astype(object)
    stage[rng.random(n) < rare] = "IV"
    educ = rng.choice(["LT 8 yrs", "8-12 yrs", "MT 12 yrs"], n, p=[0.3, 0.45, 0.25])
    smoker = (rng.random(n) < 0.3).astype(int)
    risk = (0.07 * (age - 62) + 0.8 * (sex == "M") + 0.02 * (chol - 210) + 0.9 * smoker
            + pd.Series(stage).map({"I": -1.0, "II": 0.0, "III": 1.2, "IV": 2.5}).to_numpy()
            - 0.4 * (educ == "MT 12 yrs"))
    died = np.where(risk + rng.logistic(0, 0.8, n) > 0.3, "yes", "no")
    frame = pd.DataFrame({"age": age, "sex": sex, "bmi": bmi, "chol": chol, "stage": stage, "educ": educ,
                          "smoker": smoker, "died": died})
    for col in ("bmi", "chol"):
        frame[col] = frame[col].astype(object)
        frame.loc[rng.random(n) < 0.05, col] = None
    return frame


def hospital_sites(seed: int, scale: float = 1.0) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The kit's sample and each site's rows (module docstring; ``scale`` shrinks the sites for tests): the registry
    never records ``chol``; stage IV only at the clinic (at least 3 rows); the lyon site's lab writes ``NA_NA`` for a
    missing bmi or chol (so does part of the sample, pooled from every source)."""
    rng = np.random.default_rng([33, seed])
    n = {name: int(rows * scale) for name, rows in HOSPITAL_SITES.items()}
    sites = {"city": hospital_frame(n["city"], rng),
             "registry": hospital_frame(n["registry"], rng, older=6.0),
             "clinic": hospital_frame(n["clinic"], rng, older=-4.0, rare=RARE_LEVEL_SHARE),
             "lyon": hospital_frame(n["lyon"], rng)}
    clinic = sites["clinic"]
    if (clinic["stage"] == "IV").sum() < 3:
        clinic.loc[clinic.index[[1, 2, 3]], "stage"] = "IV"
    sites["registry"]["chol"] = None
    for col in ("bmi", "chol"):
        lyon = sites["lyon"]
        lyon.loc[lyon[col].isna(), col] = "NA_NA"
    sample = hospital_frame(HOSPITAL_SAMPLE_ROWS, rng)  # no stage IV in the sample
    sample.loc[rng.random(len(sample)) < 0.03, "bmi"] = "NA_NA"
    return sample, sites


def write_site_csv(frame: pd.DataFrame, path: Path, french: bool) -> None:
    """The site's own CSV: French (``;``, decimal comma, 0/1 written ``1,0``) or plain."""
    if not french:
        frame.to_csv(path, index=False, na_rep="")
        return
    out = frame.copy()
    out["smoker"] = out["smoker"].map(lambda v: f"{v},0")  # a spreadsheet that writes every number with a decimal
    for col in ("age", "bmi", "chol"):
        out[col] = out[col].map(lambda v: v if isinstance(v, str) or pd.isna(v) else f"{v:g}".replace(".", ","))
    out.to_csv(path, index=False, sep=";", na_rep="")


# ---- one round -----------------------------------------------------------------------------------------------
def kit_with_said_fixes(sample_csv: Path, label: str) -> tuple[Any, list[str], list[str]]:
    """``kit new`` with defaults; made again with every missing-value code its notes name (the note's own fix).
    Returns (schema, notes of the first try, the markers added)."""
    from core.api.common import MISSING_TOKENS, CsvOptions, infer_schema

    schema, notes = infer_schema(sample_csv, label=label, with_statistics=True)
    tokens = list(dict.fromkeys(t for n in notes for t in _TOKEN.findall(n)))
    if tokens:
        schema, _ = infer_schema(sample_csv, label=label, with_statistics=True,
                                 options=CsvOptions(missing_tokens=(*MISSING_TOKENS, *tokens)))
    return schema, notes, tokens


def product_round(folder: Path, sample_csv: Path, sites: list[tuple[str, Path, Path]], label: str, seed: int
                  ) -> dict[str, Any]:
    """Kit (with the fixes its notes say), anchor, every export, the analyst's run, every apply (module docstring).
    ``sites``: (name, training CSV, test CSV), the lead first."""
    from core.api import Identity
    from core.api.analyst import AnalystRound, build_kit
    from core.api.common import AnalystWorkspace, SiteWorkspace, read_table
    from core.api.participant import ParticipantRound, anchor_for_kit, apply_package

    schema, kit_notes, tokens = kit_with_said_fixes(sample_csv, label)
    analyst = Identity.generate("analyst")
    kit, _ = build_kit(name=f"tables {label}", schema=schema, analyst=analyst.card, settings={"seed": seed})
    kit_path = folder / "project.dckit"
    kit.save(kit_path, analyst)
    out: dict[str, Any] = {"kit_notes": kit_notes, "kit_tokens": tokens,
                           "kit_warnings": [n for n in kit_notes if "would settle it" in n],
                           "kit_columns": [f"{f.name} ({f.type})" for f in kit.schema.features], "sites": {}}
    idents = {name: Identity.generate(name) for name, _, _ in sites}
    lead_X = read_table(sites[0][1], kit.schema, labels=False).X  # `anchor new --csv`: never stopped by a level
    anchor = anchor_for_kit(kit, local_X=lead_X, rng=np.random.default_rng([seed, 33]))
    bundles = folder / "to-analyst"
    for name, train, _ in sites:
        record: dict[str, Any] = {"exported": False}
        out["sites"][name] = record
        job = ParticipantRound(kit, kit_path, idents[name], folder / name, anchor=anchor)
        job.confirm_analyst(kit.analyst, how="benchmark: the kit's own signer")
        try:
            table = job.load(train)
        except DCError as exc:
            record["refused"] = exc.message
            continue
        record.update(rows=table.n_rows, export_notes=list(table.notes), unit_warnings=list(job.unit_warnings),
                      filled=dict(table.filled), unseen=table.unseen)
        if job.unit_warnings:  # the site would have to check its columns and tick --units-checked
            continue
        job.accept_privacy_risk("the test accepts the default kit's collusion risk")
        job.seal(bundles / f"{name}.dcbundle")
        record["exported"] = True
    analysis = AnalystRound(kit, analyst, AnalystWorkspace(folder / "analyst"))
    for ident in idents.values():
        analysis.confirm(ident.card, how="benchmark: the sites' cards")
    _, received = analysis.import_folder(bundles)
    t0 = time.perf_counter()
    run = analysis.run(received)
    out["analyst_seconds"] = time.perf_counter() - t0
    analysis.export(run, folder / "to-sites")
    for name, _, test in sites:
        record = out["sites"][name]
        if not record["exported"]:
            continue
        try:
            res = apply_package(folder / "to-sites" / f"{name}.dcpkg", idents[name], test, folder / f"{name}.csv",
                                workspace=SiteWorkspace(folder / name))
        except DCError as exc:
            record["apply_refused"] = exc.message
            continue
        fmt = res.input_format
        result = pd.read_csv(res.out_path, sep=fmt.delimiter, dtype=str, keep_default_na=False,
                             encoding=fmt.encoding)
        record.update(applied_rows=res.rows, predicted=int((result["prediction"] != "").sum()),
                      apply_notes=[w for w in res.warnings if "already applied" not in w],
                      accuracy=float(np.mean(result["prediction"] == result[label])))
    return out


# ---- cases ---------------------------------------------------------------------------------------------------
def public_cells(case_name: str, data_dir: str | None, seed: int, root: Path) -> list[dict[str, Any]]:
    """A public table: one round with a 200-row sample kit and one with a 30-row one."""
    from benchmarks.clinical import CASES, load_case, split_sites

    case = CASES[case_name]
    frame, sites = load_case(case, data_dir)
    parts = split_sites(frame, sites, case.label, seed)
    csvs = []
    for name, tr, te in parts:
        tr.to_csv(root / f"{name}-train.csv", index=False, na_rep="")
        te.to_csv(root / f"{name}-test.csv", index=False, na_rep="")
        csvs.append((name, root / f"{name}-train.csv", root / f"{name}-test.csv"))
    pooled = pd.concat([tr for _, tr, _ in parts], ignore_index=True)
    cells = []
    for variant, rows in (("sample 200", SAMPLE_ROWS), ("sample 30", SMALL_SAMPLE_ROWS)):
        sample = root / f"sample-{rows}.csv"
        pooled.sample(n=min(rows, len(pooled)), random_state=seed).to_csv(sample, index=False, na_rep="")
        folder = root / f"round-{rows}"
        folder.mkdir()
        cells.append({"case": case_name, "variant": variant, "seed": seed,
                      **product_round(folder, sample, csvs, case.label, seed)})
    return cells


def write_hospital(root: Path, seed: int, scale: float = 1.0) -> list[tuple[str, Path, Path]]:
    """The hospital table's sample (``root/sample.csv``) and each site's training and test CSV, in its own format
    (lyon: French); returns (site, training CSV, test CSV), the lead (city) first."""
    from sklearn.model_selection import train_test_split

    sample, frames = hospital_sites(seed, scale)
    sample.to_csv(root / "sample.csv", index=False, na_rep="")
    csvs = []
    for name, frame in frames.items():
        tr, te = train_test_split(frame, test_size=0.25, random_state=seed, stratify=frame["died"])
        if name == "clinic":  # its rare level both in the rows it exports and in its new rows
            rare = frame.index[frame["stage"] == "IV"]
            tr = pd.concat([tr.drop(rare, errors="ignore"), frame.loc[rare[: max(1, len(rare) - 1)]]])
            te = pd.concat([te.drop(rare, errors="ignore"), frame.loc[rare[-1:]]])
        for part, rows in (("train", tr), ("test", te)):
            write_site_csv(rows, root / f"{name}-{part}.csv", french=name == "lyon")
        csvs.append((name, root / f"{name}-train.csv", root / f"{name}-test.csv"))
    return csvs


def hospital_cells(seed: int, root: Path) -> list[dict[str, Any]]:
    csvs = write_hospital(root, seed)
    folder = root / "round"
    folder.mkdir()
    return [{"case": "hospital", "variant": "own table", "seed": seed,
             **product_round(folder, root / "sample.csv", csvs, "died", seed)}]


def _cell_task(case: str, data_dir: str | None, seed: int) -> list[dict[str, Any]]:
    from benchmarks import one_thread

    started = time.perf_counter()
    with one_thread(), tempfile.TemporaryDirectory(prefix=f"tables-{case}-") as tmp:
        cells = hospital_cells(seed, Path(tmp)) if case == "hospital" else public_cells(case, data_dir, seed,
                                                                                        Path(tmp))
    for c in cells:
        c["seconds"] = (time.perf_counter() - started) / len(cells)
    return cells


def summary_row(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (case, variant): sites, rounds, exports, sites left out, what was said, rows predicted."""
    sites = [s for c in cells for s in c["sites"].values()]
    return {"rounds": len(cells), "site_rounds": len(sites),
            "exported": sum(s["exported"] for s in sites),
            "left_out": sum(not s["exported"] for s in sites),
            "applied": sum("applied_rows" in s for s in sites),
            "rows_predicted": sum(s.get("predicted", 0) for s in sites),
            "rows_applied": sum(s.get("applied_rows", 0) for s in sites),
            "kit_warnings": int(np.mean([len(c["kit_warnings"]) for c in cells])),
            "kit_tokens": sorted({t for c in cells for t in c["kit_tokens"]}),
            "export_notes": sum(len(s.get("export_notes", [])) for s in sites),
            "apply_notes": sum(len(s.get("apply_notes", [])) for s in sites),
            "unseen_rows": sum(sum(sum(v.values()) for v in s.get("unseen", {}).values()) for s in sites),
            "accuracy": float(np.mean([s["accuracy"] for s in sites if "accuracy" in s] or [np.nan]))}


def run(cases: Sequence[str], seeds: Sequence[int], *, data_dir: str | None = None, jobs: int = 1,
        say: Callable[[str], None] = print) -> dict[str, Any]:
    from benchmarks.clinical import CASES, load_case

    unknown = [c for c in cases if c not in CASES and c != "hospital"]
    if unknown:
        raise ConfigError(f"unknown table '{unknown[0]}'; the tables are {', '.join([*CASES, 'hospital'])}")
    for c in cases:
        if c != "hospital":
            load_case(CASES[c], data_dir)  # a missing table is one sentence before any work
    tasks = [(c, s) for c in cases for s in seeds]
    started = time.perf_counter()
    cells: list[dict[str, Any]] = []

    def done(got: list[dict[str, Any]]) -> None:
        cells.extend(got)
        for c in got:
            r = summary_row([c])
            say(f"{c['case']} ({c['variant']}) seed {c['seed']}: {r['exported']}/{r['site_rounds']} sites exported, "
                f"{r['rows_predicted']:,}/{r['rows_applied']:,} rows predicted, {r['kit_warnings']} kit warning(s), "
                f"{r['export_notes']} export note(s), {r['apply_notes']} apply note(s), accuracy {r['accuracy']:.3f}")

    if jobs <= 1:
        for c, s in tasks:
            done(_cell_task(c, data_dir, s))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            for fut in as_completed([pool.submit(_cell_task, c, data_dir, s) for c, s in tasks]):
                done(fut.result())
    order = {c: i for i, c in enumerate(cases)}
    cells.sort(key=lambda c: (order[c["case"]], c["variant"], c["seed"]))
    keys = list(dict.fromkeys((c["case"], c["variant"]) for c in cells))
    summary = {f"{case} / {variant}": summary_row([c for c in cells if (c["case"], c["variant"]) == (case, variant)])
               for case, variant in keys}
    return {"experiment": "tables", "cases": list(cases), "seeds": list(seeds), "jobs": jobs, "summary": summary,
            "cells": cells, "wall_seconds": time.perf_counter() - started, "load": os.getloadavg()[0]}


def markdown(out: dict[str, Any]) -> str:
    from benchmarks import machine

    lines = ["# The tables hospitals bring: every round with kit defaults (issue #33)", "",
             f"Command: `{out['command']}`", "",
             f"Commit: {out.get('commit') or 'unknown'}. Machine: {machine()}; load average at the end "
             f"{out['load']:.1f} (shared machine); {out['jobs']} worker process(es); wall time "
             f"{out['wall_seconds'] / 60:.1f} min; seeds {out['seeds']}.", "",
             (__doc__ or "").split("\n\n", 1)[1].strip(), "", "## Summary", "",
             "| table / kit sample | rounds | site rounds | exported | left out | rows predicted | kit warnings per "
             "kit | markers the kit's notes named | export notes | apply notes | rows in an unseen bucket | "
             "accuracy |", "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for name, r in out["summary"].items():
        lines.append(f"| {name} | {r['rounds']} | {r['site_rounds']} | {r['exported']} | {r['left_out']} | "
                     f"{r['rows_predicted']:,} of {r['rows_applied']:,} | {r['kit_warnings']} | "
                     f"{', '.join(r['kit_tokens']) or '–'} | {r['export_notes']} | {r['apply_notes']} | "
                     f"{r['unseen_rows']:,} | {r['accuracy']:.3f} |")
    lines += ["", "\"left out\": a site whose export was refused or whose columns the units check named (it would "
              "have to tick `--units-checked`). Accuracy: the package's predictions on each site's test rows, mean "
              "over sites and seeds (a check that the rounds are real, not a target).", "",
              "## What each round said (first seed)", ""]
    seen: set = set()
    for c in out["cells"]:
        key = (c["case"], c["variant"])
        if key in seen:
            continue
        seen.add(key)
        lines += [f"### {c['case']} ({c['variant']})", "", f"Kit columns: {', '.join(c['kit_columns'])}.", ""]
        lines += [f"- kit new: {n}" for n in c["kit_notes"] if "would settle it" in n or "--missing-token" in n]
        for name, s in c["sites"].items():
            lines += [f"- {name}, export: {n}" for n in s.get("export_notes", [])]
            lines += [f"- {name}, units check: {w}" for w in s.get("unit_warnings", [])]
            lines += [f"- {name}, refused: {s['refused']}"] if "refused" in s else []
            lines += [f"- {name}, apply: {n}" for n in s.get("apply_notes", [])]
            lines += [f"- {name}, apply refused: {s['apply_refused']}"] if "apply_refused" in s else []
        lines.append("")
    return "\n".join(lines) + "\n"


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks tables [--dataset TABLE]… [--seeds N] [--data-dir DIR] [--json FILE]``; TABLE is a
    clinical case or ``hospital`` (default: all five); seeds default to 2 here."""
    from benchmarks import worker_count
    from benchmarks.clinical import CASES, _commit
    from core.api import write_json_atomic, write_text_atomic

    cases = args.dataset or [*CASES, "hospital"]
    n_seeds = args.seeds if getattr(args, "seeds_given", False) else DEFAULT_SEEDS
    out = run(cases, list(range(n_seeds)), data_dir=args.data_dir, jobs=worker_count(), say=say)
    out["commit"] = _commit()
    out["command"] = " ".join(["python -m benchmarks tables", *(f"--dataset {c}" for c in args.dataset or []),
                               f"--seeds {n_seeds}", *([f"--data-dir {args.data_dir}"] if args.data_dir else []),
                               *([f"--json {args.json}"] if args.json else [])])
    say("", *(f"{name}: {r['exported']}/{r['site_rounds']} exported, {r['left_out']} left out, "
              f"{r['rows_predicted']:,}/{r['rows_applied']:,} rows predicted" for name, r in out["summary"].items()),
        f"wall time {out['wall_seconds'] / 60:.1f} min")
    if args.json:
        write_json_atomic(args.json, json.loads(json.dumps(out, default=float)))
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out))
    return out


__all__ = ["hospital_frame", "hospital_sites", "kit_with_said_fixes", "product_round", "run", "run_from_args",
           "write_hospital", "write_site_csv"]
