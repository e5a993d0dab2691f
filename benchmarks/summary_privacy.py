"""``python -m benchmarks privacy --method meta-lr``: the summary path's formal (ε, δ) on the clinical tables
(issue #35, part B).

Protocol, per (table, seed) — the tables, sites, encoding and 75/25 splits of ``python -m benchmarks meta-lr``
(benchmarks/metalr_clinical.py: flchain 6 sites, nwtco 4, colon 3, lung 3):
1. Public statistics: each column's mean and spread from 200 rows drawn (seeded) from the pooled training rows —
   the stand-in for the kit's public sample; a 0/1 column's spread kept within the formal option's floor
   (core/data/public_stats.py).
2. Reference: the ``meta-lr`` round with product defaults on those public scales (``site_compute`` on each
   site's training rows, ``fit``, each site's package ``apply``'d on its test rows, "keep your own" packages
   with the site's own logistic regression, as the product delivers them).
3. The same round with every site at ``privacy_epsilon`` = ε (δ = min(1e-5, 1/n²)) for ε ∈ {0.3, 1, 3, 10},
   ``draws`` times per ε: the product's own code path (core/methods/metalr/private_site.py), its protective
   noise drawn here from ``default_rng([seed, draw, site])`` instead of the operating system so the record can
   be repeated (the product never seeds it).
4. Score: ROC AUC of each site's package on its test rows; the cost is the reference's AUC minus the private
   one's, averaged over draws and seeds per site. Target: at ε = 1 the mean cost over sites with ≥ 500
   training rows ≤ 0.01, over smaller sites ≤ 0.03.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

EPSILONS = (0.3, 1.0, 3.0, 10.0)
BIG = 500  # training rows of a "large" site
TARGET = {"large": 0.01, "small": 0.03}


def run_cell(name: str, data_dir: Path, seed: int, draws: int) -> dict:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from benchmarks.metalr_clinical import encode
    from core.api.common import FitContext, ReceivedBundle, SiteInput, get_method
    from core.api.research import SHARE_FLOOR, fit_local_model
    from core.api.research import metalr_private_site as private_site

    X, y, site, names = encode(name, data_dir, seed)
    splits = []
    for s in np.unique(site):
        idx = np.flatnonzero(site == s)
        strat = y[idx] if np.bincount(y[idx], minlength=2).min() >= 2 else None
        splits.append(train_test_split(idx, test_size=0.25, stratify=strat, random_state=seed))
    pooled = np.concatenate([tr for tr, _ in splits])
    public = np.random.default_rng([seed, 35]).choice(pooled, min(200, len(pooled)), replace=False)
    centre, scale = X[public].mean(0), X[public].std(0, ddof=1)
    binary = np.all(np.isin(X[public], (0.0, 1.0)), axis=0)
    p = np.clip(centre, SHARE_FLOOR, 1 - SHARE_FLOOR)
    scale = np.where(binary, np.sqrt(p * (1 - p)), np.where(scale > 0, scale, 1.0))
    classes = ["0", "1"]
    kept = [fit_local_model(X[tr], y[tr], 2) if len(np.unique(y[tr])) == 2 else {} for tr, _ in splits]
    method = get_method("meta-lr", {})

    def round_auc(settings: dict, draw: int) -> list[float]:
        bundles = []
        for i, (tr, _) in enumerate(splits):
            private_site.protective_rng = lambda i=i: np.random.default_rng([seed, draw, i, 35])
            ex = method.site_compute(SiteInput(X[tr], y[tr], classes, None, None, settings, scale=scale,
                                               centre=centre))
            bundles.append(ReceivedBundle(f"site{i}", f"FP{i}", f"d{i}", f"e{i}",
                                          {**ex.manifest, "family": "meta-lr", "method": "meta-lr"}, ex.arrays))
        res = method.fit(bundles, FitContext(classes, features=names))
        out = []
        for i, (_, te) in enumerate(splits):
            prob = method.apply(*res.packages[i], kept[i], X[te])["prob_1"]
            out.append(float(roc_auc_score(y[te], prob)) if len(np.unique(y[te])) == 2 else float("nan"))
        return out

    original = private_site.protective_rng
    try:
        reference = round_auc({}, 0)
        private = {f"{e:g}": np.mean([round_auc({"privacy_epsilon": e}, d) for d in range(draws)], axis=0).tolist()
                   for e in EPSILONS}
    finally:
        private_site.protective_rng = original
    return {"table": name, "seed": seed, "train_rows": [int(len(tr)) for tr, _ in splits],
            "reference_auc": reference, "private_auc": private}


def summarise(cells: list[dict]) -> dict:
    """Per table and ε, and over every table: the mean AUC cost at large and small sites."""
    out: dict = {"tables": {}, "all": {}}
    rows = {f"{e:g}": {"large": [], "small": []} for e in EPSILONS}
    for c in cells:
        t = out["tables"].setdefault(c["table"], {"train_rows": c["train_rows"],
                                                  **{f"{e:g}": {"large": [], "small": []} for e in EPSILONS}})
        ref = np.asarray(c["reference_auc"], float)
        for e, aucs in c["private_auc"].items():
            cost = ref - np.asarray(aucs, float)
            for n, v in zip(c["train_rows"], cost, strict=True):
                if np.isfinite(v):
                    key = "large" if n >= BIG else "small"
                    t[e][key].append(float(v))
                    rows[e][key].append(float(v))
    for t in out["tables"].values():
        for e in rows:
            t[e] = {k: (float(np.mean(v)) if v else None) for k, v in t[e].items()}
    for e, v in rows.items():
        out["all"][e] = {k: (float(np.mean(x)) if x else None) for k, x in v.items()}
        out["all"][e]["sites"] = {k: len(x) for k, x in v.items()}
    one = out["all"]["1"]
    out["target"] = {k: {"cost": one[k], "target": TARGET[k], "met": one[k] is not None and one[k] <= TARGET[k]}
                     for k in TARGET}
    return out


def lines(record: dict) -> list[str]:
    s = record["summary"]
    out = [f"meta-lr with central (ε, δ)-DP per site on the clinical tables: AUC cost (reference − private), mean "
           f"over sites, seeds {record['seeds']}, {record['draws']} noise draws per seed", "",
           "| table | sites (training rows, seed 0) | " + " | ".join(f"ε = {e:g}: ≥ {BIG} / < {BIG}" for e in EPSILONS)
           + " |", "|---|---|" + "---:|" * len(EPSILONS)]

    def f(v):
        return "—" if v is None else f"{v:+.3f}"

    for name, t in s["tables"].items():
        out.append(f"| {name} | {t['train_rows']} | "
                   + " | ".join(f"{f(t[f'{e:g}']['large'])} / {f(t[f'{e:g}']['small'])}" for e in EPSILONS) + " |")
    out.append("| all | | " + " | ".join(f"{f(s['all'][f'{e:g}']['large'])} / {f(s['all'][f'{e:g}']['small'])}"
                                        for e in EPSILONS) + " |")
    out.append("")
    for k, v in s["target"].items():
        out.append(f"target at ε = 1, {k} sites: cost {f(v['cost'])} vs ≤ {v['target']:.2f}: "
                   + ("met" if v["met"] else f"MISSED by {v['cost'] - v['target']:.3f}"))
    out.append(f"({record['seconds']} s; commit {record.get('commit')}; load {record.get('load')}; "
               f"`{record.get('command')}`)")
    return out


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from benchmarks.metalr_clinical import TABLES
    from benchmarks.simulation.datasets import default_data_dir
    from core.api import write_json_atomic, write_text_atomic

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    tables = args.dataset or list(TABLES)
    seeds = list(range(args.seeds if getattr(args, "seeds_given", False) else 5))
    draws = 4
    start = time.perf_counter()
    cells = []
    for t in tables:
        for s in seeds:
            cells.append(run_cell(t, data_dir, s, draws))
            say(f"{t} seed {s}: done")
    from benchmarks.clinical import _commit

    record = {"experiment": "privacy-summary-path", "commit": _commit(), "load": list(__import__("os").getloadavg()),
              "seeds": seeds, "draws": draws, "epsilons": list(EPSILONS),
              "cells": cells, "summary": summarise(cells), "seconds": round(time.perf_counter() - start, 1),
              "command": "python -m benchmarks privacy --method meta-lr"
                         + "".join(f" --dataset {t}" for t in (args.dataset or []))
                         + (f" --seeds {args.seeds}" if getattr(args, "seeds_given", False) else "")}
    for line in lines(record):
        say(line)
    if args.json:
        write_json_atomic(args.json, record)
        write_text_atomic(Path(args.json).with_suffix(".md"), "\n".join(lines(record)) + "\n")
    return record
