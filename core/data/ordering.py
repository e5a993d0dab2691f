"""The order people expect for category names: "2" before "10", "élevé" beside "Eleve"."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_DIGITS = re.compile(r"(\d+)")


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
