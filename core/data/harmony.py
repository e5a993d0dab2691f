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

names the column with what was expected. Measured on the clinical tables' 17 natural sites against a kit made
from a pooled sample (``python -m benchmarks units``, docs/results/units/): no false alarm; every site caught
when its numeric columns are given as x·2.54 + 10, and 73 of 77 single columns so converted (the misses: a
column constant in the sample, and one near-zero column at a 45-row site). A level a kit does not know (1/2
where the kit codes 0/1) is refused when the CSV is read.
"""

from __future__ import annotations

import numpy as np

from .schema import Schema

SHIFT_LIMIT = 1.5
SPREAD_LIMIT = 2.0
OUTSIDE_LIMIT = 0.2
RANGE_MARGIN = 0.05
MIN_ROWS = 10
MIN_ROWS_SPREAD = 20


def unit_warnings(schema: Schema, X: np.ndarray) -> list[str]:
    """One sentence per numeric column of the encoded matrix ``X`` that does not look like the kit's sample
    (see the module's rule); empty when every column fits or the kit publishes no statistics."""
    out = []
    positions = schema.encoded_positions()
    numeric = [f for f in schema.features if f.type == "numeric"]
    if not numeric:
        return out
    cols = [positions[f.name][0] for f in numeric]
    filled = [positions[f.name][-1] if f.indicator else -1 for f in numeric]
    lo = np.array([np.nan if f.min is None else f.min for f in numeric], np.float64)
    hi = np.array([np.nan if f.max is None else f.max for f in numeric], np.float64)
    pad = RANGE_MARGIN * (hi - lo)
    count, mean, sd, outside = _column_stats(np.asarray(X), cols, filled, lo - pad, hi + pad)
    for j, f in enumerate(numeric):
        if count[j] < MIN_ROWS:
            continue
        reason = _mismatch(f.mean, f.std, f.min, f.max, int(count[j]), float(mean[j]), float(sd[j]),
                           float(outside[j]))
        if reason:
            out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another unit or "
                       "coding? Check it before exporting")
    return out


def _column_stats(X: np.ndarray, cols: list[int], filled: list[int], low: np.ndarray, high: np.ndarray,
                  block: int = 16384) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``cols``, over its finite cells not filled by this site (``filled``: the column's indicator
    column, or −1): (count n, mean, sd = √(Σ(x − x̄)²/n), share outside [low, high]) in one pass over blocks of rows
    (a column-wise pass over a large row-major matrix reads all of it once per column), the blocks' means and sums
    of squared deviations pooled as Chan, Golub & LeVeque do."""
    c = len(cols)
    count, mean, m2, out_count = np.zeros(c), np.zeros(c), np.zeros(c), np.zeros(c)
    has_filled = np.array([f >= 0 for f in filled])
    ind = [f if f >= 0 else cols[0] for f in filled]
    every = cols == list(range(X.shape[1]))  # all the matrix's columns: a block is a view, not a copy
    ranged = np.flatnonzero(np.isfinite(low) & np.isfinite(high))
    for start in range(0, X.shape[0], block):
        rows = X[start:start + block]
        B = np.asarray(rows if every else rows[:, cols], np.float64)
        keep = np.isfinite(B)
        if has_filled.any():
            keep &= ~has_filled | (np.asarray(rows[:, ind]) == 0)
        if keep.all():  # the usual block: no cell to leave out
            k = np.full(c, float(len(B)))
            b_mean = B.mean(axis=0)
            b_m2 = ((B - b_mean) ** 2).sum(axis=0)
            R = B[:, ranged]
            out_count[ranged] += ((R < low[ranged]) | (R > high[ranged])).sum(axis=0)
        else:
            k = keep.sum(axis=0).astype(np.float64)
            b_mean = np.where(keep, B, 0.0).sum(axis=0) / np.maximum(k, 1)
            b_m2 = (np.where(keep, B - b_mean, 0.0) ** 2).sum(axis=0)
            with np.errstate(invalid="ignore"):
                out_count += (keep & ((B < low) | (B > high))).sum(axis=0)
        total = count + k
        delta = b_mean - mean
        share = np.divide(k, total, out=np.zeros(c), where=total > 0)
        mean = mean + delta * share
        m2 = m2 + b_m2 + delta ** 2 * count * share
        count = total
    safe = np.maximum(count, 1)
    return count, mean, np.sqrt(m2 / safe), out_count / safe


def _mismatch(mu: float | None, sigma: float | None, lo: float | None, hi: float | None, n: int, mean: float,
              sd: float, outside: float) -> str | None:
    here = f"here mean {mean:.4g} and spread {sd:.4g} over {n:,} rows"
    if mu is not None and sigma is not None and sigma > 0:
        kit = f"the kit's sample has mean {mu:.4g} and spread {sigma:.4g}" + (
            f" (range {lo:.4g} to {hi:.4g})" if lo is not None and hi is not None else "")
        shift, spread = abs(mean - mu) / sigma, sd / sigma
        if shift >= SHIFT_LIMIT or (n >= MIN_ROWS_SPREAD and spread >= SPREAD_LIMIT):
            return f"{here}, {kit}"
    if lo is not None and hi is not None and hi > lo:
        if outside >= OUTSIDE_LIMIT:
            return f"{outside:.0%} of its {n:,} values lie outside the kit's range {lo:.4g} to {hi:.4g}"
    return None
