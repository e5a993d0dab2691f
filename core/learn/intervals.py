"""Honest accuracy numbers: a proportion with its row count and a 95 % Wilson score interval.

For k correct out of n, p̂ = k/n and z = 1.96 (Wilson 1927):

    centre = (p̂ + z²/2n) / (1 + z²/n),  half = z·√(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).

The interval stays inside [0, 1] and is sensible for small n and p̂ near 0 or 1, where p̂ ± z·√(p̂(1−p̂)/n)
is not. An estimate is flagged as weak when the interval is wider than ``WEAK_WIDTH`` or n < ``WEAK_ROWS``.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054
WEAK_WIDTH = 0.2
WEAK_ROWS = 30


def wilson(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95 % Wilson interval (low, high) of a proportion p observed on n rows; (0, 1) when n = 0."""
    n = int(n)
    if n <= 0:
        return 0.0, 1.0
    p = min(1.0, max(0.0, float(p)))
    d = 1.0 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def estimate(p: float, n: int) -> dict:
    """``{"accuracy", "rows", "low", "high", "weak"}``: the JSON form every shown accuracy takes."""
    lo, hi = wilson(p, n)
    return {"accuracy": float(p), "rows": int(n), "low": lo, "high": hi,
            "weak": bool(n < WEAK_ROWS or hi - lo > WEAK_WIDTH)}


def describe(e: dict | None, digits: int = 3) -> str:
    """'0.912 (n = 40, 95 % CI 0.787–0.965)' — the one way an accuracy is printed."""
    if not e:
        return "–"
    return (f"{e['accuracy']:.{digits}f} (n = {e['rows']}, 95 % CI {e['low']:.{digits}f}–{e['high']:.{digits}f})")


def mcnemar_p(b: int, c: int, one_sided: bool = False) -> float:
    """McNemar's exact test on paired predictions: b rows only the first model gets right, c only the second.
    Under H₀ (equally good) b ~ Binomial(b + c, ½); one-sided p = P(B ≥ b) = I_½(b, c + 1), the regularised
    incomplete beta function (``scipy.special.betainc``: the value scipy's exact test returns, without its
    checks — the analyst asks it for every site); two-sided: scipy's exact binomial test. Imported here only (a
    site's export never needs scipy)."""
    b, c = int(b), int(c)
    if b + c == 0:
        return 1.0
    if one_sided:
        from scipy.special import betainc

        return 1.0 if b == 0 else float(betainc(b, c + 1, 0.5))
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue)
