"""``python -m benchmarks privacy``: the privacy–utility curve of what a site ships (issue #24).

Per data set (dry bean, rice (Cammeo/Osmancik), and the clinical table flchain with the clinical bench's case
definition, :data:`benchmarks.clinical.CASES`) and seed:

1. One site's rows: up to :data:`SITE_ROWS` rows drawn with the seed, split 75/25 into the rows it exports and
   held-out test rows (stratified). Encoding through the product: a kit schema inferred (with statistics) from a
   :data:`SAMPLE_ROWS`-row public sample of the other rows, the site's CSV read against it (text one-hot, missing
   cells filled as the kit says), and the kit's smote anchor of :data:`ANCHOR_ROWS` rows from that sample.
2. For each lever — the dimension m̃, the ``noise`` setting, the formal noise ε (``privacy_epsilon``), and for
   distillation / GOLD their noise and group size (distillation on the first seed only: it takes most of the
   time) — the method's own ``site_compute`` and the product's
   :func:`core.privacy.assessment.assess_export` (colluding-site reconstruction error and share of rows within 10 %,
   membership AUC and TPR at 1 % FPR, nearest-record ratio, smallest group).
3. Utility, on the held-out rows, against the site's own logistic regression on its raw rows (L2, C = 1,
   standardised): a logistic regression fitted on what the site ships (DC family: the shipped rows and classes;
   distillation: the distilled rows and classes) and applied to the test rows the way a package is, through the
   site's kept map f; GOLD ships class-free averages, so its utility is the accuracy of "the majority class of
   the closest shipped average" (the site knows its rows' classes) — a proxy of how much of the class structure
   the shipped averages keep, not GOLD's clustering score (docs/results/gold/). One site, so the analyst's
   alignment error between sites is not in these numbers: they bound what the shipped rows can teach.

The record names, per data set, the lever settings that reach the target "collusion reconstruction error ≥ 50 % of
the columns' spread (and ≤ 5 % of rows within 10 %)" and the accuracy each costs against the default export.
DC and DC-CFL ship the same site-side arrays (:func:`core.methods.dc_site.dc_site_compute`), so one curve serves
both.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.api import ConfigError

SITE_ROWS = 2000
SAMPLE_ROWS = 500  # the kit's public sample: at 200 rows flchain's rare `mgus` can be constant (no public spread)
ANCHOR_ROWS = 1000
DEFAULT_SEEDS = 3
DATASETS = ("drybean", "rice_cammeo_osmancik", "flchain")
TARGET_ERROR = 0.5
TARGET_SHARE = 0.05


def dc_levers(m: int) -> list[tuple[str, dict]]:
    """(lever, site settings) of the DC-family curve: the default, then one lever at a time."""
    dims = sorted({m, max(1, (m + 1) // 2), max(1, m // 4), 2} - {m}, reverse=True)
    return ([("default", {})] + [(f"dimension {d}", {"dimension": d}) for d in dims]
            + [(f"noise {v:g}", {"noise": v}) for v in (0.25, 0.5, 1.0, 2.0)]
            + [(f"ε {e:g}", {"privacy_epsilon": e}) for e in (1000.0, 100.0, 30.0, 10.0)]
            + [(f"dimension {max(1, m // 4)} + noise 0.5", {"dimension": max(1, m // 4), "noise": 0.5})])


HFLDD_LEVERS = [("default", {}), ("noise 0.5", {"noise": 0.5}), ("ε 100", {"privacy_epsilon": 100.0})]
GOLD_LEVERS = [("default", {}, {}), ("noise 0.5", {"noise": 0.5}, {}), ("groups ≥ 20", {}, {"min_cluster_rows": 20})]


def load_site(name: str, seed: int, data_dir: str | None, folder: Path):
    """(X_train, y_train, X_test, y_test, classes, anchor, public scale, public centre) encoded by the product."""
    from sklearn.model_selection import train_test_split

    from core.api.common import infer_schema, read_table
    from core.api.participant import make_anchor
    from core.api.research import encoded_means, encoded_scales

    if name in ("flchain", "colon", "nwtco", "lung"):
        from benchmarks.clinical import CASES, load_case

        frame, _ = load_case(CASES[name], data_dir)
        label = CASES[name].label
    else:
        from benchmarks.simulation.datasets import resolve_benchmark_path

        frame = pd.read_csv(resolve_benchmark_path(name, data_dir))
        label = "label"
        frame[label] = frame[label].astype(str)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(frame))
    sample, site = frame.iloc[order[:SAMPLE_ROWS]], frame.iloc[order[SAMPLE_ROWS:SAMPLE_ROWS + SITE_ROWS]]
    sample.to_csv(folder / "sample.csv", index=False)
    train, test = train_test_split(site, test_size=0.25, stratify=site[label], random_state=seed)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    schema, _ = infer_schema(folder / "sample.csv", label=label, with_statistics=True)
    tr = read_table(folder / "train.csv", schema, labels=True)
    te = read_table(folder / "test.csv", schema, labels=True, fill_values=tr.fill_values)
    sample_X = read_table(folder / "sample.csv", schema, labels=False).X
    anchor_file = make_anchor("bench", schema.encoded_names, kind="smote", rows=ANCHOR_ROWS, seed_rows=sample_X)
    anchor_file.secret = hashlib.sha256(f"privacy-bench/{name}/{seed}".encode()).digest()  # reproducible draws
    anchor = anchor_file.generate()
    return (tr.X, tr.y, te.X, te.y, list(schema.classes), anchor, encoded_scales(schema), encoded_means(schema))


def _lr():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))


def _fit_score(X, y, X_test, y_test) -> float:
    if len(np.unique(y)) < 2:
        return float(np.mean(y_test == y[0]))
    return float(np.mean(_lr().fit(X, y).predict(X_test) == y_test))


def _numbers(assessment) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in assessment.findings:
        if f.verdict == "not applicable":
            continue
        for k, v in f.numbers.items():
            out[f"{f.attack}.{k}"] = float(v)
        for name, nums in getattr(f, "by_attack", {}).items():  # every attack behind a rebuild (issue #35)
            out[f"{f.attack}.{name}.median_cell_error"] = float(nums["median_cell_error"])
    out["assess_seconds"] = assessment.seconds
    out["poor"] = [f.attack for f in assessment.poor]
    return out


def run_cell(name: str, seed: int, data_dir: str | None, quick: bool) -> dict[str, Any]:
    """Every lever of every method on one (data set, seed)."""
    from core.api.common import SiteInput, get_method
    from core.api.research import AffineMap, assess_export

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        X, y, X_te, y_te, classes, anchor, scale, centre = load_site(name, seed, data_dir, Path(tmp))
    n, m = X.shape
    own = _fit_score(X, y, X_te, y_te)
    rows: list[dict[str, Any]] = []

    def site(settings: dict, with_anchor: bool = True) -> SiteInput:
        return SiteInput(X, y, classes, anchor if with_anchor else None, None, {"seed": seed, **settings},
                         scale=scale, centre=centre)

    def reduced_rows(name: str, levers, shipped: tuple[str, str]) -> None:
        """One row per lever of a method that ships reduced rows (``shipped``: their x and y arrays): accuracy of
        a model of them on the test rows mapped by the site's private map, the export's time, the assessment."""
        method = get_method(name)
        for lever, settings in levers:
            s = site(settings)
            t = time.perf_counter()
            ex = method.site_compute(s)
            export_s = time.perf_counter() - t
            a = assess_export(s, ex, method, seed=seed)
            f = AffineMap.from_arrays(ex.private_arrays)
            acc = _fit_score(ex.arrays[shipped[0]], ex.arrays[shipped[1]], f.transform(X_te), y_te)
            rows.append({"method": name, "lever": lever, "settings": settings, "accuracy": acc,
                         "export_seconds": export_s, **_numbers(a)})

    reduced_rows("dccfl", dc_levers(m), ("x_tilde", "y"))
    if not quick and seed == 0:  # distillation is the slow one: its curve is measured on the first seed only
        reduced_rows("hfldd", HFLDD_LEVERS, ("x_distilled", "y_distilled"))
    for lever, settings, kit_settings in GOLD_LEVERS:
        gold = get_method("gold", kit_settings)
        s = site(settings, with_anchor=False)
        t = time.perf_counter()
        ex = gold.site_compute(s)
        export_s = time.perf_counter() - t
        a = assess_export(s, ex, gold, seed=seed)
        cents = np.asarray(ex.arrays["centroids"])
        labels = ex.private_arrays["micro_labels"]
        kept = labels >= 0
        majority = np.array([np.bincount(y[kept][labels[kept] == g], minlength=len(classes)).argmax()
                             for g in range(len(cents))])
        sd = np.where(X.std(0) > 0, X.std(0), 1.0)
        nearest = ((X_te / sd)[:, None, :] - (cents / sd)[None, :, :]) ** 2
        acc = float(np.mean(majority[nearest.sum(-1).argmin(1)] == y_te))
        rows.append({"method": "gold", "lever": lever, "settings": {**settings, **kit_settings}, "accuracy": acc,
                     "export_seconds": export_s, **_numbers(a)})
    return {"dataset": name, "seed": seed, "rows": n, "columns": m, "test_rows": len(y_te), "own_accuracy": own,
            "results": rows, "seconds": time.perf_counter() - started}


def summarise(cells: list[dict]) -> dict[str, Any]:
    """Per data set, method and lever: means over seeds; the levers that reach the target and their cost."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(c["dataset"] for c in cells):
        mine = [c for c in cells if c["dataset"] == name]
        keys = list(dict.fromkeys((r["method"], r["lever"]) for c in mine for r in c["results"]))
        table = []
        for method, lever in keys:
            rs = [r for c in mine for r in c["results"] if (r["method"], r["lever"]) == (method, lever)]
            row = {"method": method, "lever": lever, "seeds": len(rs)}
            for k in sorted({k for r in rs for k, v in r.items() if isinstance(v, int | float)
                             and not isinstance(v, bool)}):
                vals = [r[k] for r in rs if k in r]
                row[k] = float(np.mean(vals))
            row["poor"] = sorted({p for r in rs for p in r.get("poor", [])})
            table.append(row)
        own = float(np.mean([c["own_accuracy"] for c in mine]))
        default = next(r for r in table if (r["method"], r["lever"]) == ("dccfl", "default"))
        reach = [r for r in table if r["method"] == "dccfl" and r.get("collusion.median_cell_error", 0) >= TARGET_ERROR
                 and r.get("collusion.within_10pct", 1) <= TARGET_SHARE]
        reached = [{"lever": r["lever"], "accuracy": r["accuracy"],
                    "cost_vs_default": default["accuracy"] - r["accuracy"],
                    "collusion_error": r["collusion.median_cell_error"]} for r in reach]
        best = max(reach, key=lambda r: r["accuracy"]) if reach else None
        out[name] = {"rows": mine[0]["rows"], "columns": mine[0]["columns"], "own_accuracy": own, "table": table,
                     "target": {"reached_by": [r["lever"] for r in reach], "reached": reached,
                                "best": None if best is None else {
                                    "lever": best["lever"], "accuracy": best["accuracy"],
                                    "cost_vs_default": default["accuracy"] - best["accuracy"],
                                    "cost_vs_own": own - best["accuracy"],
                                    "collusion_error": best["collusion.median_cell_error"],
                                    "membership_auc": best.get("membership.auc")}}}
    return out


