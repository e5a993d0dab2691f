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

**Label skew is not a unit.** A unit change (x → a·x + b) moves every class's values alike; a site that holds
another mix of the classes (DC-CFL's own setting: one site holds mostly deaths, another mostly survivors) only
re-weights the classes. So where the site reads its labels and the kit publishes the sample's per-class means
μ_c and standard deviations σ_c (``class_mean``/``class_std``), the comparison is made within class: μ and σ
above are those of the kit's sample re-weighted to this site's class shares π_c,

    μ = Σ_c π_c μ_c,    σ² = Σ_c π_c (σ_c² + (μ_c − μ)²),

and only the shift and range tests apply, the shift only when it is also at least 3 standard errors s/√n of
this site's own mean (one extreme row of a heavy-tailed column moves a small site's mean; a unit moves every
row). A spread compared with a class's σ_c from a few sample rows alarms on every heavy-tailed column
(measured: the spread test flagged 37 % of DC-CFL's gesture clients with their own data), so it is not made.
The rows of a class the kit publishes nothing for (fewer than its ``min_group``, 10, sample rows) are left out;
a site with fewer than 10 rows left has only the range test. A column whose values here are the kit sample's two
values only (its published 0/1 coding) has no unit to be in, with or without labels. Measured on the DC-CFL benchmark's
label-skewed clients and on the clinical tables (``python -m benchmarks units``, docs/results/units/): 0 of
2,700 DC-CFL clients flagged class by class (603 on the whole sample), 2,697 of 2,700 caught when every column is
x·2.54 + 10; on the clinical tables 0 false alarms and 17 of 17 converted sites caught.

**Coding.** A column with levels sends a value the kit does not know to its unseen bucket
(:mod:`core.data.encoding`); when such values are :data:`UNSEEN_LIMIT` of a column's values or more (1/2 where
the kit codes 0/1, "Male" where it has "M"), the column is named the same way.
"""

from __future__ import annotations

import numpy as np

from .missing import looks_missing, missing_token_hint
from .schema import Schema

SHIFT_LIMIT = 1.5
SPREAD_LIMIT = 2.0
OUTSIDE_LIMIT = 0.2
RANGE_MARGIN = 0.05
MIN_ROWS = 10
MIN_ROWS_SPREAD = 20
UNSEEN_LIMIT = 0.1
NOISE_LIMIT = 3.0  # within class, a shift must also be this many standard errors of the site's own mean


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
        if values.size < MIN_ROWS or _coded_as_published(f, values):
            continue
        if y is not None and f.class_mean is not None and f.class_std is not None:
            reason = _within_class(f, values, np.asarray(y)[keep], schema.classes)
        else:
            reason = _mismatch(f.mean, f.std, f.min, f.max, values)
        if reason:
            out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another unit or "
                       "coding? Check it before exporting")
    return out


def _within_class(f, values: np.ndarray, y: np.ndarray, classes: list[str]) -> str | None:
    """The module's within-class rule for one column: its shift against the kit's sample re-weighted to this site's
    classes; then the kit's range, when published."""
    known = np.array([m is not None and sd is not None for m, sd in zip(f.class_mean, f.class_std, strict=True)])
    keep = known[y]
    if keep.sum() < MIN_ROWS:  # this site's classes are ones the kit's sample holds too few rows of
        return _mismatch(None, None, f.min, f.max, values)
    here, y = values[keep], y[keep]
    k = len(known)
    shares = np.bincount(y, minlength=k)[:k] / keep.sum()
    mu_c = np.array([0.0 if m is None else m for m in f.class_mean])
    sd_c = np.array([0.0 if sd is None else sd for sd in f.class_std])
    mu = float(shares @ mu_c)
    sigma = float(np.sqrt(max(float(shares @ (sd_c ** 2 + (mu_c - mu) ** 2)), 0.0)))
    mean = float(here.mean())
    noise = NOISE_LIMIT * float(here.std(ddof=1)) / np.sqrt(here.size)  # what this site's own few rows could do
    if sigma > 0 and abs(mean - mu) / sigma >= SHIFT_LIMIT and abs(mean - mu) >= noise:
        held = ", ".join(f"{c} {p:.0%}" for c, p in zip(classes, shares, strict=False) if p > 0)
        return (f"here mean {mean:.4g} over {here.size:,} rows, the kit's sample has mean {mu:.4g} and spread "
                f"{sigma:.4g} weighted to this site's classes ({held})")
    return _mismatch(None, None, f.min, f.max, values)


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


def _coded_as_published(f, values: np.ndarray) -> bool:
    """Whether this site's values are only the two ends of the kit's published range (a column the kit's sample
    holds two numbers of publishes them so: its 0/1 or 1/2 coding): such a column has no unit to be in."""
    if f.min is None or f.max is None:
        return False
    return bool(np.isin(np.unique(values), [f.min, f.max]).all())


def _mismatch(mu: float | None, sigma: float | None, lo: float | None, hi: float | None,
              values: np.ndarray) -> str | None:
    mean, sd = float(values.mean()), float(values.std())
    here = f"here mean {mean:.4g} and spread {sd:.4g} over {values.size:,} rows"
    if mu is not None and sigma is not None and sigma > 0:
        kit = f"the kit's sample has mean {mu:.4g} and spread {sigma:.4g}" + (
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
