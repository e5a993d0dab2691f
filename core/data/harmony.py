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

from dataclasses import dataclass

import numpy as np

from ..parallel import one_blas_thread
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
    or the kit publishes no statistics. The numeric columns' moments come from one pass over blocks of rows
    (:func:`column_moments`), not a pass over the whole matrix per column."""
    out = []
    positions = schema.encoded_positions()
    numeric = [f for f in schema.features if f.type == "numeric"]
    per_class = y is not None and any(f.class_mean is not None and f.class_std is not None for f in numeric)
    stats = column_moments(X, [positions[f.name][0] for f in numeric],
                           [positions[f.name][-1] if f.indicator else -1 for f in numeric],
                           np.asarray(y) if per_class else None, len(schema.classes) if per_class else 1,
                           [(f.min, f.max) for f in numeric]) if numeric else []
    moments = dict(zip((f.name for f in numeric), stats, strict=True))
    for f in schema.features:
        if f.type != "numeric":
            if unseen and unseen.get(f.name):
                reason = _unseen_share(f, X[:, positions[f.name]], unseen[f.name])
                if reason:
                    out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another "
                               "coding? Check it before exporting")
            continue
        c = moments[f.name]
        if c.n < MIN_ROWS or (f.min is not None and f.max is not None and c.coded):
            continue  # too few rows, or only the two values the kit publishes (its 0/1 coding): no unit to be in
        if per_class and f.class_mean is not None and f.class_std is not None:
            reason = _within_class(f, c, schema.classes)
        else:
            reason = _mismatch(f.mean, f.std, f.min, f.max, c)
        if reason:
            out.append(f"column '{f.name}' does not look like the kit's: {reason}; is it in another unit or "
                       "coding? Check it before exporting")
    return out


@dataclass
class ColumnMoments:
    """One numeric column's present values (finite, not filled by this site): their count ``n``, ``mean`` and
    standard deviation ``sd`` (over n); per class, ``counts``, ``means`` and ``m2`` (the sum of squared deviations
    from the class mean); ``outside``, the share beyond the kit's range widened by RANGE_MARGIN (None without a
    range); ``coded``, whether every value is one of the range's two ends (the kit's published 0/1 coding)."""

    n: int
    mean: float
    sd: float
    counts: np.ndarray
    means: np.ndarray
    m2: np.ndarray
    outside: float | None
    coded: bool


def column_moments(X: np.ndarray, columns: list[int], indicators: list[int], y: np.ndarray | None, classes: int,
                   ranges: list[tuple[float | None, float | None]], block: int = 16384) -> list[ColumnMoments]:
    """:class:`ColumnMoments` of the matrix columns ``columns`` (``indicators``: each one's "was missing" column, or
    −1), per class of ``y`` (``classes`` of them; all rows one class when None), in one pass over row blocks. Each
    column is shifted by a reference r (its mean in the first block), so the class sums of x − r and (x − r)² give
    the class means and M2_c = Σ(x − r)² − n_c (x̄_c − r)² without cancellation; the whole column's moments pool
    the classes' (Chan, Golub & LeVeque): M2 = Σ_c (M2_c + n_c (x̄_c − x̄)²)."""
    with one_blas_thread():  # products of a few classes by a block: threads would only spin
        return _column_moments(X, columns, indicators, y, classes, ranges, block)


