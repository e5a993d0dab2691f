"""``python -m benchmarks dimension-rule``: the private reduction's dimension on small tables (issue #22).

Question: on a table of m ≤ ~15 columns, does the papers' m̃ = m − 1 throw away accuracy that m̃ = m keeps?

Protocol, per (table, seed):
1. Tables. The clinical tables (``clinical_*.csv``, R's ``survival`` package) are encoded here with pandas, as a
   kit would: the outcome and the columns that leak it dropped (datasets README), text columns one-hot
   (first level as reference), a missing cell → the site's training median plus a 0/1 missing-indicator column
   for every column with more than 5 empty cells. Sites: flchain by ``sample.yr`` (9 sites), nwtco by
   ``study`` × ``instit`` (4), lung by ``inst`` grouped into 3 sites of similar size, colon (death, ``etype`` 2)
   and the UCI sets heart_statlog and banknote_authentication in 4 label-skewed sites (site s draws a row of
   class k with weight 3 when k ≡ s mod K, else 1). The column that names the site is not a feature.
2. Each site holds out a stratified quarter of its rows (seeded) as its test rows; the anchor is extended SMOTE
   (1,000 rows) of 100 synthetic seed rows drawn from the first site's column statistics
   (:func:`core.formats.anchor.statistics_seed`, the product default).
3. Each site runs the product's site step (PCA to the given m̃, shuffle) and its own-model step (the kept
   logistic regression and its cross-validated scores, ``own_cv``); the analyst runs ``DC()`` and ``DCCFL()``
   (product defaults, seed = the cell's seed); each site applies its package to its test rows.
4. Per site: package accuracy and AUC, the site's own logistic regression's on the same test rows, which model
   it was sent, and the PCA's variance kept. Conditions: m̃ = m − 1, m̃ = m, and (DC-CFL at the chosen rule) the
   keep-own margin at 0 standard errors instead of 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

CLINICAL = ("flchain", "colon", "nwtco", "lung")
UCI = ("heart_statlog", "banknote_authentication")
DATASETS = CLINICAL + UCI
TEST_SHARE = 0.25
MISSING_INDICATOR_MIN = 5  # cells


def _read(name: str, data_dir) -> pd.DataFrame:
    from benchmarks.simulation.datasets import resolve_benchmark_path

    return pd.read_csv(resolve_benchmark_path(name, data_dir), na_values=["NA"])


def _skewed_sites(y: np.ndarray, n_sites: int = 4, seed: int = 22) -> np.ndarray:
    """Site of every row: site s draws a row of class k with weight 3 when k ≡ s (mod K), else 1."""
    rng = np.random.default_rng(seed)
    K = int(y.max()) + 1
    w = np.ones((K, n_sites))
    for s in range(n_sites):
        w[s % K, s] = 3.0
    w /= w.sum(axis=1, keepdims=True)
    return np.array([rng.choice(n_sites, p=w[k]) for k in y])


def load_case(name: str, data_dir) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[str]]:
    """(features as a frame — text one-hot, NaN left for the per-site imputation —, labels 0..K−1, site of every
    row, class names) for one table of the module docstring."""
    if name in UCI:
        from benchmarks.simulation.datasets import load_benchmark_csv

        X, y, classes = load_benchmark_csv(name, data_dir)
        frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(X.shape[1])])
        return frame, y, _skewed_sites(y), classes
    df = _read(f"clinical_{name}", data_dir).drop(columns=["Unnamed: 0"], errors="ignore")
    if name == "flchain":
        y, site = df["death"].to_numpy(), df["sample.yr"].to_numpy()
        X = df.drop(columns=["death", "futime", "chapter", "sample.yr"])
    elif name == "colon":
        df = df[df["etype"] == 2].reset_index(drop=True)
        y = df["status"].to_numpy()
        site = _skewed_sites(y.astype(np.int64))
        X = df.drop(columns=["status", "time", "etype", "id", "study"])
    elif name == "nwtco":
        y = df["rel"].to_numpy()
        site = (df["study"].astype(str) + "x" + df["instit"].astype(str)).to_numpy()
        X = df.drop(columns=["rel", "edrel", "seqno", "in.subcohort", "study", "instit"])
    elif name == "lung":
        df = df[df["inst"].notna()].reset_index(drop=True)
        y = (df["status"] == 2).to_numpy().astype(np.int64)
        sizes = df["inst"].value_counts()
        group, load = {}, [0, 0, 0]
        for inst, n in sizes.items():  # biggest institutions first, each to the smallest group so far
            g = int(np.argmin(load))
            group[inst], load[g] = g, load[g] + int(n)
        site = df["inst"].map(group).to_numpy()
        X = df.drop(columns=["status", "time", "inst"])
    else:
        raise ValueError(f"unknown table '{name}'")
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    X = pd.get_dummies(X, columns=text, drop_first=True, dtype=float)
    for c in list(X.columns):
        if X[c].isna().sum() > MISSING_INDICATOR_MIN:
            X[f"{c}_missing"] = X[c].isna().astype(float)
    classes = [str(c) for c in sorted(np.unique(y))]
    return X.astype(float), np.searchsorted(sorted(np.unique(y)), y).astype(np.int64), np.asarray(site), classes


def site_splits(frame: pd.DataFrame, y: np.ndarray, site: np.ndarray, seed: int) -> list[tuple]:
    """Per site (in sorted site order): (name, X_train, y_train, X_test, y_test), imputed with the site's training
    medians; sites with fewer than 8 rows or one class are left out."""
    from sklearn.model_selection import train_test_split

    out = []
    for s in sorted(set(site.tolist()), key=str):
        idx = np.flatnonzero(site == s)
        ys = y[idx]
        if len(idx) < 8 or len(np.unique(ys)) < 2 or np.bincount(ys).min() < 2:
            continue
        tr, te = train_test_split(idx, test_size=TEST_SHARE, stratify=ys, random_state=seed)
        med = frame.iloc[tr].median(numeric_only=True).fillna(0.0)
        Xtr, Xte = frame.iloc[tr].fillna(med).to_numpy(float), frame.iloc[te].fillna(med).to_numpy(float)
        out.append((str(s), Xtr, y[tr], Xte, y[te]))
    return out


def run_cell(name: str, sites: list[tuple], classes: list[str], seed: int, method_name: str, dimension: str,
             margin: float | None = None, own_model: bool = True) -> dict[str, Any]:
    """One round (module docstring 2–4) at m̃ = ``dimension`` ("m-1", "m" or "rule"); ``own_model=False`` sends
    every site its cluster's model (the dimension's effect on the shared model itself)."""
    from sklearn.metrics import roc_auc_score

    from core.api.common import FitContext, ReceivedBundle, SiteInput, get_method
    from core.api.research import (
        cross_validate_own,
        extended_smote,
        fit_local_model,
        local_predict_proba,
        own_cv,
        statistics_seed,
    )

    m = sites[0][1].shape[1]
    k = {"m-1": max(1, m - 1), "m": m, "rule": None}[dimension]
    rng = np.random.default_rng([seed, 22])
    anchor = extended_smote(statistics_seed(sites[0][1], 100, rng), 1000, rng=rng)
    method = get_method(method_name, {"seed": seed, "own_model": own_model})
    K = len(classes)
    bundles, private = [], []
    for i, (s, Xtr, ytr, _, _) in enumerate(sites):
        ex = method.site_compute(SiteInput(Xtr, ytr, classes, anchor, settings={"seed": seed * 100 + i,
                                                                                "dimension": k}))
        cv = cross_validate_own(Xtr, ytr, K)
        manifest = {**ex.manifest, **({"own_cv": cv} if cv else {})}
        bundles.append(ReceivedBundle(site=s, fingerprint="", digest=f"{seed}-{i}", envelope_id="",
                                      manifest=manifest, arrays=ex.arrays))
        private.append({**ex.private_arrays, **fit_local_model(Xtr, ytr, K)})
    saved = own_cv.MARGIN_SE
    if margin is not None:
        own_cv.MARGIN_SE = margin
    try:
        t0 = time.perf_counter()
        result = method.fit(bundles, FitContext(classes))
        fit_s = time.perf_counter() - t0
    finally:
        own_cv.MARGIN_SE = saved
    names = np.asarray(classes, dtype=object)
    rows = []
    for (manifest, arrays), priv, b, (s, Xtr, ytr, Xte, yte) in zip(result.packages, private, bundles, sites,
                                                                     strict=True):
        cols = method.apply(manifest, arrays, priv, Xte)
        p_pkg = np.column_stack([cols[f"prob_{c}"] for c in classes])
        p_own = local_predict_proba(fit_local_model(Xtr, ytr, K), Xte)
        binary = K == 2 and len(np.unique(yte)) == 2
        rows.append({"site": s, "train_rows": int(len(ytr)), "test_rows": int(len(yte)),
                     "package": float(np.mean(cols["prediction"] == names[yte])),
                     "own_model": float(np.mean(p_own.argmax(1) == yte)),
                     "package_auc": float(roc_auc_score(yte, p_pkg[:, 1])) if binary else None,
                     "own_auc": float(roc_auc_score(yte, p_own[:, 1])) if binary else None,
                     "sent": manifest.get("model"), "dimension": b.manifest["dimension"],
                     "variance_kept": b.manifest.get("variance_kept"),
                     "own_cv": (b.manifest.get("own_cv") or {}).get("accuracy"),
                     "expected": (manifest.get("expected") or {}).get("accuracy")})
        rows[-1]["diff_pt"] = 100 * (rows[-1]["package"] - rows[-1]["own_model"])
    return {"dataset": name, "seed": seed, "method": method_name, "dimension": dimension, "m": m, "own": own_model,
            "margin": own_cv.MARGIN_SE if margin is None else margin, "sites": rows,
            "t": result.summary.get("t"), "fit_seconds": fit_s}


def summarise(cells: list[dict]) -> list[dict]:
    """Per (table, method, condition): mean package and own-model accuracy (pt difference), worst site,
    mean AUCs, sites sent their own model, mean variance kept."""
    groups: dict[tuple, list[dict]] = {}
    for c in cells:
        key = (c["dataset"], c["method"], c["dimension"], c["margin"], c["own"])
        groups.setdefault(key, []).extend({**x, "m": c["m"]} for x in c["sites"])
    out = []
    for (d, meth, dim, margin, own), xs in groups.items():
        aucs = [(x["package_auc"], x["own_auc"]) for x in xs if x["package_auc"] is not None]
        out.append({"dataset": d, "method": meth, "dimension": dim, "margin": margin, "own_candidate": own,
                    "m": xs[0]["m"],
                    "kept": xs[0]["dimension"], "site_runs": len(xs),
                    "package": float(np.mean([x["package"] for x in xs])),
                    "own_model": float(np.mean([x["own_model"] for x in xs])),
                    "mean_diff_pt": float(np.mean([x["diff_pt"] for x in xs])),
                    "worst_diff_pt": float(np.min([x["diff_pt"] for x in xs])),
                    "package_auc": float(np.mean([a for a, _ in aucs])) if aucs else None,
                    "own_auc": float(np.mean([b for _, b in aucs])) if aucs else None,
                    "sent_own": int(sum(x["sent"] == "own" for x in xs)),
                    "variance_kept": float(np.mean([x["variance_kept"] for x in xs]))
                    if all(x["variance_kept"] is not None for x in xs) else None})
    return out


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from core.api import write_json_atomic

    datasets = args.dataset or list(DATASETS)
    seeds = list(range(int(args.seeds if args.seeds != 10 else 3)))
    conditions = [(meth, dim, None, own) for own in (False, True) for meth in ("dc", "dccfl") for dim in ("m-1", "m")]
    if not args.quick:
        conditions.append(("dccfl", "rule", 0.0, True))
    cells = []
    t0 = time.perf_counter()
    for d in datasets:
        frame, y, site, classes = load_case(d, args.data_dir)
        for seed in seeds:
            sites = site_splits(frame, y, site, seed)
            for meth, dim, margin, own in conditions:
                cell = run_cell(d, sites, classes, seed, meth, dim, margin, own)
                cells.append(cell)
                say(json.dumps({"dataset": d, "seed": seed, "method": meth, "dimension": dim, "own": own,
                                "margin": cell["margin"],
                                "fit_seconds": round(cell["fit_seconds"], 1),
                                "mean_diff_pt": round(float(np.mean([x["diff_pt"] for x in cell["sites"]])), 2)}))
    out = {"summary": summarise(cells), "cells": cells, "seeds": seeds, "datasets": datasets,
           "wall_seconds": time.perf_counter() - t0}
    for row in out["summary"]:
        say(json.dumps(row))
    if args.json:
        from pathlib import Path

        from core.api import write_text_atomic

        write_json_atomic(args.json, out)
        command = " ".join(["python -m benchmarks dimension-rule", f"--seeds {len(seeds)}",
                            *(f"--dataset {d}" for d in (args.dataset or [])), *(["--quick"] if args.quick else []),
                            "--data-dir DATA", f"--json {args.json}"])
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out, command))
    return out


def markdown(out: dict, command: str) -> str:
    import os

    from benchmarks import machine

    lines = ["# The reduction's dimension on small tables (issue #22)", "", f"Command: `{command}`", "",
             f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f} (shared machine).", "",
             f"Wall time {out['wall_seconds'] / 60:.1f} min; seeds {out['seeds']}.", "",
             (__doc__ or "").split("\n\n", 1)[1].strip(), "", "## Result", "",
             "Accuracy and AUC on the sites' held-out quarters, averaged over sites × seeds; Δ = package − the site's "
             "own logistic regression, in points; 'own' = site-runs sent their own model; 'variance kept' = the "
             "oracle bound (the share of the standardised variance a linear decoder that knew the private map "
             "exactly could recover).", "",
             "| table | m | method | m̃ | own candidate | margin (SE) | package | own LR | Δ mean (pt) | Δ worst (pt) | "
             "AUC pkg | AUC own | own | variance kept |",
             "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def auc(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"

    for r in out["summary"]:
        margin = f"{r['margin']:g}" if r["own_candidate"] else "–"
        lines.append(f"| {r['dataset']} | {r['m']} | {r['method']} | {r['dimension']} ({r['kept']}) | "
                     f"{'yes' if r['own_candidate'] else 'no'} | {margin} | "
                     f"{r['package']:.4f} | {r['own_model']:.4f} | {r['mean_diff_pt']:+.2f} | "
                     f"{r['worst_diff_pt']:+.1f} | {auc(r['package_auc'])} | {auc(r['own_auc'])} | "
                     f"{r['sent_own']}/{r['site_runs']} | "
                     f"{auc(r['variance_kept'])} |")
    return "\n".join(lines) + "\n"
