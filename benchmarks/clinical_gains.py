"""Issue #37's measures on the clinical benchmark: what collaboration delivers at each site, and what it withholds.

Per site and seed the harness (:mod:`benchmarks.clinical`) keeps the site's test rows' outcome y and, for a binary
outcome, the risk each model gives them:

* ``own``: the site's own logistic regression on its raw training rows (the baseline);
* ``in_use``: the model the site ends up using, read from ``participant apply --validate``'s result columns
  (``prob_<class>``: the package, its own model, or whatever update the site's check chose);
* ``oracle``: the package as sent without any gate (the DC family: the same bundles analysed with
  ``own_model=false``; a site-scored method such as meta-lr: the package before the site's check);
* ``reference``: the pooled logistic regression with site intercepts on every site's raw training rows, scored
  on the site's rows with its own intercept (an upper reference no one-round method sees).

Paired intervals (:func:`paired_auc`): for one site, a difference of AUCs of two models on the same test rows,
over seeds. Per seed s, DeLong's structural components give d_s = AUC_a − AUC_b and its variance v_s =
V_aa + V_bb − 2 V_ab (DeLong, DeLong & Clarke-Pearson 1988, eq. 3–5; :mod:`core.learn.clinical_metrics`); over
the S seeds d̄ = Σ d_s / S with Var d̄ = Σ v_s / S² — DeLong on all seeds' test rows together, stratified by seed
(an AUC compares events with non-events of the same seed only, since each seed has its own models). The seeds'
test rows overlap (each is a random quarter of the same site), so the variance is, if anything, too small: a
"significantly below" verdict errs towards flagging harm.

Per site (:func:`site_gains`): gain delivered = in use − own; the oracle's gain = oracle − own; gain withheld =
oracle − in use at a site where the oracle gains (> 0), harm avoided = in use − oracle where it loses (< 0);
gap to the reference = in use − reference; the calibration slope of the model in use (logistic recalibration of
logit p on all seeds' test rows; :func:`core.learn.clinical_metrics.calibration_fit`).

The issue's "Must show" checks (:func:`must_show`, :func:`smallest_third`), from per-site means over seeds:

1. share: the mean over sites of (in use − own) ≥ ½ × the mean of (oracle − own) where the latter is ≥ 0.01, and
   ≥ −0.002 elsewhere;
2. no harm: no site's mean (in use − own) below −0.02, and none significantly below (one-sided 5 %, above);
3. colon only: the mean over sites of the AUC in use ≥ the reference's − 0.005;
4. over all tables' sites, the smallest third by rows (⌈S/3⌉ sites): mean gain ≥ the mean of each site's
   requirement, +0.01, or (reference − own) − 0.005 where the reference itself gains less than 0.01;
5. calibration slope of the model in use within [0.8, 1.25] at every site with ≥ 100 events (training and test
   rows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

SHARE = 0.5
ORACLE_GAINS = 0.01
ELSEWHERE = -0.002
WORST_SITE = -0.02
ALPHA = 0.05
REFERENCE_TOLERANCE = 0.005
SMALL_SITE_GAIN = 0.01
SLOPE_RANGE = (0.8, 1.25)
CALIBRATION_EVENTS = 100
Z95 = 1.959963984540054
MODELS = ("own", "in_use", "oracle", "reference")


def _mean(values) -> float:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def paired_auc(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, float]:
    """AUC_a − AUC_b over seeds, stratified DeLong (module doc): ``parts`` = per seed (y ∈ {0, 1}, risk a, risk b).
    Returns difference, se, 95 % low/high, ``p_below`` (one-sided p of "a is below b") and ``seeds`` used (a seed
    whose test rows hold fewer than two rows of a class is skipped)."""
    from scipy.stats import norm

    from core.api.research import delong_components as _delong_components

    ds, vs = [], []
    for y, a, b in parts:
        comp = _delong_components(np.asarray(y), np.vstack([np.asarray(a, float), np.asarray(b, float)]))
        if comp is None:
            continue
        aucs, cov = comp
        ds.append(float(aucs[0] - aucs[1]))
        vs.append(max(float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1]), 0.0))
    nan = float("nan")
    if not ds:
        return {"difference": nan, "se": nan, "low": nan, "high": nan, "p_below": nan, "seeds": 0}
    d = float(np.mean(ds))
    se = math.sqrt(sum(vs)) / len(ds)
    if se <= 1e-12:
        p_below = 0.5 if abs(d) < 1e-12 else (0.0 if d < 0 else 1.0)
    else:
        p_below = float(norm.cdf(d / se))
    return {"difference": d, "se": se, "low": d - Z95 * se, "high": d + Z95 * se, "p_below": p_below,
            "seeds": len(ds)}


def calibration_slope(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The logistic recalibration slope of risk p on all seeds' test rows together (``parts``: per seed (y, p))."""
    from core.api.research import calibration_fit

    if not parts:
        return float("nan")
    y = np.concatenate([np.asarray(y, np.int64) for y, _ in parts])
    p = np.concatenate([np.asarray(p, np.float64) for _, p in parts])
    return float(calibration_fit(y, p)[1])


