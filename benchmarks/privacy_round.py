"""``python -m benchmarks privacy-round``: issue #35's checks on three sites with the default kit.

Per table (dry bean, flchain, colon) and seed:

1. Sites: dry bean's and flchain's rows dealt at random to three sites (seeded; flchain with the clinical bench's
   case definition, :data:`benchmarks.clinical.CASES`), colon's three label-skewed sites of the clinical bench.
   Each site's rows split 75/25 into the rows it exports and held-out rows (stratified, seeded).
2. The default kit, as ``dcstudio kit new`` makes it: the schema with its public statistics inferred from a
   200-row public sample of the pooled exported rows, DC-CFL with its defaults; the lead site's anchor as
   ``anchor new --csv`` makes it (1,000 rows, a fixed secret so every run draws the same rows).
3. Every site exports through :class:`core.participant.ParticipantRound` (default settings, seed
   100 × seed + site) and its workspace's ``privacy.json`` is read back.
4. Cross-check (Must show 1): the independent attacks of ``tests/privacy/reference_attacks.py`` on the same
   stand-in rows (the documented rule) and the same shipped rows (the bundle as the analyst opens it), on every
   shipped row outside the stand-in rows (the product measures at most 2,000 of them): the analyst alone's eigen
   attack against ``privacy.json``'s ``eigen``, the colluding site's exact inverse (least squares, no noise)
   against ``least_squares``, and at every noised setting of step 5 the posterior mean with the colluder's rows as
   prior against ``empirical_prior``. Agreement "within 10 %": |product − reference| ≤ 0.10 × the larger, plus
   0.005 (median error) or 0.01 (share of rows) for figures near zero.
5. Private settings (Must show 2): each site's export again at every setting of :data:`GRID`; the colluding
   site's rebuild (the strongest of the product's attacks, and the independent posterior mean) and the analyst
   alone's; what it costs the site: a logistic regression (standardised, L2, C = 1) fitted on what the site ships
   (rows and classes, randomised classes under formal noise) and applied to its held-out rows through its own map,
   against the same for the default export (accuracy, and AUC: two classes the second class's, more classes the
   macro one-vs-rest). One site's model, as in ``python -m benchmarks privacy``: it bounds what the shipped rows
   can teach, without the analyst's alignment. The product's own recommendation, the cheapest lever of
   :func:`core.privacy.levers.measure_levers` (every counted check ok), is recorded per site beside it.

The target: "analyst + one colluding site rebuild < 5 % of a site's rows within 10 % of a spread", for every site;
the cheapest setting of the grid that reaches it on every site and seed, with its cost, and whether any does at
≤ 2 points of accuracy (and ≤ 0.02 AUC).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.api import ConfigError, DCError

TABLES = ("drybean", "flchain", "colon")
DEFAULT_SEEDS = 3
PUBLIC_SAMPLE_ROWS = 200  # the kit's sample, as in the clinical bench
SITES = ("site-A", "site-B", "site-C")
TARGET_SHARE = 0.05
SMALL_COST_POINTS = 2.0
GRID: tuple[tuple[str, dict], ...] = (
    ("noise 0.5", {"noise": 0.5}), ("noise 1", {"noise": 1.0}), ("noise 2", {"noise": 2.0}),
    ("ε 100", {"privacy_epsilon": 100.0}), ("ε 30", {"privacy_epsilon": 30.0}), ("ε 10", {"privacy_epsilon": 10.0}),
    ("ε 3", {"privacy_epsilon": 3.0}), ("ε 1", {"privacy_epsilon": 1.0}),
)
REL, ABS_ERROR, ABS_SHARE = 0.10, 0.005, 0.01


def agrees(product: float, reference: float, floor: float) -> bool:
    """|product − reference| ≤ 0.10 × max(|product|, |reference|) + ``floor``."""
    return abs(product - reference) <= REL * max(abs(product), abs(reference)) + floor


def table_sites(name: str, seed: int, data_dir: str | None) -> tuple[pd.DataFrame, pd.Series, str]:
    """(rows, each row's site, the label column) of one table."""
    from benchmarks.clinical import CASES, load_case

    if name in CASES:
        frame, sites = load_case(CASES[name], data_dir)
        label = CASES[name].label
        if name != "colon":  # flchain's sites by year are many and small: three sites dealt at random instead
            sites = pd.Series(np.asarray(SITES)[np.random.default_rng([seed, 35]).permutation(len(frame)) % 3])
        return frame, sites, label
    from benchmarks.simulation.datasets import resolve_benchmark_path

    frame = pd.read_csv(resolve_benchmark_path(name, data_dir))
    frame["label"] = frame["label"].astype(str)
    return frame, pd.Series(np.asarray(SITES)[np.random.default_rng([seed, 35]).permutation(len(frame)) % 3]), "label"


def _scores(model, X: np.ndarray, y: np.ndarray, k: int) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    proba = np.zeros((len(X), k))
    proba[:, model.classes_] = model.predict_proba(X)
    out = {"accuracy": float(np.mean(proba.argmax(1) == y))}
    try:
        out["auc"] = float(roc_auc_score(y, proba[:, 1]) if k == 2 else
                           roc_auc_score(y, proba, multi_class="ovr", labels=list(range(k))))
    except ValueError:
        out["auc"] = float("nan")
    return out


def shipped_model_scores(ex, X_test: np.ndarray, y_test: np.ndarray, k: int) -> dict[str, float]:
    """A logistic regression on what the site ships, applied to its held-out rows through its own map."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from core.api.research import AffineMap

    Xs, ys = np.asarray(ex.arrays["x_tilde"], float), np.asarray(ex.arrays["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)).fit(Xs, ys)
    return _scores(model, AffineMap.from_arrays(ex.private_arrays).transform(X_test), y_test, k)


def reference_figures(X: np.ndarray, anchor: np.ndarray, ex, privacy: dict) -> dict[str, Any]:
    """The independent attacks on every shipped row outside the stand-in rows (module doc, step 4)."""
    from tests.privacy import reference_attacks as ref

    perm = np.asarray(ex.private_arrays["permutation"])
    stand_in = ref.stand_in_rows(len(X), privacy["threat_model"]["public_rows"], privacy["seed"])
    attacked = np.flatnonzero(~np.isin(perm, stand_in))
    truth = X[perm[attacked]]
    Y = np.asarray(ex.arrays["x_tilde"], float)
    A_img = np.asarray(ex.arrays["anchor_tilde"], float)
    out: dict[str, Any] = {"rows": int(len(attacked)), "stand_in_rows": int(len(stand_in))}
    noise = ref.stated_noise_variance(ex.manifest, Y)
    out["eigen"] = ref.mixed_rebuild_errors(truth, ref.eigen_attack(Y, X[stand_in], noise, rows=attacked), X)
    if noise.any():
        clip = ex.manifest["privacy"]["clip"] if isinstance(ex.manifest.get("privacy"), dict) else None
        out["posterior_mean"] = ref.mixed_rebuild_errors(
            truth, ref.posterior_mean_attack(anchor, A_img, Y[attacked], X[stand_in], noise, clip), X)
    else:
        coef = np.linalg.lstsq(np.c_[A_img, np.ones(len(A_img))], anchor, rcond=None)[0]
        out["least_squares"] = ref.mixed_rebuild_errors(truth, np.c_[Y[attacked], np.ones(len(attacked))] @ coef, X)
    return out


def cross_check(privacy: dict, reference: dict) -> dict[str, Any]:
    """The product's figures beside the independent ones, per attack: (product, reference, agree)."""
    found = {f["attack"]: f for f in privacy["findings"]}
    pairs = {"eigen": ("analyst_alone", "eigen"), "least_squares": ("collusion", "least_squares"),
             "posterior_mean": ("collusion", "empirical_prior")}
    out = {}
    for ref_name, (attack, product_name) in pairs.items():
        if ref_name not in reference or product_name not in found[attack].get("by_attack", {}):
            continue
        p = found[attack]["by_attack"][product_name]
        r_err, r_share = reference[ref_name]
        out[ref_name] = {"product": [p["median_cell_error"], p["within_10pct"]], "reference": [r_err, r_share],
                         "agree": agrees(p["median_cell_error"], r_err, ABS_ERROR)
                         and agrees(p["within_10pct"], r_share, ABS_SHARE)}
    return out


def _finding(privacy_or_assessment, attack: str) -> dict:
    findings = privacy_or_assessment["findings"]
    return next(f for f in findings if f["attack"] == attack)


def run_cell(name: str, seed: int, data_dir: str | None, levers: bool = True,
             say: Callable[[str], None] = print) -> dict[str, Any]:
    """Every site of one (table, seed): default export and its cross-check, the grid, the product's lever."""
    from benchmarks.clinical import _read_with, split_sites
    from core.api import Identity
    from core.api.analyst import build_kit
    from core.api.common import SiteExport, infer_schema, read_table
    from core.api.participant import ParticipantRound, anchor_for_kit, measure_levers
    from core.api.research import open_sealed

    started = time.perf_counter()
    frame, sites, label = table_sites(name, seed, data_dir)
    parts = split_sites(frame, sites, label, seed)
    pooled = pd.concat([tr for _, tr, _ in parts], ignore_index=True)
    out: dict[str, Any] = {"table": name, "seed": seed, "sites": {}}
    with tempfile.TemporaryDirectory(prefix=f"privacy-round-{name}-") as tmp:
        root = Path(tmp)
        csvs = {}
        for site, tr, te in parts:
            csvs[site] = (root / f"{site}-train.csv", root / f"{site}-test.csv")
            tr.to_csv(csvs[site][0], index=False, na_rep="")
            te.to_csv(csvs[site][1], index=False, na_rep="")
        sample = root / "public-sample.csv"
        pooled.sample(n=min(PUBLIC_SAMPLE_ROWS, len(pooled)), random_state=seed).to_csv(sample, index=False, na_rep="")
        analyst = Identity.generate("analyst")
        schema, _ = infer_schema(sample, label=label, with_statistics=True)
        kit, _ = build_kit(name=f"privacy {name}", schema=schema, analyst=analyst.card, method="dccfl")
        kit_path = root / "p.dckit"
        kit.save(kit_path, analyst)
        lead_X, _ = _read_with(lambda opt: read_table(csvs[parts[0][0]][0], kit.schema, options=opt,
                                                      labels=False).X, "auto")
        anchor_file = anchor_for_kit(kit, local_X=lead_X, rng=np.random.default_rng([seed, 35]))
        anchor_file.secret = hashlib.sha256(f"privacy-round/{name}/{seed}".encode()).digest()
        anchor = anchor_file.generate()
        k = len(kit.schema.classes)
        for i, (site, _, _) in enumerate(parts):
            t0 = time.perf_counter()
            job = ParticipantRound(kit, kit_path, Identity.generate(site), root / site, anchor=anchor_file,
                                   site_settings={"seed": 100 * seed + i})
            job.confirm_analyst(kit.analyst, how="benchmark: the kit's own signer")
            job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
            table, _ = _read_with(lambda opt, job=job, csv=csvs[site][0]: job.load(csv, opt), "auto")
            test = read_table(csvs[site][1], kit.schema, labels=True, fill_values=table.fill_values)
            sealed = job.seal(root / f"{site}.dcbundle")
            privacy = json.loads((job.workspace.export_dir(kit.project_id, sealed.digest) / "privacy.json")
                                 .read_text())
            opened = open_sealed(sealed.path, analyst, expect_kind="bundle")  # what really left
            shipped = SiteExport(dict(opened.payload.arrays), dict(opened.payload.manifest),
                                 job.export_.private_arrays, {}, [], [])
            X = np.asarray(table.X, float)
            reference = reference_figures(X, anchor, shipped, privacy)
            default_scores = shipped_model_scores(shipped, test.X, test.y, k)
            rec = {"rows": int(table.n_rows), "test_rows": int(test.n_rows), "columns": int(X.shape[1]), "classes": k,
                   "default": {"privacy": _summary(privacy), "reference": reference,
                               "cross_check": cross_check(privacy, reference), **default_scores}, "grid": {}}
            base = {"seed": 100 * seed + i}
            for setting, changes in GRID:
                job.set_site_settings({**base, **changes})
                try:
                    ex = job.compute()
                except DCError as exc:  # e.g. formal noise on a kit that lacks a column's public spread
                    rec["grid"][setting] = {"refused": str(exc)}
                    continue
                a = job.assess().to_dict()
                ref_fig = reference_figures(X, anchor, ex, a)
                scores = shipped_model_scores(ex, test.X, test.y, k)
                rec["grid"][setting] = {
                    "privacy": _summary(a), "reference": ref_fig, "cross_check": cross_check(a, ref_fig), **scores,
                    "accuracy_cost": 100 * (default_scores["accuracy"] - scores["accuracy"]),
                    "auc_cost": default_scores["auc"] - scores["auc"]}
            if levers:
                job.set_site_settings(base)
                job.compute()
                job.assess()
                lv = measure_levers(job)
                best = lv.cheapest()
                rec["levers"] = {"recommended": None if best is None else best.label,
                                 "changes": None if best is None else best.changes,
                                 "effect": None if best is None else best.effect(), "advice": lv.advice(),
                                 "rows": lv.rows}
                if best is not None:
                    job.set_site_settings({**base, **best.changes})
                    ex = job.compute()
                    a = job.assess().to_dict()
                    scores = shipped_model_scores(ex, test.X, test.y, k)
                    rec["levers"].update({"privacy": _summary(a), **scores,
                                          "accuracy_cost": 100 * (default_scores["accuracy"] - scores["accuracy"]),
                                          "auc_cost": default_scores["auc"] - scores["auc"]})
            job.tidy()
            out["sites"][site] = rec
            say(f"  {name} seed {seed} {site}: {table.n_rows:,} rows, {time.perf_counter() - t0:.0f} s")
    out["seconds"] = time.perf_counter() - started
    return out


def _summary(privacy: dict) -> dict[str, Any]:
    """The two reconstruction findings of an assessment: verdict, strongest attack, its figures, every attack's."""
    out = {}
    for attack in ("collusion", "analyst_alone"):
        f = _finding(privacy, attack)
        out[attack] = {"verdict": f["verdict"], "strongest": f.get("strongest"),
                       "median_cell_error": f["numbers"].get("median_cell_error"),
                       "within_10pct": f["numbers"].get("within_10pct"), "by_attack": f.get("by_attack", {})}
    out["membership_auc"] = _finding(privacy, "membership")["numbers"].get("auc")
    out["verdict"] = privacy["verdict"]
    return out


def summarise(cells: list[dict]) -> dict[str, Any]:
    """Per table: the cross-check's agreement, the grid's means over sites and seeds, the cheapest setting that keeps
    every site's colluding rebuild under the target, and the product's recommendations."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(c["table"] for c in cells):
        sites = [s for c in cells if c["table"] == name for s in c["sites"].values()]
        agreement = {}
        for where, parts_of in (("default export", lambda s: [s["default"]]),
                                ("private settings", lambda s: [g for g in s["grid"].values() if "cross_check" in g])):
            checks = [(k, v) for s in sites for part in parts_of(s) for k, v in part["cross_check"].items()]
            for k in ("eigen", "least_squares", "posterior_mean"):
                mine = [v for n, v in checks if n == k]
                if mine:
                    agreement[f"{k} ({where})"] = {
                        "pairs": len(mine), "agree": sum(v["agree"] for v in mine),
                        "worst": max(abs(v["product"][0] - v["reference"][0])
                                     / max(v["reference"][0], v["product"][0], 0.05) for v in mine)}
        grid = {}
        for setting, _ in GRID:
            refused = [s["grid"][setting]["refused"] for s in sites if "refused" in s["grid"][setting]]
            rows = [s["grid"][setting] for s in sites if "refused" not in s["grid"][setting]]
            if not rows:
                grid[setting] = {"refused": refused[0], "refused_sites": len(refused), "reaches": False}
                continue
            colluding = [max(r["privacy"]["collusion"]["within_10pct"],
                             (r["reference"].get("posterior_mean") or r["reference"].get("least_squares"))[1])
                         for r in rows]
            grid[setting] = {
                "colluding_within_10pct_max": float(max(colluding)),
                "colluding_median_error_mean": float(np.mean([r["privacy"]["collusion"]["median_cell_error"]
                                                              for r in rows])),
                "colluding_strongest": sorted({r["privacy"]["collusion"]["strongest"] for r in rows}),
                "alone_median_error_mean": float(np.mean([r["privacy"]["analyst_alone"]["median_cell_error"]
                                                          for r in rows])),
                "alone_within_10pct_max": float(max(r["privacy"]["analyst_alone"]["within_10pct"] for r in rows)),
                "accuracy_cost_mean": float(np.mean([r["accuracy_cost"] for r in rows])),
                "auc_cost_mean": float(np.nanmean([r["auc_cost"] for r in rows])),
                "measured_sites": len(rows), "refused_sites": len(refused),
                **({"refused": refused[0]} if refused else {}),
                "reaches": bool(max(colluding) < TARGET_SHARE) and not refused}
        reaching = [s for s, g in grid.items() if g["reaches"]]
        binary = all(c["sites"][next(iter(c["sites"]))]["classes"] == 2 for c in cells if c["table"] == name)
        cost_key = "auc_cost_mean" if binary else "accuracy_cost_mean"  # two classes: AUC, as the levers rank
        best = min(reaching, key=lambda s: grid[s][cost_key]) if reaching else None
        default = {"accuracy": float(np.mean([s["default"]["accuracy"] for s in sites])),
                   "auc": float(np.nanmean([s["default"]["auc"] for s in sites])),
                   "colluding_within_10pct": float(np.mean([s["default"]["privacy"]["collusion"]["within_10pct"]
                                                            for s in sites])),
                   "alone_median_error": float(np.mean([s["default"]["privacy"]["analyst_alone"]["median_cell_error"]
                                                        for s in sites])),
                   "alone_within_10pct_max": float(max(s["default"]["privacy"]["analyst_alone"]["within_10pct"]
                                                       for s in sites)),
                   "alone_strongest": sorted({s["default"]["privacy"]["analyst_alone"]["strongest"] for s in sites}),
                   "alone_verdicts": sorted({s["default"]["privacy"]["analyst_alone"]["verdict"] for s in sites})}
        levers = [s["levers"] for s in sites if "levers" in s]
        out[name] = {"sites": len(sites), "rows": [s["rows"] for s in sites], "default": default,
                     "agreement": agreement, "grid": grid, "reached_by": reaching,
                     "ranked_by": "AUC" if binary else "accuracy",
                     "best": None if best is None else {
                         "setting": best, **grid[best],
                         "small": grid[best][cost_key] <= (SMALL_COST_POINTS / 100 if binary else SMALL_COST_POINTS)},
                     "levers": [{k: v for k, v in lv.items() if k != "privacy"}
                                | ({"colluding_within_10pct": lv["privacy"]["collusion"]["within_10pct"]}
                                   if "privacy" in lv else {}) for lv in levers]}
    return out


def _f(x, d: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{d}f}"


def markdown(out: dict) -> str:
    lines = ["# Privacy on three sites with the default kit (issue #35)", "",
             f"Command: `{out['command']}`  ", f"Seeds: {out['seeds']}; commit {out.get('commit')}; machine: "
             f"{out['machine']}; wall time {out['wall_seconds'] / 60:.1f} min (load {out['load']:.1f}).", "",
             "Protocol: `benchmarks/privacy_round.py`. Figures are shares of each column's spread (median error) and "
             "of a site's rows rebuilt with every value within 10 % of its column's spread (`≤10%`).", ""]
    for name, s in out["summary"].items():
        d = s["default"]
        lines += [f"## {name} ({s['sites']} site exports over {len(out['seeds'])} seed(s), "
                  f"{min(s['rows']):,}–{max(s['rows']):,} rows each)", "",
                  "**Default export.** Colluding site: "
                  f"{100 * d['colluding_within_10pct']:.0f} % of rows within 10 % (mean over sites). Analyst alone "
                  f"with a public sample: median error {d['alone_median_error']:.2f}, up to "
                  f"{100 * d['alone_within_10pct_max']:.0f} % of a site's rows within 10 % (strongest: "
                  f"{', '.join(d['alone_strongest'])}; verdicts {', '.join(d['alone_verdicts'])}). "
                  f"Site's model on what it ships: accuracy {d['accuracy']:.3f}, AUC {d['auc']:.3f}.", "",
                  "**Cross-check against the independent attacks** (`tests/privacy/reference_attacks.py`; within "
                  "10 %):", "",
                  "| attack (product ↔ independent) | pairs | agree | worst gap (median error, share of the larger) |",
                  "|---|---|---|---|"]
        for k, v in s["agreement"].items():
            if v["pairs"]:
                lines.append(f"| {k} | {v['pairs']} | {v['agree']} | {_f(v['worst'], 3)} |")
        lines += ["", "**Private settings** (means over sites and seeds; `collude ≤10%` is the largest over sites of "
                  "the strongest colluding rebuild, product or independent):", "",
                  "| setting | collude ≤10% (max) | collude err | strongest | alone err | alone ≤10% (max) | "
                  "accuracy cost (pt) | AUC cost | target |", "|---|---|---|---|---|---|---|---|---|"]
        refusals = {g["refused"] for g in s["grid"].values() if "refused" in g}
        for setting, g in s["grid"].items():
            if "colluding_within_10pct_max" not in g:
                lines.append(f"| {setting} | refused at every site (below) | | | | | | | |")
                continue
            lines.append(f"| {setting} | {100 * g['colluding_within_10pct_max']:.1f} % | "
                         f"{_f(g['colluding_median_error_mean'])} | {', '.join(g['colluding_strongest'])} | "
                         f"{_f(g['alone_median_error_mean'])} | {100 * g['alone_within_10pct_max']:.1f} % | "
                         f"{_f(g['accuracy_cost_mean'], 1)} | {_f(g['auc_cost_mean'], 3)} | "
                         f"{'reached' if g['reaches'] else '—'}"
                         + (f" ({g['refused_sites']} of {g['measured_sites'] + g['refused_sites']} site exports "
                            "refused)" if g.get("refused_sites") else "") + " |")
        if refusals:
            lines += ["", "Refused: " + "; ".join(sorted(refusals)) + " (the kit's 200-row sample left a rare 0/1 "
                      "column without a public spread; issue #35 part B lets such a kit take the formal option)."]
        b = s["best"]
        if b:
            unit = "0.02 AUC" if s["ranked_by"] == "AUC" else "2 points of accuracy"
            lines += ["", f"Target (< 5 % of every site's rows within 10 % against the analyst and a colluding site) "
                      f"reached at the least cost ({s['ranked_by']}) by **{b['setting']}**: "
                      f"{_f(b['accuracy_cost_mean'], 1)} pt of accuracy, {_f(b['auc_cost_mean'], 3)} AUC below the "
                      "default export — " + (f"within {unit}." if b["small"] else f"**more than {unit}**: no "
                                             "setting here reaches the target at that cost; the summary path "
                                             "(meta-lr) ships no rows.")]
        else:
            lines += ["", "Target not reached by any setting of the grid."]
        if s["levers"]:
            lines += ["", "**The product's own recommendation** (cheapest lever passing every counted check, "
                      "`measure_levers`), per site: " + "; ".join(
                          f"{lv['recommended'] or 'none'}"
                          + (f" ({lv['effect']} in the site's cross-validation; held-out: "
                             f"{_f(lv.get('accuracy_cost'), 1)} pt, AUC {_f(lv.get('auc_cost'), 3)}; colluding "
                             f"≤10% {100 * lv['colluding_within_10pct']:.1f} %)" if lv.get("recommended") else "")
                          for lv in s["levers"])]
        lines.append("")
    return "\n".join(lines) + "\n"


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks privacy-round [--dataset T]… [--seeds N] [--quick] [--data-dir DIR] [--json FILE]``;
    ``--quick`` skips the product's levers (the slow part)."""
    from benchmarks import machine
    from benchmarks.clinical import _commit
    from core.api import write_json_atomic, write_text_atomic

    tables = args.dataset or list(TABLES)
    unknown = [t for t in tables if t not in TABLES]
    if unknown:
        raise ConfigError(f"privacy-round runs on {', '.join(TABLES)}, not {', '.join(unknown)}")
    n_seeds = args.seeds if getattr(args, "seeds_given", False) else DEFAULT_SEEDS
    if n_seeds < 1:
        raise ConfigError("--seeds must be at least 1")
    started = time.perf_counter()
    from benchmarks import one_thread

    cells = []
    with one_thread():
        for name in tables:
            for seed in range(n_seeds):
                cells.append(run_cell(name, seed, args.data_dir, levers=not args.quick, say=say))
                say(f"[{len(cells)}/{len(tables) * n_seeds}] {name} seed {seed} ({cells[-1]['seconds']:.0f} s)")
    out = {"experiment": "privacy-round", "tables": tables, "seeds": list(range(n_seeds)), "grid": dict(GRID),
           "summary": summarise(cells), "cells": cells, "wall_seconds": time.perf_counter() - started,
           "load": os.getloadavg()[0], "commit": _commit(), "machine": machine("sklearn"),
           "command": " ".join(["python -m benchmarks privacy-round", *(f"--dataset {d}" for d in (args.dataset or [])),
                                f"--seeds {n_seeds}", *(["--quick"] if args.quick else []),
                                *([f"--data-dir {args.data_dir}"] if args.data_dir else []),
                                *([f"--json {args.json}"] if args.json else [])])}
    text = markdown(out)
    say(text)
    if args.json:
        write_json_atomic(args.json, json.loads(json.dumps(out, default=float)))
        write_text_atomic(Path(args.json).with_suffix(".md"), text)
    return out
