"""Units and coding: does a site's column look like the kit's, before anything leaves the site?

A site whose heights are in inches where the kit's sample is in centimetres, or whose lab values are in
µmol/L where the kit's are in mg/dL, produces a bundle that the analyst cannot tell from a site with
different patients. So each numeric column is compared, at the site, with the sample statistics the kit
publishes (:class:`core.data.schema.FeatureColumn`: ``mean``, ``std``, ``min``, ``max``). With the site's own
mean x̄ and standard deviation s over its n present values, and the kit's μ, σ and range [lo, hi]:

- shift  z = |x̄ − μ| / σ ≥ 1.5         (the site's centre is 1.5 of the kit's spreads away), or
- spread r = s / σ ≥ 2                 (n ≥ 20; a unit change multiplies the spread; a site narrower than the
                                         kit's sample is a subgroup, not a unit, unless its centre moved too), or
- share of values outside [lo − 5 %, hi + 5 %] of the range ≥ 20 %

names the column with what was expected.

**Label skew is not a unit.** A unit change (x → a·x + b) moves every quantile of every class alike; a site that
holds another mix of the classes (DC-CFL's own setting: one site holds mostly deaths, another mostly survivors)
only re-weights the classes. So where the site reads its labels and the kit publishes the sample's per-class
means μ_c and spreads σ_c (``class_mean``/``class_std``), μ and σ above are those of the kit's sample re-weighted
to this site's class shares π_c — the comparison is made within class:

    μ = Σ_c π_c μ_c,    σ² = Σ_c π_c (σ_c² + (μ_c − μ)²)

(a class the kit publishes nothing for stands in with the whole sample's μ and σ). Measured on the DC-CFL
benchmark's label-skewed clients and on the clinical tables (``python -m benchmarks units``, docs/results/units/).

**Coding.** A column with levels sends a value the kit does not know to its unseen bucket
(:mod:`core.data.encoding`); when such values are :data:`UNSEEN_LIMIT` of a column's values or more (1/2 where
the kit codes 0/1, "Male" where it has "M"), the column is named the same way.
"""

from __future__ import annotations

import numpy as np

from .encoding import looks_missing, missing_token_hint
from .schema import Schema

SHIFT_LIMIT = 1.5
SPREAD_LIMIT = 2.0
OUTSIDE_LIMIT = 0.2
RANGE_MARGIN = 0.05
MIN_ROWS = 10
MIN_ROWS_SPREAD = 20
UNSEEN_LIMIT = 0.1


def unit_warnings(schema: Schema, X: np.ndarray, y: np.ndarray | None = None,
                  unseen: dict[str, dict[str, int]] | None = None) -> list[str]:
    """One sentence per column of the encoded matrix ``X`` that does not look like the kit's sample (see the
    module's rule): numeric columns by their centre, spread and range (within class when ``y``, the rows' class
    indices, is given and the kit publishes per-class statistics), columns with levels by the share of their values
    the kit does not know (``unseen``: :attr:`core.data.tabular.LocalTable.unseen`). Empty when every column fits
    or the kit publishes no statistics."""
    out = []
    positions = schema.encoded_positions()
    for f in schema.features:
        if f.type != "numeric":
            if unseen and unseen.get(f.name):
                reason = _unseen_share(f, X[:, positions[f.name]], unseen[f.name])
                if reason:
                    out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another "
                               "coding? Check it before exporting")
            continue
        at = positions[f.name]
        values = np.asarray(X[:, at[0]], np.float64)
        keep = np.isfinite(values)
        if f.indicator:  # leave out the cells this site filled with its own median
            keep &= np.asarray(X[:, at[-1]]) == 0
        values = values[keep]
        if values.size < MIN_ROWS:
            continue
        mu, sigma, mix = f.mean, f.std, ""
        if y is not None and f.class_mean is not None and f.class_std is not None and f.mean is not None \
                and f.std is not None:
            mu, sigma, mix = _class_mixture(f, np.asarray(y)[keep], schema.classes)
        reason = _mismatch(mu, sigma, f.min, f.max, values, mix)
        if reason:
            out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another unit or "
                       "coding? Check it before exporting")
    return out


def _class_mixture(f, y: np.ndarray, classes: list[str]) -> tuple[float, float, str]:
    """The kit's sample re-weighted to this site's class shares: (μ, σ, a few words saying so)."""
    k = len(f.class_mean)
    shares = np.bincount(np.asarray(y, np.int64), minlength=k)[:k].astype(np.float64)
    shares /= max(shares.sum(), 1.0)
    means = np.array([f.mean if m is None else m for m in f.class_mean], np.float64)
    stds = np.array([f.std if m is None or s is None else s for m, s in zip(f.class_mean, f.class_std, strict=True)],
                    np.float64)
    mu = float(shares @ means)
    sigma = float(np.sqrt(max(shares @ (stds ** 2 + (means - mu) ** 2), 0.0)))
    held = ", ".join(f"{c} {p:.0%}" for c, p in zip(classes, shares, strict=False) if p > 0)
    return mu, sigma, f" weighted to this site's classes ({held})"


def _unseen_share(f, cols: np.ndarray, seen: dict[str, int]) -> str | None:
    rows = sum(seen.values())
    total = len(cols)
    if total < MIN_ROWS or rows < UNSEEN_LIMIT * total:
        return None
    shown = ", ".join(f"'{v}'" for v in list(seen)[:3])
    out = (f"{rows:,} of its {total:,} rows hold values the kit does not know (e.g. {shown}; its levels are "
           f"{f.levels_text})")
    codes = [v for v in seen if looks_missing(v)]
    return out + (f"; {missing_token_hint(codes[0])}" if codes else "")


def _mismatch(mu: float | None, sigma: float | None, lo: float | None, hi: float | None,
              values: np.ndarray, mix: str = "") -> str | None:
    mean, sd = float(values.mean()), float(values.std())
    here = f"here mean {mean:.4g} and spread {sd:.4g} over {values.size:,} rows"
    if mu is not None and sigma is not None and sigma > 0:
        kit = f"the kit's sample has mean {mu:.4g} and spread {sigma:.4g}{mix}" + (
            f" (range {lo:.4g} to {hi:.4g})" if lo is not None and hi is not None else "")
        shift, spread = abs(mean - mu) / sigma, sd / sigma
        if shift >= SHIFT_LIMIT or (values.size >= MIN_ROWS_SPREAD and spread >= SPREAD_LIMIT):
            return f"{here}, {kit}"
    if lo is not None and hi is not None and hi > lo:
        pad = RANGE_MARGIN * (hi - lo)
        outside = float(np.mean((values < lo - pad) | (values > hi + pad)))
        if outside >= OUTSIDE_LIMIT:
            return f"{outside:.0%} of its {values.size:,} values lie outside the kit's range {lo:.4g} to {hi:.4g}"
    return None