def site_gains(risks: Sequence[dict[str, Any]], events: float) -> dict[str, Any]:
    """One site's measures for one method (module doc) from its per-seed ``risks`` ({"y", "own", "in_use",
    "oracle", "reference"}: arrays over the seed's test rows) and its event count (training + test rows)."""
    from sklearn.metrics import roc_auc_score

    def auc(key: str) -> float:
        vals = [roc_auc_score(r["y"], r[key]) for r in risks if 0 < int(np.sum(r["y"])) < len(r["y"])]
        return _mean(vals)

    def pair(a: str, b: str) -> dict[str, float]:
        return paired_auc([(r["y"], r[a], r[b]) for r in risks])

    out: dict[str, Any] = {m: auc(m) for m in MODELS}
    out["delivered"] = pair("in_use", "own")
    out["oracle_gain"] = pair("oracle", "own")
    out["oracle_vs_in_use"] = pair("oracle", "in_use")
    out["to_reference"] = pair("in_use", "reference")
    out["reference_gain"] = pair("reference", "own")
    gains = out["oracle_gain"]["difference"]
    withheld = out["oracle_vs_in_use"]["difference"]
    out["withheld"] = withheld if gains > 0 else 0.0
    out["harm_avoided"] = -withheld if gains < 0 else 0.0
    out["events"] = float(events)
    out["calibration_slope"] = calibration_slope([(r["y"], r["in_use"]) for r in risks])
    out["calibration_slope_own"] = calibration_slope([(r["y"], r["own"]) for r in risks])
    return out


