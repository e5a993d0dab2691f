"""The kit's encoding: a site's raw column values → the matrix every method sees, identically at every site.

For each feature column of the schema, in kit order (:attr:`core.data.schema.Schema.encoded_names`):

- numeric: the value itself;
- binary: 0 for the reference level (the first), 1 for the other;
- categorical: one-hot over every kit level in kit order, plus an ``other`` column when the kit has one;
- ordinal: the level's rank 0..L-1 (low to high); with ``other``, an unknown value takes the middle rank
  (L-1)/2 and a 0/1 ``other`` column marks it;
- then, when the column's ``indicator`` is set, 1 on the rows whose cell was missing (and filled).

Missing cells are filled before encoding, per column, with the site's own fill value
(:func:`fill_value`: the median of its numbers, or its most frequent level), unless given one (``apply``
reuses the export's). A level is matched after stripping surrounding spaces; a numeric-looking cell also
matches a numeric-looking level of equal value ("1.0" is level "1"). A raw value the kit merges into a level
(``FeatureColumn.merged``) is matched the same way and read as that level ("Lev+5FU" is level "treated").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..errors import DataError


class FeatureColumn(Protocol):
    """What the encoding needs of a kit column (:class:`core.data.schema.FeatureColumn`; the schema module
    imports the reader, which imports this module, so the encoding names only the shape it uses)."""

    name: str
    type: str
    levels: list[str] | None
    other: bool
    indicator: bool
    missing: str
    min: float | None
    max: float | None
    std: float | None
    frequencies: list[float] | None
    missing_share: float | None

    @property
    def typed(self) -> bool: ...

    @property
    def known_levels(self) -> list[str]: ...


class Schema(Protocol):
    """What the encoding needs of the kit's schema (:class:`core.data.schema.Schema`)."""

    features: list[FeatureColumn]

    @property
    def width(self) -> int: ...

    def encoded_positions(self) -> dict[str, list[int]]: ...

MISSING = -1  # level code of a missing cell
UNKNOWN = -2  # level code of a value the kit does not know (and the column has no ``other`` level)
_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")


@dataclass(frozen=True)
class _PlainLevels:
    """The part of a column a :class:`LevelCoder` reads, for a list of levels alone."""

    levels: list[str]
    merged: None = None
    other: bool = False


class LevelCoder:
    """Maps a typed column's raw cells to level codes: 0..L-1 for the kit's levels (a level's merged raw values
    take its code), L for "other" (when the column has it), :data:`MISSING` for an empty cell or a missing-value
    marker, :data:`UNKNOWN` otherwise."""

    @classmethod
    def of_levels(cls, levels: list[str], tokens: Iterable[str]) -> LevelCoder:
        """A coder for plain levels (no merges, no "other"): e.g. the label column read against the kit's classes."""
        return cls(_PlainLevels(list(levels)), tokens)

    def __init__(self, column: FeatureColumn, tokens: Iterable[str]):
        self.column = column
        self.tokens = frozenset(tokens)
        levels = list(column.levels or [])
        code_of = {lv: i for i, lv in enumerate(levels)}
        spellings = [(lv, i) for i, lv in enumerate(levels)]
        spellings += [(v, code_of[lv]) for lv, raw in (column.merged or {}).items() if lv in code_of for v in raw]
        self.index = {text: i for text, i in reversed(spellings)}  # a level's own name first
        by_value: dict[float, set[int]] = {}
        for text, i in spellings:
            if _NUMBER.match(text):
                by_value.setdefault(float(text), set()).add(i)
        self.by_value = {v: next(iter(idx)) for v, idx in by_value.items() if len(idx) == 1}
        # whether every level is a distinct number (e.g. a 0/1 column)
        self.numeric_levels = bool(levels) and all(_NUMBER.match(lv) for lv in levels) \
            and len({float(lv) for lv in levels}) == len(levels)
        self.unknown_code = len(levels) if column.other else UNKNOWN
        self._cache: dict[Any, int] = {}

    def code(self, value: Any) -> int:
        """The level code of one raw cell (a str, or anything else for an absent cell)."""
        hit = self._cache.get(value)
        if hit is not None:
            return hit
        s = value.strip() if isinstance(value, str) else ""
        if not s or s in self.tokens:
            code = MISSING
        elif s in self.index:
            code = self.index[s]
        elif _NUMBER.match(s) and float(s) in self.by_value:
            code = self.by_value[float(s)]
        else:
            code = self.unknown_code
        self._cache[value] = code
        return code

    def codes(self, raw: pd.Series | np.ndarray | list) -> np.ndarray:
        """int64 level codes of a column of raw cells (each distinct cell looked up once)."""
        codes, uniques = pd.factorize(pd.Series(raw, dtype=object), use_na_sentinel=True)
        lut = np.empty(len(uniques) + 1, dtype=np.int64)
        lut[-1] = MISSING
        for k, u in enumerate(uniques):
            lut[k] = self.code(u)
        return lut[codes]