def _column_moments(X, columns, indicators, y, classes, ranges, block) -> list[ColumnMoments]:
    n_rows, p = X.shape[0], len(columns)
    cols, ind = np.asarray(columns, np.intp), np.asarray(indicators, np.intp)
    whole = p == X.shape[1] and bool(np.all(cols == np.arange(p)))  # every matrix column, in order: no copy
    filled = np.flatnonzero(ind >= 0)
    lo = np.array([np.nan if a is None or b is None or not b > a else a for a, b in ranges], np.float64)
    hi = np.array([np.nan if a is None or b is None or not b > a else b for a, b in ranges], np.float64)
    ends = np.array([a is not None and b is not None for a, b in ranges])
    end_lo = np.array([a if e else 0.0 for (a, _), e in zip(ranges, ends, strict=True)], np.float64)
    end_hi = np.array([b if e else 0.0 for (_, b), e in zip(ranges, ends, strict=True)], np.float64)
    ranged = np.flatnonzero(np.isfinite(lo))
    low, high = (lo - RANGE_MARGIN * (hi - lo))[ranged], (hi + RANGE_MARGIN * (hi - lo))[ranged]
    one_hot = np.eye(classes)
    counts, sums, squares = np.zeros((classes, p)), np.zeros((classes, p)), np.zeros((classes, p))
    outside, coded = np.zeros(p), ends.copy()
    shift = None
    for start in range(0, n_rows, block):
        rows = X[start:start + block]
        B = np.asarray(rows if whole else rows[:, cols], np.float64)
        keep = np.isfinite(B)
        if len(filled):
            keep[:, filled] &= rows[:, ind[filled]] == 0
        every = bool(keep.all())
        if shift is None:
            shift = np.nan_to_num(np.where(keep, B, 0.0).sum(axis=0) / np.maximum(keep.sum(axis=0), 1))
        H = one_hot[np.zeros(len(B), np.intp) if y is None else y[start:start + block]]
        D = B - shift
        if not every:
            D[~keep] = 0.0
        counts += H.sum(axis=0)[:, None] if every else H.T @ keep.astype(np.float64)
        sums += H.T @ D
        squares += H.T @ (D * D)
        if len(ranged):
            R = B[:, ranged]
            beyond = (R < low) | (R > high)
            outside[ranged] += (beyond if every else beyond & keep[:, ranged]).sum(axis=0)
        if coded.any():
            coded &= ((B == end_lo) | (B == end_hi) | ~keep).all(axis=0)
    shift = np.zeros(p) if shift is None else shift
    offsets = sums / np.where(counts > 0, counts, 1.0)  # x̄_c − r
    means = shift + offsets
    m2 = np.maximum(squares - counts * offsets ** 2, 0.0)
    out = []
    for j in range(p):
        n = int(counts[:, j].sum())
        mean = float(shift[j] + sums[:, j].sum() / n) if n else 0.0
        total = float((m2[:, j] + counts[:, j] * (means[:, j] - mean) ** 2).sum())
        share = float(outside[j] / n) if np.isfinite(lo[j]) and n else None
        out.append(ColumnMoments(n, mean, float(np.sqrt(total / n)) if n else 0.0, counts[:, j], means[:, j],
                                 m2[:, j], share, bool(coded[j])))
    return out


def _within_class(f, c: ColumnMoments, classes: list[str]) -> str | None:
    """The module's within-class rule for one column: its shift against the kit's sample re-weighted to this site's
    classes; then the kit's range, when published."""
    known = np.array([m is not None and sd is not None for m, sd in zip(f.class_mean, f.class_std, strict=True)])
    k = len(known)
    counts = np.where(known, c.counts[:k], 0.0)
    here = int(counts.sum())
    if here < MIN_ROWS:  # this site's classes are ones the kit's sample holds too few rows of
        return _mismatch(None, None, f.min, f.max, c)
    shares = counts / here
    mu_c = np.array([0.0 if m is None else m for m in f.class_mean])
    sd_c = np.array([0.0 if sd is None else sd for sd in f.class_std])
    mu = float(shares @ mu_c)
    sigma = float(np.sqrt(max(float(shares @ (sd_c ** 2 + (mu_c - mu) ** 2)), 0.0)))
    mean = float(counts @ c.means[:k] / here)
    spread = float(np.sum(np.where(known, c.m2[:k] + c.counts[:k] * (c.means[:k] - mean) ** 2, 0.0)))
    noise = NOISE_LIMIT * float(np.sqrt(spread / (here - 1))) / np.sqrt(here)  # what this site's own rows could do
    if sigma > 0 and abs(mean - mu) / sigma >= SHIFT_LIMIT and abs(mean - mu) >= noise:
        held = ", ".join(f"{c} {p:.0%}" for c, p in zip(classes, shares, strict=False) if p > 0)
        return (f"here mean {mean:.4g} over {here:,} rows, the kit's sample has mean {mu:.4g} and spread "
                f"{sigma:.4g} weighted to this site's classes ({held})")
    return _mismatch(None, None, f.min, f.max, c)


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
              c: ColumnMoments) -> str | None:
    here = f"here mean {c.mean:.4g} and spread {c.sd:.4g} over {c.n:,} rows"
    if mu is not None and sigma is not None and sigma > 0:
        kit = f"the kit's sample has mean {mu:.4g} and spread {sigma:.4g}" + (
            f" (range {lo:.4g} to {hi:.4g})" if lo is not None and hi is not None else "")
        shift, spread = abs(c.mean - mu) / sigma, c.sd / sigma
        if shift >= SHIFT_LIMIT or (c.n >= MIN_ROWS_SPREAD and spread >= SPREAD_LIMIT):
            return f"{here}, {kit}"
    if c.outside is not None and c.outside >= OUTSIDE_LIMIT:
        return f"{c.outside:.0%} of its {c.n:,} values lie outside the kit's range {lo:.4g} to {hi:.4g}"
    return None