def must_show(case: str, gains: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Checks 1, 2, 3 and 5 of the module doc for one table and method; ``gains``: per site, :func:`site_gains`."""
    d = {n: g["delivered"]["difference"] for n, g in gains.items()}
    o = {n: g["oracle_gain"]["difference"] for n, g in gains.items()}
    delivered, oracle = _mean(d.values()), _mean(o.values())
    need = SHARE * oracle if oracle >= ORACLE_GAINS else ELSEWHERE
    below = sorted(n for n in gains if d[n] < WORST_SITE)
    significant = sorted(n for n, g in gains.items() if g["delivered"]["p_below"] < ALPHA)
    sig = {n: (d[n], gains[n]["delivered"]["p_below"]) for n in significant}
    out: dict[str, Any] = {
        "delivered": delivered, "oracle_gain": oracle, "needed": need, "pass_share": bool(delivered >= need),
        "worst_site": min(d, key=d.get) if d else None, "worst_delivered": min(d.values()) if d else float("nan"),
        "sites_below": below, "sites_significantly_below": significant, "significantly_below": sig,
        "pass_no_harm": not below and not significant,
        "mean_in_use": _mean(g["in_use"] for g in gains.values()),
        "mean_reference": _mean(g["reference"] for g in gains.values()),
        "mean_own": _mean(g["own"] for g in gains.values()),
        "mean_oracle": _mean(g["oracle"] for g in gains.values()),
    }
    if case == "colon":
        out["pass_reference"] = bool(out["mean_in_use"] >= out["mean_reference"] - REFERENCE_TOLERANCE)
    slopes = {n: g["calibration_slope"] for n, g in gains.items() if g["events"] >= CALIBRATION_EVENTS}
    out["calibration"] = slopes
    out["calibration_outside"] = sorted(n for n, v in slopes.items()
                                        if not (SLOPE_RANGE[0] <= v <= SLOPE_RANGE[1]))
    out["pass_calibration"] = not out["calibration_outside"]
    out["pass"] = all(v for k, v in out.items() if k.startswith("pass_"))
    return out


def smallest_third(sites: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Check 4 of the module doc for one method over every table: ``sites`` maps "case/site" to
    {"rows": total rows, **site_gains}."""
    if not sites:
        return {"sites": [], "pass": False}
    k = math.ceil(len(sites) / 3)
    small = sorted(sites, key=lambda n: (sites[n]["rows"], n))[:k]
    gain = {n: sites[n]["delivered"]["difference"] for n in small}
    ref = {n: sites[n]["reference_gain"]["difference"] for n in small}
    need = {n: SMALL_SITE_GAIN if ref[n] >= SMALL_SITE_GAIN else ref[n] - REFERENCE_TOLERANCE for n in small}
    mean_gain, mean_need = _mean(gain.values()), _mean(need.values())
    return {"sites": small, "gain": gain, "reference_gain": ref, "needed": need, "mean_gain": mean_gain,
            "mean_needed": mean_need, "pass": bool(mean_gain >= mean_need)}


def _f(x: float | None, digits: int = 3, sign: bool = True) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def interval(p: dict[str, float]) -> str:
    """``+0.012 [−0.004, +0.028]``."""
    return f"{_f(p['difference'])} [{_f(p['low'])}, {_f(p['high'])}]"


def check_lines(case: str, method: str, c: dict[str, Any]) -> list[str]:
    """The checks of :func:`must_show` as plain lines."""
    def verdict(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    share = (f"needs ≥ ½ × oracle's {_f(c['oracle_gain'])} = {_f(c['needed'])}" if c["oracle_gain"] >= ORACLE_GAINS
             else f"oracle gains {_f(c['oracle_gain'])} < 0.01, needs ≥ {ELSEWHERE}")
    lines = [f"{case} / {method}: gain delivered {_f(c['delivered'])} AUC ({share}): {verdict(c['pass_share'])}",
             f"{case} / {method}: worst site {c['worst_site']} {_f(c['worst_delivered'])} (limit {WORST_SITE}); "
             f"below the limit: {', '.join(c['sites_below']) or 'none'}; significantly below (one-sided 5 %): "
             + (", ".join(f"{n} ({_f(v, 4)}, p = {p:.3f})" for n, (v, p) in c["significantly_below"].items())
                or "none") + f": {verdict(c['pass_no_harm'])}"]
    if "pass_reference" in c:
        lines.append(f"{case} / {method}: mean AUC in use {_f(c['mean_in_use'], sign=False)} vs pooled LR with site "
                     f"intercepts {_f(c['mean_reference'], sign=False)} (within {REFERENCE_TOLERANCE}): "
                     f"{verdict(c['pass_reference'])}")
    slopes = ", ".join(f"{n} {v:.2f}" for n, v in c["calibration"].items()) or "no site with ≥ 100 events"
    lines.append(f"{case} / {method}: calibration slope in use at sites with ≥ {CALIBRATION_EVENTS} events: {slopes}"
                 f" (range {SLOPE_RANGE[0]}–{SLOPE_RANGE[1]}): {verdict(c['pass_calibration'])}")
    return lines


def smallest_line(method: str, s: dict[str, Any]) -> str:
    if not s["sites"]:
        return f"{method}: no sites"
    each = "; ".join(f"{n} {_f(s['gain'][n])} (needs {_f(s['needed'][n])})" for n in s["sites"])
    return (f"smallest third of sites / {method}: mean gain {_f(s['mean_gain'])} vs needed {_f(s['mean_needed'])}: "
            f"{'PASS' if s['pass'] else 'FAIL'} — {each}")


def gains_table(gains: dict[str, dict[str, Any]], used: dict[str, dict[str, int]], seeds: int) -> list[str]:
    """The per-site table (markdown lines) of one table and method."""
    head = ["site", "events", "own AUC", "in use", "oracle", "pooled LR + site int.", "used (seeds)",
            "gain delivered [95 %]", "oracle's gain [95 %]", "withheld", "harm avoided", "in use − reference [95 %]",
            "calibration slope in use (own)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * 5 + "---|" + "---:|" * 6]
    for n, g in gains.items():
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(used.get(n, {}).items())) or "–"
        lines.append("| " + " | ".join([
            n, f"{g['events']:.0f}", _f(g["own"], sign=False), _f(g["in_use"], sign=False),
            _f(g["oracle"], sign=False), _f(g["reference"], sign=False), f"{kinds} (of {seeds})",
            interval(g["delivered"]), interval(g["oracle_gain"]), _f(g["withheld"]), _f(g["harm_avoided"]),
            interval(g["to_reference"]),
            f"{_f(g['calibration_slope'], 2, sign=False)} ({_f(g['calibration_slope_own'], 2, sign=False)})"]) + " |")
    means = {k: _mean(g[k] for g in gains.values()) for k in MODELS}
    lines.append("| **mean** | | " + " | ".join(_f(means[k], sign=False) for k in MODELS) + " | | "
                 + " | ".join([_f(_mean(g["delivered"]["difference"] for g in gains.values())),
                               _f(_mean(g["oracle_gain"]["difference"] for g in gains.values())),
                               _f(_mean(g["withheld"] for g in gains.values())),
                               _f(_mean(g["harm_avoided"] for g in gains.values())),
                               _f(_mean(g["to_reference"]["difference"] for g in gains.values())), ""]) + " |")
    return lines


__all__ = ["calibration_slope", "check_lines", "gains_table", "interval", "must_show", "paired_auc", "site_gains",
           "smallest_line", "smallest_third"]
