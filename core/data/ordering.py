"""The order people expect for category names: "2" before "10", "élevé" beside "Eleve", and "LT 8 yrs" before
"8-12 yrs" before "MT 12 yrs"."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_DIGITS = re.compile(r"(\d+)")
_NUMBERS_IN = re.compile(r"\d+(?:[.,]\d+)?")
# "a-b", "a–b", "a to b": a range, placed at its middle
_RANGE = re.compile(r"(\d+(?:[.,]\d+)?)\s*(?:-|–|—|to|bis|à|a)\s*(\d+(?:[.,]\d+)?)", re.IGNORECASE)
# words and signs that put a level just below its number ("LT 8", "< 8", "under 8") or just above it ("MT 12",
# "> 12", "12+", "over 12", "at least 12")
_BELOW = re.compile(r"(?:^|\b)(?:lt|le|less|under|below|before|up\s*to|max|fewer|younger)\b|[<≤]", re.IGNORECASE)
_ABOVE = re.compile(r"(?:^|\b)(?:mt|gt|ge|more|over|above|after|at\s*least|min|older|plus)\b|[>≥+]",
                    re.IGNORECASE)
_STEP = 1e-6  # how far "below 8" sits under 8 (relative), so "LT 8" < "8" < "8-12"


def natural_key(value: str) -> tuple:
    """Sort key: numeric-looking strings first, by value ("2" < "10"); then text, digit runs as numbers."""
    if _NUMBER.match(value):
        return (0, float(value), (), value)
    parts = _DIGITS.split(value)
    key = tuple(int(p) if i % 2 else _fold(p) for i, p in enumerate(parts))
    return (1, 0.0, key, value)


def _fold(text: str) -> str:
    """Case and accents folded ("Élevé" -> "eleve"), so text sorts the way people expect."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def natural_sorted(values: Iterable[str]) -> list[str]:
    """Distinct ``values`` in natural order (see :func:`natural_key`)."""
    return sorted(set(values), key=natural_key)


def number_position(level: str) -> float | None:
    """Where a level written around numbers sits on the number line, or None if it holds no number: a range
    ("8-12 yrs", "8 to 12") at its middle; a bound ("LT 8 yrs", "< 8", "under 8") just below its number, and
    ("MT 12 yrs", "> 12", "12+", "over 12") just above it; a lone number ("8 yrs") at that number."""
    found = _RANGE.search(level)
    if found:
        a, b = (float(g.replace(",", ".")) for g in found.groups())
        return (a + b) / 2
    numbers = _NUMBERS_IN.findall(level)
    if len(numbers) != 1:
        return None
    x = float(numbers[0].replace(",", "."))
    step = _STEP * max(abs(x), 1.0)
    if _BELOW.search(level):
        return x - step
    if _ABOVE.search(level):
        return x + step
    return x


def level_order(values: Iterable[str]) -> list[str]:
    """Distinct levels as people order them: by the numbers they contain when every level holds one and no two
    sit at the same place ("LT 8 yrs" < "8-12 yrs" < "MT 12 yrs", :func:`number_position`); else natural order."""
    distinct = natural_sorted(values)
    where = [number_position(v) for v in distinct]
    if len(distinct) > 1 and all(w is not None for w in where) and len(set(where)) == len(where):
        return [v for _, v in sorted(zip(where, distinct, strict=True))]
    return distinct
