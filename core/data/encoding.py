"""The kit's encoding: a site's raw column values → the matrix every method sees, identically at every site.

For each feature column of the schema, in kit order (:attr:`core.data.schema.Schema.encoded_names`):

- numeric: the value itself;
- binary: 0 for the reference level (the first), 1 for the other;
- categorical: one-hot over every kit level in kit order, plus an ``other`` column when the kit has one;
- ordinal: the level's rank 0..L-1 (low to high); with ``other``, an unknown value takes the middle rank
  (L-1)/2 and a 0/1 ``other`` column marks it;
- then, when the column's ``indicator`` is set, 1 on the rows whose cell was missing (and filled).

A value the kit does not know goes to the column's *unseen bucket* (:data:`UNSEEN_LEVEL`), which is none of its
levels and has no matrix column of its own, so no real level (not even one named "other") can clash with it: a
categorical column's one-hot row is all zeros (the one point no kit level takes: the bucket's 0/1 column would be
1 − the sum of the others), a binary or ordinal column takes the middle of its scale ((L-1)/2; 0.5 for binary).
A column whose kit still carries the older ``other`` flag keeps its explicit ``other`` column instead.

Missing cells are filled before encoding, per column, by the one missing-value rule of :mod:`core.data.missing`
(its :class:`~core.data.missing.Filling`). A level is matched after stripping surrounding spaces; a numeric-looking
cell also matches a numeric-looking level of equal value, whatever its written form ("1.0", "01", and "1,0" in a
decimal-comma file are level "1"). A raw value the kit merges into a level (``FeatureColumn.merged``) is matched
the same way and read as that level ("Lev+5FU" is level "treated").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..errors import DataError
from .missing import Filling, fills, missing_token_set


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
    mean: float | None
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
UNKNOWN = -2  # level code of a value the kit does not know: the unseen bucket (unless the column has ``other``)
UNSEEN_LEVEL = "(unseen)"  # how the unseen bucket is named to people; never a level (the kit refuses it as one)
_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_COMMA_NUMBER = re.compile(r"^\s*[+-]?\d*,\d+\s*$")


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
    def of_levels(cls, levels: list[str], tokens: Iterable[str], decimal: str = ".") -> LevelCoder:
        """A coder for plain levels (no merges, no "other"): e.g. the label column read against the kit's classes."""
        return cls(_PlainLevels(list(levels)), tokens, decimal)

    def __init__(self, column: FeatureColumn, tokens: Iterable[str], decimal: str = "."):
        self.column = column
        self.tokens = missing_token_set(tokens)
        self.decimal = decimal  # a file with a decimal comma writes level 1 as "1,0"
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
        if not s or s.casefold() in self.tokens:
            code = MISSING
        elif s in self.index:
            code = self.index[s]
        elif (x := _as_number(s, self.decimal)) is not None and x in self.by_value:
            code = self.by_value[x]
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


def _as_number(text: str, decimal: str) -> float | None:
    """The number a stripped cell writes ("01" and "1.0" are 1; "1,0" too when the file's decimal mark is a
    comma), or None."""
    if _NUMBER.match(text):
        return float(text)
    if decimal == "," and _COMMA_NUMBER.match(text):
        return float(text.replace(",", "."))
    return None


