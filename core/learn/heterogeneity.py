"""How much sites differ: a random-effects pooling of one figure per site, and the plain sentence for it.

Each site i gives an estimate θ̂ᵢ with standard error sᵢ (wᵢ = 1/sᵢ²). With k sites, the fixed-effect mean
θ̄ = Σwᵢθ̂ᵢ / Σwᵢ, Cochran's Q = Σwᵢ(θ̂ᵢ − θ̄)² on df = k − 1 (p = P(χ²_df ≥ Q)), Higgins' I² = max(0, (Q − df)/Q)
(the share of the spread beyond chance; Higgins & Thompson 2002, eq. 10), DerSimonian–Laird's
τ̂² = max(0, (Q − df) / (Σwᵢ − Σwᵢ²/Σwᵢ)) (DerSimonian & Laird 1986, eq. 8), the random-effects mean
μ̂ = Σwᵢ*θ̂ᵢ / Σwᵢ* with wᵢ* = 1/(sᵢ² + τ̂²), SE(μ̂) = (Σwᵢ*)^−½, and the 95 % prediction interval for a new site
μ̂ ± t_{k−2} √(τ̂² + SE(μ̂)²) (Higgins, Thompson & Spiegelhalter 2009, eq. 7; k ≥ 3).

An AUC is pooled on the logit scale, its standard error read off its 95 % interval (Debray et al. 2017, the
TRIPOD-Cluster explanation's recommendation), and the results mapped back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Pooled:
    """A random-effects pooling of k sites' estimates (module docstring)."""

    k: int
    estimate: float
    low: float
    high: float
    tau2: float
    q: float
    df: int
    p_value: float
    i2: float
    pi_low: float | None = None  # the 95 % prediction interval for a new site (k ≥ 3)
    pi_high: float | None = None


def pool(estimates, ses) -> Pooled | None:
    """DerSimonian–Laird random-effects pooling of per-site estimates and standard errors; None without one site
    with a positive, finite standard error. scipy (χ² and t quantiles) is imported here only: a site's export, which
    imports the methods, never needs it."""
    from scipy import stats
    b = np.asarray(estimates, dtype=np.float64)
    s = np.asarray(ses, dtype=np.float64)
    ok = np.isfinite(b) & np.isfinite(s) & (s > 0)
    b, s = b[ok], s[ok]
    k = len(b)
    if k == 0:
        return None
    w = 1.0 / s**2
    mean = float((w * b).sum() / w.sum())
    q = float((w * (b - mean) ** 2).sum())
    df = k - 1
    c = float(w.sum() - (w**2).sum() / w.sum())
    tau2 = max(0.0, (q - df) / c) if df > 0 and c > 0 else 0.0
    ws = 1.0 / (s**2 + tau2)
    mu = float((ws * b).sum() / ws.sum())
    se = float(ws.sum() ** -0.5)
    p = float(stats.chi2.sf(q, df)) if df > 0 else 1.0
    i2 = max(0.0, (q - df) / q) if q > 0 and df > 0 else 0.0
    pi = (None, None)
    if k >= 3:
        half = float(stats.t.ppf(0.975, k - 2)) * math.sqrt(tau2 + se**2)
        pi = (mu - half, mu + half)
    return Pooled(k, mu, mu - Z95 * se, mu + Z95 * se, tau2, q, df, p, i2, *pi)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _expit(x: float | None) -> float | None:
    return None if x is None else 1.0 / (1.0 + math.exp(-x))


def pool_aucs(aucs: list[tuple[float, float, float]]) -> Pooled | None:
    """Sites' AUCs, each (auc, 95 % low, 95 % high), pooled on the logit scale and mapped back (module
    docstring); entries without a usable interval are left out."""
    est, ses = [], []
    for auc, low, high in aucs:
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in (auc, low, high)) or not low < high:
            continue
        est.append(_logit(auc))
        ses.append((_logit(high) - _logit(low)) / (2 * Z95))
    p = pool(est, ses)
    if p is None:
        return None
    return Pooled(p.k, _expit(p.estimate), _expit(p.low), _expit(p.high), p.tau2, p.q, p.df, p.p_value, p.i2,
                  _expit(p.pi_low), _expit(p.pi_high))


def differ_words(i2: float | None, p_value: float | None, df: int | None, what: str) -> str:
    """One sentence on whether ``what`` (e.g. "the coefficients") differ between sites more than chance,
    which never contradicts its figures: "differ" only when the test says so, "no more than chance" when nothing
    of the spread is beyond it."""
    if not df:
        return f"With one site, whether {what} differ between sites cannot be measured."
    share = round(100 * max(0.0, float(i2 or 0.0)))
    p = 1.0 if p_value is None else float(p_value)
    if p < 0.05:
        return (f"{what[:1].upper() + what[1:]} differ between sites more than chance would make them differ: "
                f"{share} % of their spread is beyond chance (a spread this large would arise by chance with "
                f"probability {p:.2g}).")
    if share == 0:
        return (f"{what[:1].upper() + what[1:]} differ between sites no more than chance would make them differ "
                "(none of their spread is beyond chance).")
    return (f"No clear sign that {what} differ between sites beyond chance: {share} % of their spread may be beyond "
            f"chance, but a spread this large would arise by chance with probability {p:.2g}.")


def differ_terms(q: float | None, df: int | None, p_value: float | None, i2: float | None) -> str:
    """The statistician's terms behind :func:`differ_words` (a tooltip, or muted in print)."""
    if not df:
        return "heterogeneity not measurable with one site"
    return (f"Cochran's Q = {float(q or 0):.1f} on {df} degrees of freedom, p = {float(p_value or 1):.3g}; "
            f"Higgins' I² = {100 * float(i2 or 0):.0f} %")
