"""``python -m benchmarks meta-lr``: the meta-analysed logistic regression on real clinical tables (issue #22).

Protocol, per (table, seed):
1. Encoding, the same for every site (what a kit with typed columns would fix): the R row name, the outcome's
   leaking columns (datasets README) and the columns that define the sites are dropped; text columns are one-hot
   (first level of the sorted levels dropped); a numeric column with missing cells is filled with the table's
   median and gets a 0/1 missing indicator.
   * flchain: outcome ``death``; sites by ``sample.yr``, consecutive years merged until each holds ≥ 300 rows.
   * nwtco: outcome ``rel``; sites ``study`` × ``instit`` (4).
   * colon: rows with ``etype == 2``, outcome ``status``; 3 sites by a seeded random split.
   * lung: outcome ``status`` (2 = dead); sites by ``inst`` in id order, merged until each holds ≥ 60 rows.
2. Each site splits its rows 75/25 (stratified by the outcome, seeded).
3. Per site, on its 25 %: accuracy and ROC AUC of (a) the ``meta-lr`` package (``site_compute`` on each site's
   75 %, ``fit``, ``apply``; product defaults and the variants listed), (b) the site's own logistic regression
   on its 75 % (:func:`core.learn.local_model.fit_local_model`, what ``participant apply --validate`` compares
   with), (c) the same logistic regression on every site's 75 % pooled (the upper reference).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

TABLES = ("flchain", "nwtco", "colon", "lung")
VARIANTS = {
    "meta-lr": {},
    "common intercept": {"intercepts": "common"},
    "ridge 0.01": {"ridge": 0.01},
    "ridge 10": {"ridge": 10.0},
    "penalty raw": {"penalty_scale": "raw"},
}


def _merge_groups(keys: pd.Series, minimum: int) -> pd.Series:
    """Consecutive (sorted) key values merged until each group holds ≥ ``minimum`` rows (a short tail joins
    the last group)."""
    counts = keys.value_counts().sort_index()
    group, size, out = 0, 0, {}
    for k, c in counts.items():
        out[k] = group
        size += c
        if size >= minimum:
            group, size = group + 1, 0
    if 0 < size < minimum and group > 0:
        out = {k: min(g, group - 1) for k, g in out.items()}
    return keys.map(out)


def encode(name: str, data_dir: Path, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(X, y ∈ {0, 1}, site index per row, column names) of one clinical table (module doc, step 1)."""
    f = pd.read_csv(data_dir / f"clinical_{name}.csv").drop(columns=["Unnamed: 0"], errors="ignore")
    if name == "flchain":
        y = f["death"].to_numpy()
        site = _merge_groups(f["sample.yr"], 300).to_numpy()
        f = f.drop(columns=["death", "futime", "chapter", "sample.yr"])
    elif name == "nwtco":
        y = f["rel"].to_numpy()
        site = (f["study"].astype(str) + "/" + f["instit"].astype(str)).astype("category").cat.codes.to_numpy()
        f = f.drop(columns=["rel", "edrel", "seqno", "in.subcohort", "study", "instit"])
    elif name == "colon":
        f = f[f["etype"] == 2].reset_index(drop=True)
        y = f["status"].to_numpy()
        site = np.random.default_rng([seed, 22]).permutation(np.arange(len(f)) % 3)
        f = f.drop(columns=["status", "time", "etype", "id", "study"])
    elif name == "lung":
        f = f[f["inst"].notna()].reset_index(drop=True)
        y = (f["status"] == 2).astype(int).to_numpy()
        site = _merge_groups(f["inst"], 60).to_numpy()
        f = f.drop(columns=["status", "time", "inst"])
    else:
        raise ValueError(name)
    cols = []
    for c in f.columns:
        v = f[c]
        if not pd.api.types.is_numeric_dtype(v):
            levels = sorted(v.dropna().unique())
            cols += [((v == lev).astype(float).rename(f"{c}={lev}")) for lev in levels[1:]]
        else:
            if v.isna().any():
                cols.append(v.isna().astype(float).rename(f"{c} missing"))
            cols.append(v.fillna(v.median()).astype(float))
    X = pd.concat(cols, axis=1)
    return X.to_numpy(np.float64), np.asarray(y, np.int64), np.asarray(site, np.int64), list(X.columns)