def encode(schema: Schema, columns: list[np.ndarray], missing: list[np.ndarray | None]) -> np.ndarray:
    """The encoded matrix (n, schema.width) from filled raw columns, one per feature in kit order.

    ``columns[j]``: float64 values (numeric) or int64 level codes 0..len(known_levels)-1 or :data:`UNKNOWN` (the
    unseen bucket) (typed), no missing cell left; ``missing[j]``: the rows that were filled (needed only when the
    column has an indicator).
    """
    n = len(columns[0]) if columns else 0
    X = np.empty((n, schema.width), dtype=np.float64)
    at = 0
    for f, values, was_missing in zip(schema.features, columns, missing, strict=True):
        if f.type == "numeric":
            X[:, at] = values
            at += 1
        elif f.type == "binary":
            X[:, at] = np.where(values == UNKNOWN, 0.5, values)  # the unseen bucket: halfway
            at += 1
        elif f.type == "categorical":
            k = len(f.known_levels)
            X[:, at:at + k] = 0.0
            known = np.flatnonzero(values >= 0)  # the unseen bucket: no level's column
            X[known, at + values[known]] = 1.0
            at += k
        else:  # ordinal
            L = len(f.levels or [])
            if f.other:
                is_other = values == L
                X[:, at] = np.where(is_other, (L - 1) / 2, values)
                X[:, at + 1] = is_other
                at += 2
            else:
                X[:, at] = np.where(values == UNKNOWN, (L - 1) / 2, values)  # the unseen bucket: the middle rank
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
    matrix ``X`` (rows in the unseen bucket left out); a column with no such rows gets the kit's published
    frequencies, else equal shares."""
    out: dict[str, np.ndarray] = {}
    positions = schema.encoded_positions()
    for f in schema.features:
        if not f.typed:
            continue
        k = len(f.known_levels)
        codes = _codes_of(f, X[:, positions[f.name]]) if len(X) else np.zeros(0, np.int64)
        codes = codes[codes >= 0]
        if codes.size:
            counts = np.bincount(codes, minlength=k).astype(np.float64)
        elif f.frequencies is not None:
            counts = np.array(list(f.frequencies) + [0.0] * (k - len(f.frequencies)))
        else:
            counts = np.ones(k)
        out[f.name] = counts / counts.sum()
    return out


def _codes_of(f: FeatureColumn, cols: np.ndarray) -> np.ndarray:
    """Level codes of a typed column from its encoded columns (the inverse of :func:`encode` for one column);
    :data:`UNKNOWN` for the unseen bucket (a categorical row of zeros, a binary 0.5, an ordinal half rank)."""
    if f.type == "binary":
        v = cols[:, 0]
        return np.where(v >= 0.75, 1, np.where(v <= 0.25, 0, UNKNOWN)).astype(np.int64)
    if f.type == "categorical":
        k = len(f.known_levels)
        return np.where(cols[:, :k].max(axis=1) >= 0.5, np.argmax(cols[:, :k], axis=1), UNKNOWN).astype(np.int64)
    L = len(f.levels or [])
    r = cols[:, 0]
    codes = np.clip(np.rint(r), 0, L - 1).astype(np.int64)
    if f.other:
        codes = np.where(cols[:, 1] >= 0.5, L, codes)
    else:
        codes = np.where(np.abs(r - np.rint(r)) >= 0.25, UNKNOWN, codes)
    return codes


def decode(schema: Schema, X: np.ndarray) -> dict[str, np.ndarray]:
    """The inverse of :func:`encode` for rows it made: raw column name → float values or level strings
    (object array; "other" for the other level, :data:`UNSEEN_LEVEL` for the unseen bucket — an ordinal column
    with an odd number of levels puts its bucket on its middle level, so that one reads as the level).
    Indicator columns are not inverted."""
    out: dict[str, np.ndarray] = {}
    positions = schema.encoded_positions()
    for f in schema.features:
        cols = X[:, positions[f.name]]
        if f.type == "numeric":
            out[f.name] = cols[:, 0].copy()
            continue
        names = np.array([*f.known_levels, UNSEEN_LEVEL], dtype=object)
        codes = _codes_of(f, cols)
        out[f.name] = names[np.where(codes == UNKNOWN, len(f.known_levels), codes)]
    return out


def encode_frame(schema: Schema, frame: pd.DataFrame, *, tokens: Iterable[str] = ("", "NA"),
                 fill_values: dict[str, float | str] | None = None
                 ) -> tuple[np.ndarray, dict[str, int], dict[str, float | str]]:
    """Encode a small in-memory table (text or numbers, columns by name): (X, cells filled per column, fill
    values used). A missing cell is refused or filled per the column's policy by the one rule
    (:class:`core.data.missing.Filling`, as files are); a value the kit does not know goes to the unseen bucket. For
    files use :func:`core.data.tabular.read_table`, which names the line of each problem."""
    tokens = missing_token_set(tokens)
    filling = Filling(dict(fill_values or {}))
    columns, masks = [], []
    for f in schema.features:
        raw = frame[f.name]
        if f.typed:
            values: np.ndarray = LevelCoder(f, tokens).codes(raw.map(
                lambda v: v if isinstance(v, str) or pd.isna(v) else level_text(v)))
            miss = values == MISSING
        else:
            values = pd.to_numeric(raw.map(lambda v: np.nan if isinstance(v, str) and v.strip().casefold() in tokens
                                           else v), errors="raise").to_numpy(dtype=np.float64)
            miss = np.isnan(values)
        if miss.any() and not fills(f):
            raise DataError(f"column '{f.name}' has {int(miss.sum())} missing cell(s) and the project refuses "
                            "missing values in it")
        values = values.copy()
        filling.column(f, values, miss)
        columns.append(values)
        masks.append(miss)
    filled, used, _ = filling.finish([f.name for f in schema.features])
    return encode(schema, columns, masks), filled, used


def level_text(v: Any) -> str:
    """A number as a level is written ("1" for 1 or 1.0, "2.5" for 2.5)."""
    x = float(v)
    return str(int(x)) if x.is_integer() else repr(x)


__all__ = ["MISSING", "UNKNOWN", "UNSEEN_LEVEL", "LevelCoder", "decode", "encode", "encode_frame", "encoded_means",
           "encoded_ranges", "encoded_scales", "level_shares", "level_text"]
