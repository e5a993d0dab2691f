"""``python -m benchmarks summary-stats``: can one round of summary statistics reach the pooled logistic regression with
site intercepts? (issue #37)

Per (table, seed), the clinical benchmark's sites and 75/25 split (:mod:`benchmarks.clinical`, binary outcomes).
Every site's raw rows are encoded one way for all (text one-hot, numbers median-filled with a missing indicator;
the encoder fitted on the pooled training rows: a stand-in for the kit's fixed encoding). Penalty units: the
pooled standard deviation of each column (the kit's public scale), λ = 1 per site, the same as meta-lr's default.
Each site i fits its penalised logistic regression (:func:`core.methods.metalr.site_logit.fit_site_logit`):
θ̂ᵢ = (âᵢ, β̂ᵢ) and V̂ᵢ = Hᵢ⁻¹, the inverse penalised information — all that leaves it. Models, scored by AUC on each
site's test rows:

* ``own``: the site's own fit;
* ``pooled + site intercepts (exact)``: the penalised maximum-likelihood fit of every site's rows with one
  intercept per site (unpenalised) and common slopes (penalty λ once, as one pooled fit has it) — what a one-round
  method from summaries should reproduce;
* ``reference (clinical)``: the clinical benchmark's reference, scikit-learn's logistic regression (C = 1) on the
  pooled raw rows with site one-hot columns, standardised (:func:`benchmarks.clinical.with_site_column`);
* ``one-step (fixed effect)``: meta-lr's fixed-effect stratified combination: each site's marginal slopes
  combined by inverse variance, its intercept given them (:func:`core.methods.metalr.fixed_effect.stratified`) —
  the full-Hessian one-step from the site fits;
* ``one-step, penalty undone``: the same quadratic approximation of each site's log-likelihood at θ̂ᵢ, with its
  own penalty removed — gradient −λPθ̂ᵢ and information Hᵢ − λP of the unpenalised log-likelihood there
  (P = diag(0, s²)) — summed over sites and minimised with the penalty λ once (:func:`one_step_unpenalised`); the
  exact answer when every site's log-likelihood is quadratic;
* ``random effects (meta-lr)``: meta-lr's empirical-Bayes coefficients per site
  (:mod:`core.methods.metalr.random_effects`; its own slopes shrunk towards the others'; one proportional τ², the
  default), and the same with one DerSimonian–Laird τ² per coefficient (``tau=per-coefficient``).

Target: the mean AUC within 0.005 of the reference's on every table (a model above it reaches it too).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

TARGET = 0.005
LAMBDA = 1.0
MODELS = ("own", "pooled + site intercepts (exact)", "reference (clinical)", "one-step (fixed effect)",
          "one-step, penalty undone", "random effects (meta-lr)", "random effects, τ² per coefficient")


def encoder(pooled: pd.DataFrame, label: str):
    """The clinical reference's encoding without its scaler, fitted on the pooled training rows."""
    from benchmarks.clinical import raw_logistic_regression

    return raw_logistic_regression(pooled, label).steps[0][1].fit(pooled.drop(columns=label))


def pooled_with_site_intercepts(Xs: list[np.ndarray], ys: list[np.ndarray], scale: np.ndarray, lam: float
                                ) -> tuple[np.ndarray, np.ndarray]:
    """(site intercepts (S,), slopes (m,)) maximising Σᵢ log-likelihood − (λ/2) Σⱼ (sⱼβⱼ)²: the pooled fit with
    one unpenalised intercept per site (site 0's is the intercept, the others' dummies nearly unpenalised)."""
    from core.api.research import fit_site_logit

    S = len(Xs)
    m = Xs[0].shape[1]
    dummies = [np.zeros((len(X), S - 1)) for X in Xs]
    for i in range(1, S):
        dummies[i][:, i - 1] = 1.0
    X = np.vstack([np.column_stack([x, d]) for x, d in zip(Xs, dummies, strict=True)])
    y = np.concatenate(ys)
    fit = fit_site_logit(X, y, 2, lam=lam, scale=np.concatenate([scale, np.full(S - 1, 1e-6)]), max_iter=200)
    coef = fit.coef[0]
    return coef[0] + np.concatenate([[0.0], coef[1 + m:]]), coef[1:1 + m]