def fill_value(column: FeatureColumn, values: np.ndarray) -> float | str:
    """What fills this site's missing cells: the median of its numbers (numeric column), else its most frequent
    level (ties go to the earlier kit level; "other" counts as a level). DataError if it has no value at all."""
    if column.typed:
        codes = values[values >= 0]
        if codes.size == 0:
            raise DataError(f"column '{column.name}' has no values at all, so its missing cells cannot be filled")
        counts = np.bincount(codes, minlength=len(column.known_levels))
        return column.known_levels[int(np.argmax(counts))]
    present = values[~np.isnan(values)]
    if present.size == 0:
        raise DataError(f"column '{column.name}' has no values at all, so its missing cells cannot be filled")
    return float(np.median(present))


def fill_code(column: FeatureColumn, value: float | str) -> float | int:
    """A fill value as the column holds it: a finite number, or the level's code. DataError if it does not fit."""
    if column.typed:
        if not isinstance(value, str) or value not in column.known_levels:
            raise DataError(f"the fill value {value!r} of column '{column.name}' is not one of its levels")
        return column.known_levels.index(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise DataError(f"the fill value {value!r} of column '{column.name}' is not a finite number")
    return float(value)


def encode(schema: Schema, columns: list[np.ndarray], missing: list[np.ndarray | None]) -> np.ndarray:
    """The encoded matrix (n, schema.width) from filled raw columns, one per feature in kit order.

    ``columns[j]``: float64 values (numeric) or int64 level codes 0..len(known_levels)-1 (typed), no missing
    cell left; ``missing[j]``: the rows that were filled (needed only when the column has an indicator).
    """
    n = len(columns[0]) if columns else 0
    X = np.empty((n, schema.width), dtype=np.float64)
    at = 0
    for f, values, was_missing in zip(schema.features, columns, missing, strict=True):
        if f.type == "numeric":
            X[:, at] = values
            at += 1
        elif f.type == "binary":
            X[:, at] = values
            at += 1
        elif f.type == "categorical":
            k = len(f.known_levels)
            X[:, at:at + k] = 0.0
            X[np.arange(n), at + values] = 1.0
            at += k
        else:  # ordinal
            L = len(f.levels or [])
            if f.other:
                is_other = values == L
                X[:, at] = np.where(is_other, (L - 1) / 2, values)
                X[:, at + 1] = is_other
                at += 2
            else:
                X[:, at] = values
                at += 1
        if f.indicator:
            X[:, at] = 0.0 if was_missing is None else was_missing
            at += 1
    return X


def encoded_ranges(schema: Schema) -> tuple[np.ndarray, np.ndarray] | None:
    """Public (low, high) of every matrix column: a numeric column's kit range, [0, 1] for 0/1 columns,
    [0, L-1] for an ordinal rank; None when a numeric column has no published range."""
    lo: list[float] = []
    hi: list[float] = []
    for f in schema.features:
        if f.type == "numeric":
            if f.min is None or f.max is None:
                return None
            lo.append(f.min)
            hi.append(f.max)
        elif f.type == "ordinal":
            lo.append(0.0)
            hi.append(float(len(f.levels or []) - 1))
            if f.other:
                lo.append(0.0)
                hi.append(1.0)
        else:
            k = 1 if f.type == "binary" else len(f.known_levels)
            lo += [0.0] * k
            hi += [1.0] * k
        if f.indicator:
            lo.append(0.0)
            hi.append(1.0)
    return np.array(lo), np.array(hi)


def encoded_scales(schema: Schema) -> np.ndarray | None:
    """The kit's public standard deviation of every matrix column: a numeric column's published ``std``; a 0/1
    column's √(p(1 − p)) from the published level or missing share p; an ordinal rank's standard deviation
    under the published level shares. None when the kit does not publish what one column needs (or it is 0)."""
    out: list[float] = []

    def bernoulli(p: float | None) -> float | None:
        return None if p is None else float(np.sqrt(p * (1.0 - p)))

    for f in schema.features:
        shares = None if f.frequencies is None else np.asarray(f.frequencies, np.float64)
        if f.type == "numeric":
            out.append(f.std)
        elif shares is None:
            return None
        elif f.type == "binary":
            out.append(bernoulli(float(shares[1])))
        elif f.type == "categorical":
            out += [bernoulli(float(p)) for p in shares] + ([0.0] if f.other else [])
        else:  # ordinal: the spread of the rank 0..L-1
            ranks = np.arange(len(shares))
            mean = float(shares @ ranks)
            out += [float(np.sqrt(shares @ (ranks - mean) ** 2))] + ([0.0] if f.other else [])
        if f.indicator:
            out.append(bernoulli(f.missing_share))
    if any(v is None or not np.isfinite(v) or v <= 0 for v in out):
        return None
    return np.asarray(out, dtype=np.float64)


def encoded_means(schema: Schema) -> np.ndarray | None:
    """The kit's public mean of every matrix column, as :func:`encoded_scales` its spread: a numeric column's
    published ``mean``; a 0/1 column's published level (or missing) share; an ordinal rank's mean under the
    published shares (an ``other`` column: 0). None when the kit does not publish what one column needs."""
    out: list[float | None] = []
    for f in schema.features:
        shares = None if f.frequencies is None else np.asarray(f.frequencies, np.float64)
        if f.type == "numeric":
            out.append(f.mean)
        elif shares is None:
            return None
        elif f.type == "binary":
            out.append(float(shares[1]))
        elif f.type == "categorical":
            out += [float(p) for p in shares] + ([0.0] if f.other else [])
        else:
            out += [float(shares @ np.arange(len(shares)))] + ([0.0] if f.other else [])
        if f.indicator:
            out.append(f.missing_share)
    if any(v is None or not np.isfinite(v) for v in out):
        return None
    return np.asarray(out, dtype=np.float64)


def level_shares(schema: Schema, X: np.ndarray) -> dict[str, np.ndarray]:
    """Per typed column, the share of each of its levels (``known_levels`` order) among the rows of an encoded
    matrix ``X``; a column with no rows gets the kit's published frequencies, else equal shares."""
    out: dict[str, np.ndarray] = {}
    positions = schema.encoded_positions()
    for f in schema.features:
        if not f.typed:
            continue
        k = len(f.known_levels)
        if len(X):
            codes = _codes_of(f, X[:, positions[f.name]])
            counts = np.bincount(codes, minlength=k).astype(np.float64)
        elif f.frequencies is not None:
            counts = np.array(list(f.frequencies) + [0.0] * (k - len(f.frequencies)))
        else:
            counts = np.ones(k)
        out[f.name] = counts / counts.sum()
    return out


def _codes_of(f: FeatureColumn, cols: np.ndarray) -> np.ndarray:
    """Level codes of a typed column from its encoded columns (the inverse of :func:`encode` for one column)."""
    if f.type == "binary":
        return (cols[:, 0] >= 0.5).astype(np.int64)
    if f.type == "categorical":
        return np.argmax(cols[:, :len(f.known_levels)], axis=1)
    L = len(f.levels or [])
    codes = np.clip(np.rint(cols[:, 0]), 0, L - 1).astype(np.int64)
    if f.other:
        codes = np.where(cols[:, 1] >= 0.5, L, codes)
    return codes


def decode(schema: Schema, X: np.ndarray) -> dict[str, np.ndarray]:
    """The inverse of :func:`encode` for rows it made: raw column name → float values or level strings
    (object array; "other" for the other level). Indicator columns are not inverted."""
    out: dict[str, np.ndarray] = {}
    positions = schema.encoded_positions()
    for f in schema.features:
        cols = X[:, positions[f.name]]
        if f.type == "numeric":
            out[f.name] = cols[:, 0].copy()
            continue
        out[f.name] = np.array(f.known_levels, dtype=object)[_codes_of(f, cols)]
    return out


def encode_frame(schema: Schema, frame: pd.DataFrame, *, tokens: Iterable[str] = ("", "NA"),
                 fill_values: dict[str, float | str] | None = None
                 ) -> tuple[np.ndarray, dict[str, int], dict[str, float | str]]:
    """Encode a small in-memory table (text or numbers, columns by name): (X, cells filled per column, fill
    values used). A missing cell is refused or filled per the column's policy; an unknown level is refused.
    For files use :func:`core.data.tabular.read_table`, which names the line of each problem."""
    tokens = frozenset(tokens)
    columns, masks, filled, used = [], [], {}, {}
    for f in schema.features:
        raw = frame[f.name]
        if f.typed:
            codes = LevelCoder(f, tokens).codes(raw.map(lambda v: v if isinstance(v, str) or pd.isna(v)
                                                        else level_text(v)))
            if (codes == UNKNOWN).any():
                bad = raw.iloc[int(np.flatnonzero(codes == UNKNOWN)[0])]
                raise DataError(f"column '{f.name}' has {str(bad).strip()!r}, which the project does not know "
                                f"(its levels are {f.levels_text})")
            miss = codes == MISSING
            values: np.ndarray = codes
        else:
            values = pd.to_numeric(raw.map(lambda v: np.nan if isinstance(v, str) and v.strip() in tokens else v),
                                   errors="raise").to_numpy(dtype=np.float64)
            miss = np.isnan(values)
        if miss.any():
            if f.missing != "impute":
                raise DataError(f"column '{f.name}' has {int(miss.sum())} missing cell(s) and the project refuses "
                                "missing values in it")
            given = (fill_values or {}).get(f.name)
            value = fill_value(f, values) if given is None else given
            values = values.copy()
            values[miss] = fill_code(f, value)
            filled[f.name], used[f.name] = int(miss.sum()), value
        columns.append(values)
        masks.append(miss)
    return encode(schema, columns, masks), filled, used


def level_text(v: Any) -> str:
    """A number as a level is written ("1" for 1 or 1.0, "2.5" for 2.5)."""
    x = float(v)
    return str(int(x)) if x.is_integer() else repr(x)


__all__ = ["MISSING", "UNKNOWN", "LevelCoder", "decode", "encode", "encode_frame", "fill_code",
           "encoded_ranges", "fill_value", "level_shares", "level_text"]
