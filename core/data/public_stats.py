"""The kit's public statistics: what a kit may publish of its sample, and the public values a formal export uses.

**Safe to publish** (issue #35; the usual rules of statistical offices): a kit's statistics come from real rows
(the analyst's sample), so
* a level's share (and a column's missing share) is published over rounded counts: each count is rounded to a
  multiple of ``min_group`` rows (default :data:`MIN_GROUP` = 10), a count of 1…min_group − 1 to min_group
  itself (:func:`rounded_shares`), so no published share stands for fewer than ``min_group`` rows and a group
  of 3 patients in 600 (0.005) reads as 10 in 600 (0.0167) — the same as any group of 1 to 14;
* a column's range is never the exact minimum or maximum of a real row: it is rounded outward to a grid of step
  1, 2 or 5 × 10^k of at least 5 % of the width (:func:`rounded_range`);
* means and spreads (aggregates over every row) are published only over at least ``min_group`` rows.

**Public values of a formal export** (never from the site's own rows, whose median would make one row's image
depend on the others): empty cells take the kit's published values by the one missing-value rule
(:func:`core.data.missing.public_fills`); :func:`formal_scales` are the kit's public spreads with a 0/1 column's share
kept within [0.05, 0.95] (a level the sample never had, or an ``other`` column, has no spread to divide by, and
must not block the option: the clipping bounds every row whatever the scale, so the scale changes the utility,
never the guarantee).
"""

from __future__ import annotations

import math

import numpy as np

MIN_GROUP = 10
SHARE_FLOOR = 0.05  # a 0/1 column's share kept within [0.05, 0.95] for the formal option's standardising


def rounded_counts(counts, min_group: int = MIN_GROUP) -> np.ndarray:
    """Each count rounded to a multiple of ``min_group``; a count of 1…min_group − 1 becomes min_group; 0 stays 0."""
    c = np.asarray(counts, dtype=np.float64)
    k = float(max(int(min_group), 1))
    out = np.round(c / k) * k
    return np.where(c > 0, np.maximum(out, k), 0.0)


def rounded_shares(counts, min_group: int = MIN_GROUP) -> list[float]:
    """Shares over :func:`rounded_counts` (they add up to 1)."""
    r = rounded_counts(counts, min_group)
    total = r.sum()
    return [float(v / total) for v in r] if total > 0 else [0.0 for _ in r]


def rounded_share(part: int, total: int, min_group: int = MIN_GROUP) -> float:
    """The share part/total over rounded counts of the part and the rest."""
    return rounded_shares([total - part, part], min_group)[1]


def nice_step(width: float) -> float:
    """The smallest 1, 2 or 5 × 10^k that is at least 5 % of ``width`` (1 for a zero width)."""
    if not width > 0:
        return 1.0
    target = 0.05 * width
    k = math.floor(math.log10(target))
    for m in (1, 2, 5, 10):
        if m * 10 ** k >= target:
            return float(m * 10 ** k)
    return float(10 ** (k + 1))


def rounded_range(lo: float, hi: float) -> tuple[float, float]:
    """(lo′, hi′) rounded outward to the grid of :func:`nice_step`: lo′ ≤ lo, hi′ ≥ hi, hi′ > lo′."""
    step = nice_step(hi - lo if hi > lo else max(abs(lo), 1.0))
    low, high = math.floor(lo / step) * step, math.ceil(hi / step) * step
    if high <= low:
        high = low + step
    return float(low), float(high)


def formal_scales(schema) -> np.ndarray | None:
    """The kit's public spread of every matrix column for the formal option's standardising (module doc); None
    when a numeric column publishes no positive spread or a typed column no shares."""
    def bernoulli(p: float | None) -> float | None:
        if p is None:
            return None
        p = min(max(float(p), SHARE_FLOOR), 1 - SHARE_FLOOR)
        return math.sqrt(p * (1 - p))

    floor = bernoulli(SHARE_FLOOR)
    out: list[float | None] = []
    for f in schema.features:
        shares = None if f.frequencies is None else np.asarray(f.frequencies, np.float64)
        if f.type == "numeric":
            out.append(f.std if f.std is not None and f.std > 0 else None)
        elif shares is None:
            return None
        elif f.type == "binary":
            out.append(bernoulli(float(shares[1])))
        elif f.type == "categorical":
            out += [bernoulli(float(p)) for p in shares] + ([floor] if f.other else [])
        else:  # ordinal: the rank's spread under the shares, at least a 0/1 column's floor
            ranks = np.arange(len(shares))
            mean = float(shares @ ranks)
            out += [max(float(np.sqrt(shares @ (ranks - mean) ** 2)), floor)] + ([floor] if f.other else [])
        if f.indicator:
            out.append(bernoulli(0.0 if f.missing_share is None else f.missing_share))
    if any(v is None or not np.isfinite(v) or v <= 0 for v in out):
        return None
    return np.asarray(out, dtype=np.float64)