def _f(x, d: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{d}f}"


def markdown(out: dict) -> str:
    lines = ["# Privacy–utility curve (issue #24)", "", f"Command: `{out['command']}`  ", f"Seeds: {out['seeds']}; "
             f"commit {out.get('commit')}; machine: {out['machine']}; wall time {out['wall_seconds'] / 60:.1f} min "
             f"(load {out['load']:.1f}).", "",
             "Each row: one lever from the default export, means over seeds. `err` = the colluding site's median "
             "reconstruction error (share of each column's spread; the strongest of least squares, `LS`, and the "
             "posterior means with its own rows as prior, `Bayes` = the empirical prior's), `alone` = the analyst "
             "alone's best median error (column means, moment matching, the eigenvector attack `eigen` and the ICA "
             "attack with a public sample; issue #35), `≤10%` = share of rows rebuilt with every "
             "value within 10 % of spread, `AUC`/`TPR` = membership test (TPR at 1 % FPR), `NN` = distilled rows' "
             "nearest-record ratio, `group` = smallest group behind a GOLD average, `acc` = accuracy on held-out "
             "rows (see the protocol in benchmarks/privacy.py), `own` = the site's own logistic regression.", ""]
    for name, s in out["summary"].items():
        lines += [f"## {name} ({s['rows']} exported rows, {s['columns']} encoded columns; own LR accuracy "
                  f"{s['own_accuracy']:.3f})", "",
                  "| method | lever | err | LS | Bayes | ≤10% | alone | eigen | AUC | TPR@1% | NN | group | acc | "
                  "acc − own | poor |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in s["table"]:
            lines.append(f"| {r['method']} | {r['lever']} | {_f(r.get('collusion.median_cell_error'), 2)} | "
                         f"{_f(r.get('collusion.least_squares.median_cell_error'), 2)} | "
                         f"{_f(r.get('collusion.empirical_prior.median_cell_error'), 2)} | "
                         f"{_f(r.get('collusion.within_10pct'), 2)} | "
                         f"{_f(r.get('analyst_alone.median_cell_error'), 2)} | "
                         f"{_f(r.get('analyst_alone.eigen.median_cell_error'), 2)} | "
                         f"{_f(r.get('membership.auc'), 2)} | "
                         f"{_f(r.get('membership.tpr_at_1pct_fpr'), 2)} | {_f(r.get('nearest_record.ratio'), 2)} | "
                         f"{_f(r.get('group_size.smallest_group'), 0)} | {_f(r['accuracy'])} | "
                         f"{_f(r['accuracy'] - s['own_accuracy'])} | {', '.join(r['poor']) or '—'} |")
        t = s["target"]
        if t["best"]:
            b = t["best"]
            lines += ["", f"Target (collusion error ≥ {TARGET_ERROR:.0%} of spread, ≤ {TARGET_SHARE:.0%} of rows "
                      "within 10 %) reached by: " + ", ".join(
                          f"{x['lever']} (accuracy {x['accuracy']:.3f}, "
                          f"{x['cost_vs_default'] * 100:.1f} pt below the default)"
                          for x in t["reached"]) + ". Best accuracy among them: "
                      f"**{b['lever']}**, accuracy {b['accuracy']:.3f} — {b['cost_vs_default'] * 100:.1f} pt below "
                      f"the default export, {b['cost_vs_own'] * 100:.1f} pt below the site's own model; membership "
                      f"AUC {_f(b['membership_auc'], 2)}.", ""]
        else:
            lines += ["", "Target not reached by any lever measured here.", ""]
    return "\n".join(lines) + "\n"


def machine_line() -> str:
    from benchmarks import machine

    return machine("sklearn")


def _task(name: str, seed: int, data_dir: str | None, quick: bool) -> dict:
    from benchmarks import one_thread

    with one_thread():
        return run_cell(name, seed, data_dir, quick)


def run(datasets, seeds, *, data_dir=None, quick=False, jobs=1, say: Callable[[str], None] = print) -> dict:
    from benchmarks import machine
    from benchmarks.clinical import _commit

    started = time.perf_counter()
    tasks = [(d, s) for d in datasets for s in seeds]
    cells = []
    if jobs <= 1:
        for d, s in tasks:
            cells.append(_task(d, s, data_dir, quick))
            say(f"[{len(cells)}/{len(tasks)}] {d} seed {s} ({cells[-1]['seconds']:.0f} s)")
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            for fut in as_completed([pool.submit(_task, d, s, data_dir, quick) for d, s in tasks]):
                cells.append(fut.result())
                say(f"[{len(cells)}/{len(tasks)}] {cells[-1]['dataset']} seed {cells[-1]['seed']} "
                    f"({cells[-1]['seconds']:.0f} s)")
    cells.sort(key=lambda c: (list(datasets).index(c["dataset"]), c["seed"]))
    return {"experiment": "privacy", "datasets": list(datasets), "seeds": list(seeds), "quick": quick,
            "site_rows": SITE_ROWS, "sample_rows": SAMPLE_ROWS, "anchor_rows": ANCHOR_ROWS,
            "summary": summarise(cells), "cells": cells, "wall_seconds": time.perf_counter() - started,
            "load": os.getloadavg()[0], "commit": _commit(), "machine": machine("sklearn")}


def timing(rows: int, columns: int = 16, method: str = "dccfl", dataset: str | None = None,
           data_dir: str | None = None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The assessment's cost beside a whole export of a synthetic ``rows`` × ``columns`` CSV (or, with
    ``dataset``, ``rows`` rows of that UCI benchmark table or clinical table's complete rows, drawn with seed 0)
    through
    :class:`core.participant.ParticipantRound` (read, reduce, assess, seal) by ``method``, default settings,
    seed 0."""
    from core.api import Identity
    from core.api.common import Kit, SiteWorkspace, infer_schema, read_table
    from core.api.participant import ParticipantRound, make_anchor

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if dataset in ("flchain", "colon", "nwtco", "lung"):
            from benchmarks.clinical import CASES, load_case

            frame = load_case(CASES[dataset], data_dir)[0].dropna()  # complete rows: no kit fill rule to choose
            frame = frame.rename(columns={CASES[dataset].label: "label"})
        elif dataset:
            from benchmarks.simulation.datasets import resolve_benchmark_path

            frame = pd.read_csv(resolve_benchmark_path(dataset, data_dir))
        if dataset:
            if rows > len(frame):
                raise ConfigError(f"{dataset} has {len(frame):,} rows, fewer than --rows {rows:,}; lower --rows")
            frame = frame.iloc[rng.permutation(len(frame))[:rows]].reset_index(drop=True)
            frame["label"] = frame["label"].astype(str)
            columns = frame.shape[1] - 1
        else:
            X = rng.standard_normal((rows, columns)) @ rng.standard_normal((columns, columns)) + 10 * np.arange(columns)
            frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(columns)])
            frame["label"] = np.where(X[:, 0] - X[:, 0].mean() + X[:, 1] - X[:, 1].mean() > 0, "a", "b")
        frame.iloc[:SAMPLE_ROWS if dataset else 200].to_csv(d / "sample.csv", index=False)
        frame.to_csv(d / "site.csv", index=False)
        del frame
        analyst, site = Identity.generate("analyst"), Identity.generate("site")
        schema, _ = infer_schema(d / "sample.csv", label="label", with_statistics=True)
        kit = Kit(name="timing", task="classification", schema=schema, method=method, analyst=analyst.card)
        kit.save(d / "p.dckit", analyst)
        anchor = make_anchor(kit.project_id, schema.feature_names, kind="smote", rows=ANCHOR_ROWS,
                             seed_rows=read_table(d / "sample.csv", schema, labels=False).X)
        job = ParticipantRound(kit, d / "p.dckit", site, SiteWorkspace(d / "ws"), anchor=anchor,
                               site_settings={"seed": 0})
        job.confirm_analyst(kit.analyst, how="benchmark: the kit's own signer")
        job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
        t0 = time.perf_counter()
        job.load(d / "site.csv")
        t1 = time.perf_counter()
        job.compute()
        t2 = time.perf_counter()
        assessment = job.assess()
        t3 = time.perf_counter()
        job.seal(d / "b.dcbundle")
        t4 = time.perf_counter()
    export = (t1 - t0) + (t2 - t1) + (t4 - t3)
    out = {"method": method, "dataset": dataset or "synthetic", "rows": rows, "columns": columns,
           "read_seconds": t1 - t0, "compute_seconds": t2 - t1,
           "assess_seconds": t3 - t2, "seal_seconds": t4 - t3, "export_seconds": export,
           "assess_share": (t3 - t2) / export, "verdict": assessment.verdict, "load": os.getloadavg()[0]}
    say(f"{method}, {dataset or 'synthetic'}, {rows:,} rows × {columns}: export (read {t1 - t0:.2f} s + reduce "
        f"{t2 - t1:.2f} s + seal {t4 - t3:.2f} s) "
        f"= {export:.2f} s; assessment {t3 - t2:.3f} s = {100 * out['assess_share']:.1f} % of it "
        f"(load {out['load']:.1f})")
    return out


QUICK_EXPORT_ROWS = 10_000  # --rows N --quick: the export is made from this many of the N rows


def assessment_cost(rows: int, method: str, columns: int = 16, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The assessment alone on a synthetic ``rows`` × ``columns`` site, seed 0, beside the method's export of its
    first :data:`QUICK_EXPORT_ROWS` rows (a distillation or GOLD export of a million rows takes many minutes; the
    assessment reads only the export's small arrays, so its cost is the one the whole export would see)."""
    from core.api.common import SiteInput, get_method
    from core.api.research import assess_export

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, columns)) @ rng.standard_normal((columns, columns)) + 10 * np.arange(columns)
    y = (X[:, 0] - X[:, 0].mean() + X[:, 1] - X[:, 1].mean() > 0).astype(np.int64)
    anchor = X[rng.choice(rows, ANCHOR_ROWS, replace=False)] + 0.1 * rng.standard_normal((ANCHOR_ROWS, columns))
    chosen = get_method(method)
    part = min(rows, QUICK_EXPORT_ROWS)
    t0 = time.perf_counter()
    export = chosen.site_compute(SiteInput(X[:part], y[:part], ["a", "b"], anchor, None, {"seed": 0}))
    t1 = time.perf_counter()
    assessment = assess_export(SiteInput(X, y, ["a", "b"], anchor, None, {"seed": 0}), export, chosen)
    t2 = time.perf_counter()
    out = {"method": method, "dataset": "synthetic", "rows": rows, "columns": columns, "export_rows": part,
           "export_seconds": t1 - t0, "assess_seconds": t2 - t1, "verdict": assessment.verdict,
           "load": os.getloadavg()[0]}
    say(f"{method}, {rows:,} rows × {columns}: assessment {t2 - t1:.3f} s (export of {part:,} of the rows "
        f"{t1 - t0:.2f} s; load {out['load']:.1f})")
    return out


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks privacy [--dataset D]… [--seeds N] [--quick] [--data-dir DIR] [--json FILE]``;
    with ``--rows N [--method M]… [--dataset D]…``: the assessment's cost beside a whole export of N rows
    (synthetic, or of each UCI table D) by each method (default dccfl; :func:`timing`); with ``--quick`` the
    assessment alone beside an export of 10,000 of the rows (:func:`assessment_cost`)."""
    import json

    from benchmarks import worker_count
    from core.api import write_json_atomic, write_text_atomic

    if not getattr(args, "rows", None) and (args.method or []) == ["meta-lr"]:  # the summary path (issue #35)
        from benchmarks.summary_privacy import run_from_args as summary_path

        return summary_path(args, say)
    if getattr(args, "rows", None):
        methods = args.method or ["dccfl"]
        tables = args.dataset or [None]
        if args.quick:
            runs = [assessment_cost(int(args.rows), name, say=say) for name in methods]
        else:
            runs = [timing(int(args.rows), method=name, dataset=table, data_dir=args.data_dir, say=say)
                    for table in tables for name in methods]
        out = {"experiment": "privacy-timing", **(runs[0] if len(runs) == 1 else {"runs": runs}),
               "machine": machine_line(),
               "command": f"python -m benchmarks privacy --rows {args.rows}"
                          + "".join(f" --dataset {table}" for table in (args.dataset or []))
                          + "".join(f" --method {name}" for name in (args.method or []))
                          + (" --quick" if args.quick else "")
                          + (f" --json {args.json}" if args.json else "")}
        if args.json:
            write_json_atomic(args.json, out)
        return out

    datasets = args.dataset or list(DATASETS)
    n_seeds = args.seeds if getattr(args, "seeds_given", False) else DEFAULT_SEEDS
    if n_seeds < 1:
        raise ConfigError("--seeds must be at least 1")
    out = run(datasets, list(range(n_seeds)), data_dir=args.data_dir, quick=args.quick, jobs=worker_count(), say=say)
    out["command"] = " ".join(["python -m benchmarks privacy", *(f"--dataset {d}" for d in (args.dataset or [])),
                               f"--seeds {n_seeds}", *(["--quick"] if args.quick else []),
                               *([f"--data-dir {args.data_dir}"] if args.data_dir else []),
                               *([f"--json {args.json}"] if args.json else [])])
    text = markdown(out)
    say(text)
    if args.json:
        write_json_atomic(args.json, json.loads(json.dumps(out, default=float)))
        write_text_atomic(Path(args.json).with_suffix(".md"), text)
    return out