def run_cell(name: str, data_dir: Path, seed: int) -> dict:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from core.api.common import FitContext, ReceivedBundle, SiteInput, get_method
    from core.api.research import fit_local_model, local_predict_proba

    X, y, site, names = encode(name, data_dir, seed)
    splits = []
    for s in np.unique(site):
        idx = np.flatnonzero(site == s)
        strat = y[idx] if np.bincount(y[idx], minlength=2).min() >= 2 else None
        tr, te = train_test_split(idx, test_size=0.25, stratify=strat, random_state=seed)
        splits.append((tr, te))
    classes = ["0", "1"]

    def score(p1: np.ndarray, te: np.ndarray) -> dict:
        auc = roc_auc_score(y[te], p1) if len(np.unique(y[te])) == 2 else float("nan")
        return {"accuracy": float(np.mean((p1 > 0.5) == y[te])), "auc": float(auc)}

    rows = {v: [] for v in (*VARIANTS, "own LR", "pooled LR")}
    kept = [fit_local_model(X[tr], y[tr], 2) if len(np.unique(y[tr])) == 2 else {} for tr, _ in splits]
    for v, sets in VARIANTS.items():
        method = get_method("meta-lr", sets)
        bundles = []
        for i, (tr, _) in enumerate(splits):
            ex = method.site_compute(SiteInput(X[tr], y[tr], classes, None))
            bundles.append(ReceivedBundle(f"site{i}", f"FP{i}", f"d{i}", f"e{i}",
                                          {**ex.manifest, "family": "meta-lr", "method": "meta-lr"}, ex.arrays))
        res = method.fit(bundles, FitContext(classes, features=names))
        for i, (_, te) in enumerate(splits):
            out = method.apply(*res.packages[i], kept[i], X[te])  # "keep your own" uses the site's kept model
            rows[v].append(score(out["prob_1"], te))
        if v == "meta-lr":
            het = res.summary["heterogeneity"]
            used = res.summary["sites_combined"]
    all_tr = np.concatenate([tr for tr, _ in splits])
    pooled = fit_local_model(X[all_tr], y[all_tr], 2)
    for tr, te in splits:
        own = fit_local_model(X[tr], y[tr], 2) if len(np.unique(y[tr])) == 2 else None
        rows["own LR"].append(score(local_predict_proba(own, X[te])[:, 1] if own else
                                    np.full(len(te), float(y[tr].mean())), te))
        rows["pooled LR"].append(score(local_predict_proba(pooled, X[te])[:, 1], te))
    return {"table": name, "seed": seed, "columns": len(names), "sites": len(splits),
            "train_rows": [int(len(tr)) for tr, _ in splits], "test_rows": [int(len(te)) for _, te in splits],
            "sites_combined": used, "heterogeneity": {k: het[k] for k in ("q", "df", "p_value", "i2")},
            "scores": rows}


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from benchmarks.simulation.datasets import default_data_dir
    from core.api import write_json_atomic

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    tables = args.dataset or list(TABLES)
    seeds = list(range(args.seeds))
    start = time.perf_counter()
    cells = [run_cell(t, data_dir, s) for t in tables for s in seeds]
    record = {"experiment": "meta-lr", "seeds": seeds, "cells": cells, "summary": summarise(cells, tables),
              "seconds": round(time.perf_counter() - start, 1)}
    for line in table_lines(record):
        say(line)
    if args.json:
        write_json_atomic(args.json, record)
        Path(args.json).with_suffix(".md").write_text("\n".join(table_lines(record)) + "\n")
    return record


def summarise(cells: list[dict], tables) -> dict:
    """Per table and model: mean accuracy / AUC over sites and seeds; worst site-seed gap to the own LR."""
    out = {}
    for t in tables:
        mine = [c for c in cells if c["table"] == t]
        models = list(mine[0]["scores"])
        entry = {"columns": mine[0]["columns"], "sites": mine[0]["sites"], "train_rows": mine[0]["train_rows"]}
        for mdl in models:
            acc = np.array([r["accuracy"] for c in mine for r in c["scores"][mdl]])
            auc = np.array([r["auc"] for c in mine for r in c["scores"][mdl]])
            own_acc = np.array([r["accuracy"] for c in mine for r in c["scores"]["own LR"]])
            own_auc = np.array([r["auc"] for c in mine for r in c["scores"]["own LR"]])
            entry[mdl] = {"accuracy": float(acc.mean()), "auc": float(np.nanmean(auc)),
                          "worst_accuracy_gap_pt": float(100 * (acc - own_acc).min()),
                          "worst_auc_gap": float(np.nanmin(auc - own_auc))}
        entry["i2_mean"] = float(np.mean([c["heterogeneity"]["i2"] for c in mine]))
        entry["q_p_median"] = float(np.median([c["heterogeneity"]["p_value"] for c in mine]))
        out[t] = entry
    return out


def table_lines(record: dict) -> list[str]:
    lines = [f"meta-lr on clinical tables, seeds {record['seeds']} (mean over sites and seeds; worst = the "
             "lowest site-seed difference to the site's own LR)", ""]
    for t, e in record["summary"].items():
        lines += [f"{t}: {e['sites']} sites, {e['columns']} encoded columns, training rows {e['train_rows']} "
                  f"(seed 0); heterogeneity of meta-lr: mean I² {100 * e['i2_mean']:.0f} %, median Q p-value "
                  f"{e['q_p_median']:.3g}",
                  "| model | accuracy | AUC | worst acc. gap to own (pt) | worst AUC gap to own |",
                  "|---|---:|---:|---:|---:|"]
        for mdl, v in e.items():
            if isinstance(v, dict):
                lines.append(f"| {mdl} | {v['accuracy']:.3f} | {v['auc']:.3f} | {v['worst_accuracy_gap_pt']:+.1f} "
                             f"| {v['worst_auc_gap']:+.3f} |")
        lines.append("")
    lines.append(f"({record['seconds']} s)")
    return lines


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run_cell("lung", Path("../shared/datasets"), 0)["scores"], indent=1))
