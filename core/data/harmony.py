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
    for f in schema.features:
        if f.type != "numeric":
            continue
        at = positions[f.name]
        values = np.asarray(X[:, at[0]], np.float64)
        if f.indicator:  # leave out the cells this site filled with its own median
            values = values[np.asarray(X[:, at[-1]]) == 0]
        values = values[np.isfinite(values)]
        if values.size < MIN_ROWS:
            continue
        reason = _mismatch(f.mean, f.std, f.min, f.max, values)
        if reason:
            out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another unit or "
                       "coding? Check it before exporting")
    return out


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