def one_step_unpenalised(thetas: list[np.ndarray], covs: list[np.ndarray], scale: np.ndarray, lam: float
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(site intercepts (S,), slopes (m,)) minimising Σᵢ qᵢ(aᵢ, β) + (λ/2) βᵀ diag(s²) β, qᵢ the quadratic
    approximation at θ̂ᵢ of site i's unpenalised negative log-likelihood: gradient gᵢ = −λPθ̂ᵢ, information
    Jᵢ = V̂ᵢ⁻¹ − λP (P = diag(0, s²): the site's penalty, which its fit made the gradient balance). A linear
    system in (a₁, …, a_S, β)."""
    S = len(thetas)
    m = len(scale)
    P = np.diag(np.concatenate([[0.0], scale ** 2]))
    n = S + m
    A, b = np.zeros((n, n)), np.zeros(n)
    for i, (t, v) in enumerate(zip(thetas, covs, strict=True)):
        t = np.ravel(t)
        J = np.linalg.inv(v) - lam * P
        g = -lam * P @ t
        idx = np.concatenate([[i], S + np.arange(m)])
        A[np.ix_(idx, idx)] += J
        b[idx] += J @ t - g  # ∇qᵢ = g + J(θ − θ̂ᵢ) = 0 part
    A[S:, S:] += lam * np.diag(scale ** 2)
    sol = np.linalg.solve(A, b)
    return sol[:S], sol[S:]


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else float("nan")


def run_cell(case_name: str, data_dir: str | None, seed: int) -> dict[str, Any]:
    """Every model's AUC per site for one table and seed (module doc)."""
    from benchmarks.clinical import (
        CASES,
        event_risk,
        load_case,
        raw_logistic_regression,
        split_sites,
        with_site_column,
    )
    from core.api.research import fit_site_logit, posterior, prior_without, stratified
    from core.api.research import site_logit_proba as predict_proba

    case = CASES[case_name]
    frame, sites = load_case(case, data_dir)
    label = case.label
    parts = split_sites(frame, sites, label, seed)
    pooled = pd.concat([tr for _, tr, _ in parts], ignore_index=True)
    event = sorted(pooled[label].unique())[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = encoder(pooled, label)
        Xs = [np.asarray(enc.transform(tr.drop(columns=label)), np.float64) for _, tr, _ in parts]
        Ts = [np.asarray(enc.transform(te.drop(columns=label)), np.float64) for _, _, te in parts]
        ys = [(tr[label].to_numpy(object) == event).astype(np.int64) for _, tr, _ in parts]
        yt = [(te[label].to_numpy(object) == event).astype(np.int64) for _, _, te in parts]
        scale = np.vstack(Xs).std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        fits = [fit_site_logit(X, y, 2, lam=LAMBDA, scale=scale) for X, y in zip(Xs, ys, strict=True)]
        with_sites = with_site_column(parts)
        ref = raw_logistic_regression(with_sites, label).fit(with_sites.drop(columns=label), with_sites[label])
    a_exact, b_exact = pooled_with_site_intercepts(Xs, ys, scale, LAMBDA)
    a_one, b_one = one_step_unpenalised([f.coef for f in fits], [f.cov for f in fits], scale, LAMBDA)
    m = Xs[0].shape[1]
    commons = [np.arange(1, m + 1)] * len(fits)
    maps = [np.eye(m)] * len(fits)
    _, fe = stratified([f.coef for f in fits], [f.cov for f in fits], commons, maps)
    slopes = [f.coef.ravel()[1:] for f in fits]
    slope_covs = [f.cov[1:, 1:] for f in fits]
    out = {"case": case_name, "seed": seed, "sites": {}}
    for i, (name, _, te) in enumerate(parts):
        risk = {
            "own": predict_proba(fits[i].coef, Ts[i])[:, 1],
            "pooled + site intercepts (exact)": 1 / (1 + np.exp(-(a_exact[i] + Ts[i] @ b_exact))),
            "reference (clinical)": event_risk(ref, te.assign(**{"(site)": name}), label, event),
            "one-step (fixed effect)": predict_proba(fe[i].reshape(1, -1), Ts[i])[:, 1],
            "one-step, penalty undone": 1 / (1 + np.exp(-(a_one[i] + Ts[i] @ b_one))),
            **{name: predict_proba(posterior(
                fits[i].coef, fits[i].cov, commons[i], maps[i],
                prior_without(i, slopes, slope_covs, maps, random=True, how=how))[1].reshape(1, -1), Ts[i])[:, 1]
               for name, how in (("random effects (meta-lr)", "proportional"),
                                 ("random effects, τ² per coefficient", "per-coefficient"))},
        }
        out["sites"][name] = {"rows": len(ys[i]) + len(yt[i]), **{k: _auc(yt[i], v) for k, v in risk.items()}}
    gap = float(np.max(np.abs(np.concatenate([[a_one - a_exact], [b_one - b_exact]], axis=None))))
    out["max_coefficient_gap_one_step_vs_exact"] = gap
    return out


def _cell_task(case: str, data_dir: str | None, seed: int) -> dict[str, Any]:
    from benchmarks import one_thread

    with one_thread():
        return run_cell(case, data_dir, seed)


def summarise(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per table: each model's mean AUC over sites and seeds, and its gap to the reference and to the exact fit."""
    out = {}
    for case in dict.fromkeys(c["case"] for c in cells):
        cs = [c for c in cells if c["case"] == case]
        names = list(cs[0]["sites"])
        per_site = {n: {k: float(np.nanmean([c["sites"][n][k] for c in cs])) for k in MODELS} for n in names}
        mean = {k: float(np.mean([per_site[n][k] for n in names])) for k in MODELS}
        out[case] = {"sites": per_site, "mean": mean,
                     "gap_to_reference": {k: mean[k] - mean["reference (clinical)"] for k in MODELS},
                     "gap_to_exact": {k: mean[k] - mean["pooled + site intercepts (exact)"] for k in MODELS},
                     "reaches": {k: bool(mean[k] >= mean["reference (clinical)"] - TARGET) for k in MODELS},
                     "coefficient_gap": float(np.max([c["max_coefficient_gap_one_step_vs_exact"] for c in cs]))}
    return out


def markdown(out: dict[str, Any]) -> str:
    from benchmarks import machine

    lines = ["# One round from summary statistics vs the pooled logistic regression with site intercepts (issue #37)",
             "", f"Command: `{out['command']}`", "",
             f"Commit: {out.get('commit') or 'unknown'}. Machine: {machine()}; seeds {out['seeds']}; "
             f"wall time {out['wall_seconds'] / 60:.1f} min; {out['jobs']} worker process(es).", "",
             (__doc__ or "").split("\n\n", 1)[1].strip(), "", "## Mean AUC over sites and seeds", "",
             "| table | " + " | ".join(MODELS) + " |", "|---|" + "---:|" * len(MODELS)]
    for case, s in out["summary"].items():
        lines.append(f"| {case} | " + " | ".join(
            f"{s['mean'][k]:.4f} ({s['gap_to_reference'][k]:+.4f})" for k in MODELS) + " |")
    lines += ["", "In brackets: the gap to the reference (clinical). Reaches it within 0.005 (mean AUC ≥ reference − "
              "0.005) on every table: "
              + "; ".join(f"{k}: {'yes' if all(s['reaches'][k] for s in out['summary'].values()) else 'no'}"
                          for k in MODELS[3:]) + ".", "",
              "Largest coefficient difference between the one-step with the penalty undone and the exact pooled fit "
              "(in the encoded columns' own units), per table: "
              + "; ".join(f"{c} {s['coefficient_gap']:.3g}" for c, s in out["summary"].items()) + "."]
    for case, s in out["summary"].items():
        lines += ["", f"## {case}", "", "| site | " + " | ".join(MODELS) + " |", "|---|" + "---:|" * len(MODELS)]
        for n, x in s["sites"].items():
            lines.append(f"| {n} | " + " | ".join(f"{x[k]:.4f}" for k in MODELS) + " |")
    return "\n".join(lines) + "\n"


def run(cases: Sequence[str], seeds: Sequence[int], data_dir: str | None, jobs: int,
        say: Callable[..., None]) -> dict[str, Any]:
    from benchmarks.clinical import CASES, _commit

    for c in cases:
        if c not in CASES:
            from core.api import ConfigError

            raise ConfigError(f"unknown clinical case '{c}'; the cases are {', '.join(CASES)}")
    tasks = [(c, s) for c in cases for s in seeds]
    started = time.perf_counter()
    cells = []
    if jobs <= 1:
        cells = [_cell_task(c, data_dir, s) for c, s in tasks]
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            cells = list(pool.map(_cell_task, [c for c, _ in tasks], [data_dir] * len(tasks), [s for _, s in tasks]))
    summary = summarise(cells)
    for case, s in summary.items():
        say(f"{case}: " + "; ".join(f"{k} {s['mean'][k]:.4f} ({s['gap_to_reference'][k]:+.4f})" for k in MODELS))
    return {"experiment": "summary-stats", "cases": list(cases), "seeds": list(seeds), "jobs": jobs,
            "summary": summary, "cells": cells, "wall_seconds": time.perf_counter() - started, "commit": _commit()}


def run_from_args(args, say: Callable[..., None]) -> dict[str, Any]:
    """``python -m benchmarks summary-stats [--dataset CASE]… [--seeds N] [--data-dir DIR] [--json FILE]``; seeds
    default to 5."""
    from benchmarks import worker_count
    from benchmarks.clinical import CASES, DEFAULT_SEEDS
    from core.api import write_json_atomic, write_text_atomic

    cases = args.dataset or list(CASES)
    n = args.seeds if getattr(args, "seeds_given", False) else DEFAULT_SEEDS
    out = run(cases, list(range(n)), args.data_dir, worker_count(), say)
    out["command"] = " ".join(["python -m benchmarks summary-stats", *(f"--dataset {c}" for c in (args.dataset or [])),
                               f"--seeds {n}", *([f"--data-dir {args.data_dir}"] if args.data_dir else []),
                               *([f"--json {args.json}"] if args.json else [])])
    if args.json:
        from pathlib import Path

        write_json_atomic(args.json, json.loads(json.dumps(out)))
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out))
    return out


__all__ = ["one_step_unpenalised", "pooled_with_site_intercepts", "run", "run_cell", "run_from_args"]
