"""The project schema: which numeric columns form the matrix, in which order, and the label classes.

The analyst fixes the schema once (usually from a sample CSV with :func:`infer_schema`); it travels in
the project kit, and every site's CSV is read against it by :func:`core.data.tabular.read_table`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, DataError, FormatError
from ..fileio import canonical_json
from .encoding import UNSEEN_LEVEL, level_text
from .missing import KIT_POLICIES, default_choice, looks_missing, missing_token_set, sample_note, set_choice, words_of
from .ordering import level_order, natural_sorted
from .public_stats import MIN_GROUP, rounded_range, rounded_share, rounded_shares
from .tabular import (
    MISSING_TOKENS,
    CsvFormat,
    CsvOptions,
    _check_options,
    _clean_name,
    _iter_chunks,
    _quote,
    _quote_list,
    _text_to_numbers,
    _with_format,
)

_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_BLOCK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
ALL_COLUMNS = "all"  # the name of the one implicit block of a schema that declares none
_MANY_CLASSES = 50


COLUMN_TYPES = ("numeric", "binary", "categorical", "ordinal")
OTHER_LEVEL = "other"  # the explicit extra level of a categorical/ordinal column whose ``other`` is set
_TYPED = ("binary", "categorical", "ordinal")


@dataclass
class FeatureColumn:
    """One feature column of the CSV: its type, its levels, its missing-value policy and public statistics.

    ``type`` is one of :data:`COLUMN_TYPES`. ``levels``: binary, exactly two (the first is the reference,
    encoded 0); categorical, the kit's level order (one-hot in that order); ordinal, low to high (encoded as
    the rank 0..L-1). ``missing``: "refuse" (a missing cell is an error) or "impute" (the site's median, or
    its most frequent level); ``indicator`` adds a 0/1 "was missing" column. ``other``: a value the kit
    does not know goes to an explicit extra level instead of being refused. ``min``/``max``/``mean``/``std``
    (numeric), ``frequencies`` (share of each level, in ``levels`` order) and ``missing_share`` are the
    analyst's sample statistics, published in the kit (optional). ``class_mean``/``class_std`` (numeric): the
    sample's mean and standard deviation within each label class, in the schema's class order (null for a class
    with fewer than the kit's ``min_group`` sample rows, 10 by default), so a site's units check can tell a unit
    from label skew (:mod:`core.data.harmony`). ``merged``: kit level → the other raw
    values that mean it (e.g. ``{"treated": ["Lev", "Lev+5FU"]}``, ``{"M": ["m", "male"]}``); a cell holding
    one of them is read as that level, so the matrix still has one column per kit level. Fields at their
    default are left out of :meth:`to_dict`, so kits made before these fields existed keep their digests.
    A value the kit does not know goes to the column's unseen bucket (:mod:`core.data.encoding`); ``other``, an
    explicit 0/1 column for it, is read in kits made before the bucket and no longer written.
    """

    name: str
    min: float | None = None
    max: float | None = None
    type: str = "numeric"
    levels: list[str] | None = None
    missing: str = "refuse"
    indicator: bool = False
    other: bool = False
    mean: float | None = None
    std: float | None = None
    frequencies: list[float] | None = None
    missing_share: float | None = None
    merged: dict[str, list[str]] | None = None
    class_mean: list[float | None] | None = None
    class_std: list[float | None] | None = None

    @property
    def typed(self) -> bool:
        """Whether the column holds levels (binary, categorical, ordinal) rather than numbers."""
        return self.type in _TYPED

    @property
    def known_levels(self) -> list[str]:
        """The levels a value maps to, with the explicit "other" level last when ``other`` is set."""
        return list(self.levels or []) + ([OTHER_LEVEL] if self.other else [])

    @property
    def encoded_names(self) -> list[str]:
        """This column's matrix columns (see :attr:`Schema.encoded_names` for the rule)."""
        if self.type == "binary":
            out = [f"{self.name}={self.levels[1]}"]
        elif self.type == "categorical":
            out = [f"{self.name}={lv}" for lv in self.known_levels]
        elif self.type == "ordinal":
            out = [self.name] + ([f"{self.name}={OTHER_LEVEL}"] if self.other else [])
        else:
            out = [self.name]
        if self.indicator:
            out.append(f"{self.name} (missing)")
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "min": None if self.min is None else float(self.min),
            "max": None if self.max is None else float(self.max),
        }
        if self.type != "numeric":
            d["type"] = self.type
        if self.levels is not None:
            d["levels"] = list(self.levels)
        if self.missing != "refuse":
            d["missing"] = self.missing
        if self.indicator:
            d["indicator"] = True
        if self.other:
            d["other"] = True
        for key in ("mean", "std", "missing_share"):
            if getattr(self, key) is not None:
                d[key] = float(getattr(self, key))
        if self.frequencies is not None:
            d["frequencies"] = [float(v) for v in self.frequencies]
        if self.merged is not None:
            d["merged"] = {level: list(raw) for level, raw in self.merged.items()}
        for key in ("class_mean", "class_std"):
            if getattr(self, key) is not None:
                d[key] = [None if v is None else float(v) for v in getattr(self, key)]
        return d

    def level_label(self, level: str) -> str:
        """A level as people read it: its name, then the raw values merged into it, e.g. "treated (= Lev,
        Lev+5FU)"."""
        raw = (self.merged or {}).get(level)
        return f"{level} (= {', '.join(raw)})" if raw else level

    @property
    def levels_text(self) -> str:
        """The levels with their merges, comma-separated, e.g. "Obs, treated (= Lev, Lev+5FU)"."""
        return ", ".join(self.level_label(lv) for lv in self.levels or [])

    def describe(self, name_width: int = 20) -> str:
        """One line for ``kit new``/``kit show``, e.g. "sex  binary  F (reference), M (= m, male)  impute"."""
        if self.typed:
            levels = [self.level_label(lv) for lv in self.levels or []]
            if self.type == "binary":
                shown = f"{levels[0]} (reference), {levels[1]}"
            elif self.type == "ordinal":
                shown = " < ".join(levels)
            else:
                shown = ", ".join(levels)
            if self.other:
                shown += f" (+ {OTHER_LEVEL})"
        elif self.min is not None and self.max is not None:
            shown = f"range {self.min:g} to {self.max:g}"
        else:
            shown = "no public range"
        return f"{self.name:<{name_width}} {self.type:<12} {shown:<40} {words_of(self)}"


@dataclass
class IgnoredColumn:
    """A CSV column the kit leaves out, with the reason (e.g. "identifier: every value is different")."""

    name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason}


@dataclass
class FeatureBlock:
    """A named group of feature columns held together by the sites of one column of the data grid."""

    name: str
    columns: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "columns": list(self.columns)}


@dataclass
class Schema:
    """Ordered numeric features (the matrix column order), optional label and classes, optional id column.

    Attributes
    ----------
    features : the feature columns, in matrix column order.
    label : the label column (classification) or None (clustering).
    classes : the label classes as strings, in a fixed order; ``y`` holds indices into this list.
    id_column : a row-id column used for vertical linkage, or None.
    blocks : feature blocks (vertical partition, DC-Clustering): named groups of columns that together hold
        every feature exactly once, in feature order; None means one block of all columns.
    ignored : the sample's columns the kit leaves out, each with its reason (nothing is dropped silently).
    missing_tokens : cell texts every site reads as missing besides the built-in markers (a source's own code such
        as ``NA_NA``, given to ``kit new --missing-token``), so no site is stopped by it.

    The matrix every method sees is the ENCODED one (:attr:`encoded_names`, :attr:`width`), built by
    :mod:`core.data.encoding`; ``features`` are the CSV's raw columns.
    """

    features: list[FeatureColumn]
    label: str | None = None
    classes: list[str] = field(default_factory=list)
    id_column: str | None = None
    blocks: list[FeatureBlock] | None = None
    ignored: list[IgnoredColumn] = field(default_factory=list)
    missing_tokens: list[str] = field(default_factory=list)

    @property
    def feature_names(self) -> list[str]:
        """The raw CSV columns the kit reads, in kit order (not the matrix columns: see :attr:`encoded_names`)."""
        return [f.name for f in self.features]

    @property
    def encoded_names(self) -> list[str]:
        """The matrix columns, column by column: numeric → ``[name]``; binary → ``["name=B"]`` (1 for the
        second level B, 0 for the reference); categorical → one-hot ``["name=a", …]`` over every kit level in kit
        order (+ ``"name=other"`` when ``other``); ordinal → ``[name]`` holding the rank 0..L-1 (+
        ``"name=other"`` when ``other``); then ``"name (missing)"`` when the column's ``indicator`` is set."""
        return [e for f in self.features for e in f.encoded_names]

    @property
    def width(self) -> int:
        """The number of matrix columns (``len(encoded_names)``)."""
        return sum(len(f.encoded_names) for f in self.features)

    @property
    def all_numeric(self) -> bool:
        """Whether the matrix is the raw columns themselves (every column numeric, no indicator)."""
        return all(f.type == "numeric" and not f.indicator for f in self.features)

    def encoded_positions(self) -> dict[str, list[int]]:
        """Raw column name → its positions in the encoded matrix."""
        out: dict[str, list[int]] = {}
        at = 0
        for f in self.features:
            k = len(f.encoded_names)
            out[f.name] = list(range(at, at + k))
            at += k
        return out

    @property
    def block_names(self) -> list[str]:
        return [ALL_COLUMNS] if self.blocks is None else [b.name for b in self.blocks]

    def block_columns(self, name: str) -> list[str]:
        """The columns of block ``name``; ConfigError naming the blocks if there is no such block."""
        if self.blocks is None and name == ALL_COLUMNS:
            return self.feature_names
        for b in self.blocks or []:
            if b.name == name:
                return list(b.columns)
        raise ConfigError(f"the project has no feature block {_quote(name)}; its blocks are {self.describe_blocks()}")

    def block_indices(self, name: str) -> list[int]:
        """Positions of block ``name``'s columns in the ENCODED matrix (the anchor's column order)."""
        pos = self.encoded_positions()
        return [i for c in self.block_columns(name) for i in pos[c]]

    def block_schema(self, name: str) -> Schema:
        """The schema a site of block ``name`` reads its CSV with: that block's columns and the id column."""
        cols = set(self.block_columns(name))
        return Schema([f for f in self.features if f.name in cols], id_column=self.id_column,
                      missing_tokens=list(self.missing_tokens))

    def describe_columns(self) -> list[str]:
        """The kit's columns as a small table for confirmation: each feature's type, levels or range and missing
        policy, then every column left out with its reason."""
        w = max([20, *(len(f.name) for f in self.features)])  # the name column fits the longest name
        lines = [f"{'column':<{w}} {'type':<12} {'levels or range':<40} missing values"]
        lines += [f.describe(w) for f in self.features]
        lines.append(f"matrix: {self.width} encoded column(s) from {len(self.features)} column(s)")
        if any(f.typed for f in self.features):
            lines.append(f"a value a column with levels does not know: its unseen bucket {UNSEEN_LEVEL}")
        if self.missing_tokens:
            lines.append(f"also read as missing at every site: {_quote_list(self.missing_tokens, 20)}")
        lines += [f"left out: {_quote(c.name) if c.name else '(no name)'}: {c.reason}" for c in self.ignored]
        return lines

    def describe_blocks(self) -> str:
        """E.g. "'clinical' (a, b, c), 'lifestyle' (d, e)"."""
        return ", ".join(f"{_quote(n)} ({', '.join(self.block_columns(n))})" for n in self.block_names)

    def detect_block(self, header: Iterable[str]) -> str:
        """The one block whose columns are all in ``header``; ConfigError naming columns otherwise."""
        have = set(header)
        full = [n for n in self.block_names if set(self.block_columns(n)) <= have]
        if len(full) == 1:
            return full[0]
        if len(full) > 1:
            raise ConfigError(f"the file has the columns of several feature blocks ({', '.join(map(_quote, full))}); "
                              "name the block this site exports")
        missing = {n: [c for c in self.block_columns(n) if c not in have] for n in self.block_names}
        best = min(self.block_names, key=lambda n: len(missing[n]))
        raise ConfigError(f"the file's columns match no feature block of the project: block {_quote(best)} lacks "
                          f"{_quote_list(missing[best])}; the blocks are {self.describe_blocks()}")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "features": [f.to_dict() for f in self.features],
            "label": self.label,
            "classes": list(self.classes),
            "id_column": self.id_column,
        }
        if self.blocks is not None:  # absent, not null, when there are none (digests of older kits hold)
            d["blocks"] = [b.to_dict() for b in self.blocks]
        if self.ignored:  # absent when empty, for the same reason
            d["ignored"] = [c.to_dict() for c in self.ignored]
        if self.missing_tokens:  # absent when empty, for the same reason
            d["missing_tokens"] = list(self.missing_tokens)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Schema:
        """Parse the dict form strictly: FormatError on a missing, unknown or ill-typed field."""
        if not isinstance(d, dict):
            raise FormatError("the schema is not a JSON object")
        _exact_keys(d, {"features", "label", "classes", "id_column"}, "the schema",
                    optional={"blocks", "ignored", "missing_tokens"})
        feats = d["features"]
        if not isinstance(feats, list):
            raise FormatError("the schema's 'features' is not a list")
        features = []
        for i, f in enumerate(feats):
            where = f"feature {i + 1} of the schema"
            if not isinstance(f, dict):
                raise FormatError(f"{where} is not a JSON object")
            features.append(_feature_from_dict(f, where))
        label = None if d["label"] is None else _name(d["label"], "the schema's label")
        id_column = None if d["id_column"] is None else _name(d["id_column"], "the schema's id_column")
        classes = d["classes"]
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise FormatError("the schema's 'classes' is not a list of strings")
        blocks = None
        if "blocks" in d:
            if not isinstance(d["blocks"], list):
                raise FormatError("the schema's 'blocks' is not a list")
            blocks = []
            for i, b in enumerate(d["blocks"]):
                where = f"block {i + 1} of the schema"
                if not isinstance(b, dict):
                    raise FormatError(f"{where} is not a JSON object")
                _exact_keys(b, {"name", "columns"}, where)
                if not isinstance(b["columns"], list):
                    raise FormatError(f"{where}'s columns are not a list")
                blocks.append(FeatureBlock(_name(b["name"], f"{where}'s name"),
                                           [_name(c, f"a column of {where}") for c in b["columns"]]))
        ignored = []
        if "ignored" in d:
            if not isinstance(d["ignored"], list):
                raise FormatError("the schema's 'ignored' is not a list")
            for i, c in enumerate(d["ignored"]):
                where = f"ignored column {i + 1} of the schema"
                if not isinstance(c, dict):
                    raise FormatError(f"{where} is not a JSON object")
                _exact_keys(c, {"name", "reason"}, where)
                if not isinstance(c["name"], str) or not isinstance(c["reason"], str):
                    raise FormatError(f"{where}'s name or reason is not text")
                ignored.append(IgnoredColumn(c["name"], c["reason"]))
        tokens = d.get("missing_tokens", [])
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise FormatError("the schema's 'missing_tokens' is not a list of text values")
        schema = cls(features=features, label=label, classes=list(classes), id_column=id_column, blocks=blocks,
                     ignored=ignored, missing_tokens=list(tokens))
        schema.validate()
        return schema

    def validate(self) -> None:
        """Raise FormatError if names repeat, a range is inverted, or label and classes disagree."""
        if not self.features:
            raise FormatError("the schema has no feature columns")
        names = self.feature_names + [n for n in (self.label, self.id_column) if n is not None]
        for n in names:
            _name(n, "a schema column name")
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise FormatError(f"the schema names column {_quote(n)} more than once")
            seen.add(n)
        for f in self.features:
            _check_feature(f)
        encoded = Counter(self.encoded_names)
        twice = [e for e, k in encoded.items() if k > 1]
        if twice:
            raise FormatError(f"the schema's encoding names matrix column {_quote(twice[0])} twice; rename a column "
                              "or a level")
        for c in self.ignored:
            if not isinstance(c.name, str) or c.name != c.name.strip() or not isinstance(c.reason, str) \
                    or not c.reason.strip():
                raise FormatError("an ignored column of the schema has a name with surrounding spaces or no reason")
            if c.name and c.name in seen:
                raise FormatError(f"the schema both uses and ignores column {_quote(c.name)}")
        if self.label is None and self.classes:
            raise FormatError("the schema lists label classes but names no label column")
        if self.label is not None and not self.classes:
            raise FormatError(f"the schema names label column {_quote(self.label)} but lists no classes")
        if any(not c.strip() or c != c.strip() for c in self.classes):
            raise FormatError("a label class in the schema is empty or has surrounding spaces")
        if len(set(self.classes)) != len(self.classes):
            raise FormatError("the schema lists a label class more than once")
        if self.blocks is not None:
            _check_blocks(self.blocks, self.feature_names)
        for t in self.missing_tokens:
            if not t.strip() or t != t.strip() or len(t) > 100:
                raise FormatError("a missing-value marker of the schema is empty, has surrounding spaces or is "
                                  "longer than 100 characters")
        if len(set(self.missing_tokens)) != len(self.missing_tokens):
            raise FormatError("the schema lists a missing-value marker more than once")
        for f in self.features:
            for key in ("class_mean", "class_std"):
                values = getattr(f, key)
                if values is not None and len(values) != len(self.classes):
                    raise FormatError(f"feature {_quote(f.name)} has {len(values)} {key} value(s) for "
                                      f"{len(self.classes)} label class(es)")

    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_dict`."""
        return hashlib.sha256(canonical_json(self.to_dict())).hexdigest()


def _check_blocks(blocks: list[FeatureBlock], features: list[str]) -> None:
    """Blocks partition the features, in feature order; each has a valid name and at least two columns."""
    if not blocks:
        raise FormatError("the schema declares an empty list of feature blocks")
    names = [b.name for b in blocks]
    for n in names:
        if not _BLOCK_NAME.match(n):
            raise FormatError(f"block name {_quote(n)} is not 1-64 letters, digits, '_', '-' or '.'")
    if len(set(names)) != len(names):
        raise FormatError("the schema names a feature block more than once")
    seen: dict[str, str] = {}
    for b in blocks:
        if len(b.columns) < 2:
            raise FormatError(f"block {_quote(b.name)} has {len(b.columns)} column(s); a block needs at least two, "
                              "so that its private reduction drops a dimension")
        for c in b.columns:
            if c in seen:
                raise FormatError(f"column {_quote(c)} is in both block {_quote(seen[c])} and block {_quote(b.name)}")
            seen[c] = b.name
    unknown = [c for c in seen if c not in features]
    if unknown:
        raise FormatError(f"block {_quote(seen[unknown[0]])} names {_quote_list(unknown)}, which "
                          f"{'is not a feature' if len(unknown) == 1 else 'are not features'} of the schema")
    if [c for b in blocks for c in b.columns] != list(features):
        left = [c for c in features if c not in seen]
        if left:
            raise FormatError(f"the feature(s) {_quote_list(left)} belong to no block")
        raise FormatError("the blocks do not list the features in the schema's column order")


def parse_blocks(text: str) -> list[tuple[str, list[str]]]:
    """``"clinical=a,b,c;lifestyle=d,e"`` → [("clinical", ["a", "b", "c"]), ("lifestyle", ["d", "e"])]."""
    out = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        if "=" not in part:
            raise ConfigError(f"a block is NAME=col1,col2,…; got {_quote(part)}")
        name, cols = part.split("=", 1)
        out.append((name.strip(), [c.strip() for c in cols.split(",") if c.strip()]))
    if not out:
        raise ConfigError("no feature blocks given")
    return out


def with_blocks(schema: Schema, blocks: list[tuple[str, list[str]]]) -> tuple[Schema, list[str]]:
    """The schema restricted to the blocks' columns, reordered block by block, with the blocks declared.

    Returns notes naming feature columns that no block uses (they are left out). ConfigError naming the
    columns when a block names a column that is not a numeric column of the sample.
    """
    feats = {f.name: f for f in schema.features}
    for name, cols in blocks:
        bad = [c for c in cols if c not in feats]
        if bad:
            raise ConfigError(f"block {_quote(name)} names {_quote_list(bad)}, which the sample does not have as "
                              f"numeric column(s); its numeric columns are {_quote_list(list(feats), 30)}")
    seen: dict[str, str] = {}
    for name, cols in blocks:
        for c in cols:
            if c in seen:
                raise ConfigError(f"column {_quote(c)} is in both block {_quote(seen[c])} and block {_quote(name)}")
            seen[c] = name
    used = [c for _, cols in blocks for c in cols]
    notes = [f"column {_quote(c)} is in no feature block and was left out" for c in feats if c not in used]
    ignored = list(schema.ignored) + [IgnoredColumn(c, "in no feature block") for c in feats if c not in used]
    out = Schema([feats[c] for c in used], label=schema.label, classes=list(schema.classes),
                 id_column=schema.id_column, blocks=[FeatureBlock(n, list(c)) for n, c in blocks], ignored=ignored,
                 missing_tokens=list(schema.missing_tokens))
    try:
        out.validate()
    except FormatError as exc:
        raise ConfigError(exc.message) from exc
    return out, notes


_FEATURE_KEYS = {"min", "max", "type", "levels", "missing", "indicator", "other", "mean", "std", "frequencies",
                 "missing_share", "merged", "class_mean", "class_std"}


def _feature_from_dict(f: Any, where: str) -> FeatureColumn:
    """One feature column parsed strictly (types only; the rules between fields are :func:`_check_feature`'s)."""
    if not isinstance(f, dict):
        raise FormatError(f"{where} is not a JSON object")
    _exact_keys(f, {"name"}, where, optional=_FEATURE_KEYS)
    name = _name(f["name"], f"{where}'s name")
    where = f"feature {_quote(name)}"
    kind = f.get("type", "numeric")
    if kind not in COLUMN_TYPES:
        raise FormatError(f"{where} has the unknown type {_quote(kind)}; the types are {', '.join(COLUMN_TYPES)}")
    levels = f.get("levels")
    if levels is not None and (not isinstance(levels, list) or not all(isinstance(v, str) for v in levels)):
        raise FormatError(f"{where}'s levels are not a list of text values")
    missing = f.get("missing", "refuse")
    if missing not in KIT_POLICIES:
        raise FormatError(f"{where} has the unknown missing-value policy {_quote(missing)}; the policies are "
                          f"{', '.join(KIT_POLICIES)}")
    flags = {}
    for key in ("indicator", "other"):
        v = f.get(key, False)
        if not isinstance(v, bool):
            raise FormatError(f"{where}'s {key!r} is not true or false")
        flags[key] = v
    freqs = f.get("frequencies")
    if freqs is not None:
        if not isinstance(freqs, list):
            raise FormatError(f"{where}'s frequencies are not a list of numbers")
        freqs = [_bound(v, f"a frequency of {where}") for v in freqs]
    per_class = {}
    for key in ("class_mean", "class_std"):
        values = f.get(key)
        if values is not None:
            if not isinstance(values, list):
                raise FormatError(f"{where}'s {key} is not a list of numbers")
            values = [_bound(v, f"a {key} value of {where}") for v in values]
        per_class[key] = values
    merged = f.get("merged")
    if merged is not None and (not isinstance(merged, dict) or not all(
            isinstance(raw, list) and all(isinstance(v, str) for v in raw) for raw in merged.values())):
        raise FormatError(f"{where}'s merged values are not an object of level → list of text values")
    return FeatureColumn(
        name=name, min=_bound(f.get("min"), f"{where}'s min"), max=_bound(f.get("max"), f"{where}'s max"),
        type=kind, levels=None if levels is None else list(levels), missing=missing, indicator=flags["indicator"],
        other=flags["other"], mean=_bound(f.get("mean"), f"{where}'s mean"), std=_bound(f.get("std"), f"{where}'s std"),
        frequencies=freqs, missing_share=_bound(f.get("missing_share"), f"{where}'s missing_share"),
        merged=None if merged is None else {level: list(raw) for level, raw in merged.items()}, **per_class)


def _check_feature(f: FeatureColumn) -> None:
    """The rules of one column: FormatError with one sentence naming the column on the first one broken."""
    where = f"feature {_quote(f.name)}"
    _check_type_and_policy(f, where)
    _check_statistics(f, where)
    if f.type == "numeric":
        _check_numeric(f, where)
    else:
        _check_levels(f, where)


def _check_type_and_policy(f: FeatureColumn, where: str) -> None:
    """A known type and missing-value policy; an indicator only with imputation."""
    if f.type not in COLUMN_TYPES:
        raise FormatError(f"{where} has the unknown type {_quote(f.type)}; the types are {', '.join(COLUMN_TYPES)}")
    if f.missing not in KIT_POLICIES:
        raise FormatError(f"{where} has the unknown missing-value policy {_quote(f.missing)}")
    if f.indicator and f.missing != "impute":
        raise FormatError(f"{where} has a missing-value indicator but refuses missing cells; an indicator needs "
                          "imputation")


def _check_statistics(f: FeatureColumn, where: str) -> None:
    """The published statistics are finite and in range: min ≤ max, spreads ≥ 0, a share in [0, 1], per-class means
    and spreads paired."""
    lo = _bound(f.min, f"the min of {where}")
    hi = _bound(f.max, f"the max of {where}")
    if lo is not None and hi is not None and lo > hi:
        raise FormatError(f"{where} has min {lo:g} greater than max {hi:g}")
    _bound(f.mean, f"the mean of {where}")
    if _bound(f.std, f"the std of {where}") is not None and f.std < 0:
        raise FormatError(f"{where} has a negative std")
    share = _bound(f.missing_share, f"the missing share of {where}")
    if share is not None and not 0 <= share <= 1:
        raise FormatError(f"{where} has a missing share outside 0 to 1")
    if (f.class_mean is None) != (f.class_std is None) or (
            f.class_mean is not None and len(f.class_mean) != len(f.class_std)):
        raise FormatError(f"{where} has per-class means and spreads that do not pair up")
    if any(v is not None and v < 0 for v in f.class_std or []):
        raise FormatError(f"{where} has a negative per-class std")


def _check_numeric(f: FeatureColumn, where: str) -> None:
    """A numeric column has none of what only columns with levels have."""
    stray = [k for k in ("levels", "frequencies", "merged") if getattr(f, k) is not None]
    if f.other:
        stray.append("other")
    if stray:
        raise FormatError(f"{where} is numeric but has {' and '.join(map(repr, stray))}, which only columns "
                          "with levels have")


def _check_levels(f: FeatureColumn, where: str) -> None:
    """A column with levels: no numeric statistics; its levels distinct, trimmed, enough for its type and none named
    like the unseen bucket (or "other" beside an ``other`` column); frequencies one share per level; merges."""
    if f.min is not None or f.max is not None or f.mean is not None or f.std is not None \
            or f.class_mean is not None:
        raise FormatError(f"{where} is {f.type} but has a numeric range or mean, which only numeric columns have")
    levels = f.levels
    if not isinstance(levels, list) or not all(isinstance(v, str) for v in levels):
        raise FormatError(f"{where} is {f.type} but lists no levels")
    # a level given twice first: "M, M" for a binary column is a repeated level, not a third one
    twice = [v for v, k in Counter(levels).items() if k > 1]
    if twice:
        raise FormatError(f"{where} lists level {_quote(twice[0])} more than once")
    if f.type == "binary" and len(levels) != 2:
        raise FormatError(f"{where} is binary but has {len(levels)} level(s); a binary column has exactly two")
    if len(levels) < 2:
        raise FormatError(f"{where} is {f.type} but has {len(levels)} level(s); it needs at least two")
    if f.type == "binary" and f.other:
        raise FormatError(f"{where} is binary, so it cannot send unknown values to an 'other' level")
    _check_level_names(f, levels, where)
    if f.frequencies is not None:
        if len(f.frequencies) != len(levels):
            raise FormatError(f"{where} has {len(f.frequencies)} frequencies for {len(levels)} levels")
        if any(_bound(v, f"a frequency of {where}") < 0 for v in f.frequencies) \
                or abs(sum(f.frequencies) - 1) > 1e-6:
            raise FormatError(f"{where}'s frequencies are not shares that add up to 1")
    if f.merged is not None:
        _check_merged(f, where)


def _check_level_names(f: FeatureColumn, levels: list[str], where: str) -> None:
    """No empty or padded level, none named like the unseen bucket, no level "other" beside an ``other`` column."""
    for v in levels:
        if not v.strip() or v != v.strip():
            raise FormatError(f"{where} has an empty level or one with surrounding spaces")
        if v == UNSEEN_LEVEL:
            raise FormatError(f"{where} has a level named {_quote(UNSEEN_LEVEL)}, the name of the unseen bucket; "
                              "rename that level")
    if f.other and OTHER_LEVEL in levels:
        raise FormatError(f"{where} has a level named {_quote(OTHER_LEVEL)} and also sends unknown values to an "
                          "'other' level; rename that level")


def _check_merged(f: FeatureColumn, where: str) -> None:
    """Each key of ``merged`` is a level; its raw values are non-empty trimmed text, each given once in the
    column, none of them a level (nor, when ``other`` is set, "other"), and none equal as a number to a level or
    to another merged value (a cell is matched by its number too)."""
    if not isinstance(f.merged, dict) or not f.merged:
        raise FormatError(f"{where} has an empty or ill-typed 'merged'; leave it out when no value is merged")
    levels = list(f.levels or [])
    seen: dict[Any, str] = {_match_key(lv): lv for lv in levels}
    for level, raw in f.merged.items():
        if level not in levels:
            raise FormatError(f"{where} merges values into {_quote(level)}, which is not one of its levels "
                              f"({', '.join(levels)})")
        if not isinstance(raw, list) or not raw:
            raise FormatError(f"{where} merges no value into level {_quote(level)}")
        for v in raw:
            if not isinstance(v, str) or not v.strip() or v != v.strip():
                raise FormatError(f"{where} merges an empty value, or one with surrounding spaces, into level "
                                  f"{_quote(level)}")
            if v == level:
                raise FormatError(f"{where} merges level {_quote(level)} into itself; a level's own name needs no "
                                  "merge")
            if v in levels:
                raise FormatError(f"{where} merges {_quote(v)} into level {_quote(level)}, but {_quote(v)} is a "
                                  "level of its own")
            if f.other and v == OTHER_LEVEL:
                raise FormatError(f"{where} merges the value {_quote(v)} into level {_quote(level)} and also sends "
                                  "unknown values to an 'other' level; rename that value")
            key = _match_key(v)
            if key in seen:
                raise FormatError(f"{where} merges {_quote(v)} more than once, or as the same number as "
                                  f"{_quote(seen[key])}")
            seen[key] = v


def _match_key(value: str) -> Any:
    """What a level or merged value matches in a cell: its number when it is one ("1.0" and "1" match alike),
    else its text."""
    return float(value) if _NUMBER.match(value) else value


def parse_level_list(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The one text form of a column's levels (``kit new --levels COL=…``, the app's levels cell): comma-separated
    levels in the kit's order; an item ``NAME=a|b|c`` is level NAME gathering raw values a, b and c (NAME itself
    is matched anyway and may be listed). ``"Obs, treated=Lev|Lev+5FU"`` → (["Obs", "treated"], {"treated":
    ["Lev", "Lev+5FU"]}). Spaces around items are removed and empty items dropped; a level typed twice is kept
    twice, for :func:`_check_feature` to name. ConfigError on an item with no name or no raw value."""
    levels: list[str] = []
    merged: dict[str, list[str]] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        if "=" not in item:
            levels.append(item)
            continue
        name, values = (p.strip() for p in item.split("=", 1))
        raw = [v.strip() for v in values.split("|") if v.strip()]
        if not name or not raw:
            raise ConfigError(f"a merged level is NAME=value|value|…, e.g. treated=Lev|Lev+5FU; got {_quote(item)}")
        levels.append(name)
        more = [v for v in raw if v != name]
        if more:
            merged.setdefault(name, []).extend(more)
    return levels, merged


def format_level_list(levels: list[str], merged: dict[str, list[str]] | None) -> str:
    """The inverse of :func:`parse_level_list`: ``"Obs, treated=Lev|Lev+5FU"``."""
    merged = merged or {}
    return ", ".join(f"{lv}={'|'.join(merged[lv])}" if merged.get(lv) else lv for lv in levels)


def _exact_keys(d: dict, required: set[str], where: str, optional: frozenset | set = frozenset()) -> None:
    missing = sorted(required - d.keys())
    if missing:
        raise FormatError(f"{where} lacks the field {', '.join(map(repr, missing))}")
    unknown = sorted(k for k in d if k not in required and k not in optional)
    if unknown:
        raise FormatError(f"{where} has the unknown field {', '.join(map(repr, unknown))}")


def _name(v: Any, what: str) -> str:
    if not isinstance(v, str) or not v or v != v.strip() or "\ufeff" in v:
        raise FormatError(f"{what} is not a non-empty column name without surrounding spaces")
    return v


def _bound(v: Any, what: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise FormatError(f"{what} is not a finite number")
    return float(v)


@dataclass
class ColumnChoices:
    """The analyst's decisions that override what :func:`infer_schema` detects, per raw column name.

    ``ignore``: columns left out ("left out by the analyst"); ``types``: a type of :data:`COLUMN_TYPES` or
    "ignored"; ``levels``: a level order (binary: the first is the reference) that the sample's other levels
    extend; ``merged``: per column, level → the raw values read as that level (they are not levels of their
    own); ``missing``: "refuse", "impute" or "impute+indicator"; ``other``: columns whose unknown values go to
    an explicit "other" level.
    """

    ignore: set[str] = field(default_factory=set)
    types: dict[str, str] = field(default_factory=dict)
    levels: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    other: set[str] = field(default_factory=set)
    merged: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def named(self) -> set[str]:
        return set(self.ignore) | set(self.types) | set(self.levels) | set(self.missing) | set(self.other) \
            | set(self.merged)

    def set_levels(self, column: str, text: str) -> None:
        """The column's levels and merges from their text form (:func:`parse_level_list`); an empty text gives
        the column back the sample's levels. ConfigError on a malformed item."""
        levels, merged = parse_level_list(text)
        self.levels.pop(column, None)
        self.merged.pop(column, None)
        if levels:
            self.levels[column] = levels
        if merged:
            self.merged[column] = merged

    def forget(self, column: str) -> None:
        """Drop every decision on ``column``."""
        self.ignore.discard(column)
        self.other.discard(column)
        for d in (self.types, self.levels, self.missing, self.merged):
            d.pop(column, None)


MAX_LEVELS = 20  # a text column with at most this many distinct values (and few per row) is categorical
_MIN_ID_ROWS = 10  # increasing integers in fewer rows than this are not taken for a row number
_MAX_DISTINCT = 100_000  # distinct text values tracked per text column while inferring
_MAX_NUMBERS = 1_000  # distinct numbers tracked per numeric column (beyond, a column of numbers has no levels)
# A sample too small to trust: a value held by RARE_SHARE of the patients is absent from a sample of n rows with
# probability (1 − RARE_SHARE)^n; SETTLE_ROWS rows make that under 5 % (the "rule of three": about 3 / RARE_SHARE).
RARE_SHARE = 0.01
SETTLE_ROWS = math.ceil(math.log(0.05) / math.log(1 - RARE_SHARE))  # 299
_MAX_KEPT = 1_000_000  # sample values kept per numeric column for its per-class statistics
FEW_NUMBERS = 5  # a numeric column with at most this many distinct whole numbers in a small sample may be codes
_PRIOR_ROWS = 10  # a class's published spread is its own, pulled toward the pooled within-class spread as if
# this many more rows had it (a small class's spread is a noisy estimate)


def infer_schema(
    path: str | Path,
    *,
    label: str | None,
    id_column: str | None = None,
    with_ranges: bool = False,
    with_statistics: bool = False,
    options: CsvOptions | None = None,
    choices: ColumnChoices | None = None,
    min_group: int = MIN_GROUP,
) -> tuple[Schema, list[str]]:
    """Build a schema from a sample CSV; returns it with notes (plain sentences) on what was decided.

    Each column other than the label and id column gets a type, in file order: all numbers → numeric, except
    exactly two distinct values (in more than four rows) → binary; text with at most :data:`MAX_LEVELS`
    distinct values, fewer than half its non-missing rows → binary (two levels) or categorical, levels in
    natural order; every value different (text, or at least ten increasing integers: a row number) →
    ignored as an identifier; other text → ignored as free text. ``choices`` override any of these. Every
    feature imputes missing cells, with a "was missing" indicator when the sample has missing cells in it.
    Every column left out is in ``schema.ignored`` with its reason and in the notes. The label classes are
    the label's distinct non-missing values, in natural order. ``with_statistics`` publishes the sample's
    aggregate statistics in the kit (mean and standard deviation of numeric columns, level frequencies,
    missing shares: what a site's units check compares with, :mod:`core.data.harmony`); ``with_ranges``
    publishes them too, and each numeric column's range. Only what is safe to publish of real rows
    (:mod:`core.data.public_stats`): shares over counts rounded to groups of ``min_group`` rows, ranges rounded
    outward (never a real row's exact min or max), means and spreads over at least ``min_group`` rows.
    """
    path = Path(path)
    options = options or CsvOptions()
    choices = choices or ColumnChoices()
    _check_options(options)
    if label is not None and label == id_column:
        raise ConfigError(f"column {_quote(label)} cannot be both the label and the id column")
    return _with_format(
        path, options,
        lambda opened: _infer(path, opened, label, id_column, (with_ranges, with_statistics, int(min_group)), options,
                              choices),
    )


def _infer(
    path: Path,
    opened: tuple[CsvFormat, list[str], int],
    label: str | None,
    id_column: str | None,
    publish: tuple[bool, bool, int],
    options: CsvOptions,
    choices: ColumnChoices,
) -> tuple[Schema, list[str]]:
    fmt, header, _ = opened
    names = [_clean_name(h) for h in header]
    _check_roles(path, names, label, id_column, choices)
    notes: list[str] = []
    ignored: list[IgnoredColumn] = []
    candidates = _candidate_columns(names, (label, id_column), notes, ignored)
    tokens = missing_token_set(options.missing_tokens)
    state, label_values, label_missing = _read_sample(path, fmt, len(header), candidates,
                                                      names.index(label) if label is not None else None, tokens)
    classes: list[str] = natural_sorted(label_values) if label is not None else []
    features = []
    for i, st in state.items():
        decided = _decide(names[i], st, choices, publish, notes, classes)
        if isinstance(decided, IgnoredColumn):
            ignored.append(decided)
        else:
            features.append(decided)
    if not features:
        raise DataError("the file has no usable feature columns besides the label and id columns", path=path)
    if label is not None:
        notes += _label_notes(path, label, classes, label_missing)
    built_in = missing_token_set(MISSING_TOKENS)
    extra = [t.strip() for t in options.missing_tokens if t.strip() and t.strip().casefold() not in built_in]
    schema = Schema(features=features, label=label, classes=classes, id_column=id_column, ignored=ignored,
                    missing_tokens=list(dict.fromkeys(extra)))  # the analyst's markers, read at every site too
    try:
        schema.validate()
    except FormatError as exc:
        raise ConfigError(exc.message) from exc
    return schema, notes


def _check_roles(path: Path, names: list[str], label: str | None, id_column: str | None,
                 choices: ColumnChoices) -> None:
    """The label and id columns are in the header, once each, and given no type; every column the analyst's
    choices name is in the sample."""
    available = ", ".join(_quote(n) for n in names[:30]) + (", ..." if len(names) > 30 else "")
    for role, col in (("label", label), ("id", id_column)):
        if col is not None and col not in names:
            raise DataError(f"there is no {role} column {_quote(col)}; the columns are {available}", path=path)
    unknown = sorted(choices.named() - set(names))
    if unknown:
        raise ConfigError(f"the sample has no column {_quote_list(unknown)} (its columns are {available})")
    roles = sorted(choices.named() & {label, id_column})
    if roles:
        raise ConfigError(f"column {_quote(roles[0])} is the label or id column; it cannot be given a type")
    counts = Counter(names)
    for role, col in (("label", label), ("id", id_column)):
        if col is not None and counts[col] > 1:
            raise DataError(f"the {role} column {_quote(col)} appears more than once in the header", path=path)


def _candidate_columns(names: list[str], roles: tuple[str | None, str | None], notes: list[str],
                       ignored: list[IgnoredColumn]) -> list[int]:
    """The positions of the columns that may become features; a column without a name or whose name appears more
    than once is left out, with a note."""
    counts = Counter(names)
    candidates: list[int] = []
    for i, n in enumerate(names):
        if n in roles:
            continue
        if not n:
            notes.append(f"column {i + 1} has no name and was left out")
            ignored.append(IgnoredColumn("", f"column {i + 1} has no name"))
        elif counts[n] > 1:
            if names.index(n) == i:
                notes.append(f"column {_quote(n)} appears {counts[n]} times in the header and was left out")
                ignored.append(IgnoredColumn(n, f"appears {counts[n]} times in the header"))
        else:
            candidates.append(i)
    return candidates


def _read_sample(path: Path, fmt: CsvFormat, width: int, candidates: list[int], label_pos: int | None,
                 tokens: frozenset[str]) -> tuple[dict[int, _ColumnStats], set[str], int]:
    """One pass over the sample: each candidate column's statistics (per label class too), the label's distinct
    values and how many rows have none."""
    state = {i: _ColumnStats() for i in candidates}
    label_values: set[str] = set()
    label_missing = 0
    usecols = candidates + ([label_pos] if label_pos is not None else [])
    chunks = _iter_chunks(path, fmt, width, usecols) if usecols else iter(())
    for _, chunk in chunks:
        groups = None
        if label_pos is not None:
            raw = chunk[label_pos]
            for v, count in raw.value_counts(dropna=False).items():
                s = v.strip() if isinstance(v, str) else ""
                if not s or s.casefold() in tokens:
                    label_missing += int(count)
                else:
                    label_values.add(s)
            groups = np.array([v.strip() if isinstance(v, str) and v.strip() and v.strip().casefold() not in tokens
                               else None for v in raw.to_numpy(dtype=object)], dtype=object)
        for i, st in state.items():
            st.add(chunk[i], fmt.decimal, tokens, groups)
    return state, label_values, label_missing


def _label_notes(path: Path, label: str, classes: list[str], label_missing: int) -> list[str]:
    """DataError when the label has no values; notes on empty label cells, one class only, or very many."""
    if not classes:
        raise DataError(f"the label column {_quote(label)} has no values", path=path)
    notes = []
    if label_missing:
        notes.append(f"the label column {_quote(label)} is empty on {label_missing} row(s) of the sample")
    if len(classes) == 1:
        notes.append(f"the label column {_quote(label)} has only one class, {_quote(classes[0])}")
    elif len(classes) > _MANY_CLASSES:
        notes.append(f"the label column {_quote(label)} has {len(classes)} distinct values; check that it is a "
                     "class label")
    return notes


def _decide(name: str, st: _ColumnStats, choices: ColumnChoices, publish: tuple[bool, bool, int],
            notes: list[str], classes: list[str] = ()) -> FeatureColumn | IgnoredColumn:
    """One column's type, levels, missing policy and public statistics (detected, then the analyst's choices),
    with a warning where the sample is too small to trust them (:func:`_small_sample_notes`)."""
    col = _quote(name)
    numeric = st.bad is None and st.count > 0
    wanted = "ignored" if name in choices.ignore else choices.types.get(name)
    if wanted == "ignored":
        notes.append(f"column {col} was left out by the analyst")
        return IgnoredColumn(name, "left out by the analyst")
    if wanted is not None and wanted not in COLUMN_TYPES:
        raise ConfigError(f"unknown column type {_quote(wanted)} for column {col}; the types are "
                          f"{', '.join(COLUMN_TYPES)}, ignored")
    if st.count == 0:
        notes.append(f"column {col} has no values and was left out")
        return IgnoredColumn(name, "no values in the sample")
    if not numeric:
        notes += _missing_code_notes(name, st)
    levels = st.levels(numeric)
    merged = {level: list(raw) for level, raw in choices.merged.get(name, {}).items()}
    order = list(choices.levels.get(name, []))
    if levels is not None and (order or merged):  # the kit's levels: the analyst's, then the sample's others
        taken = {_match_key(v) for raw in merged.values() for v in raw}
        rest = [lv for lv in levels if lv not in order and _match_key(lv) not in taken]
        kit_levels: list[str] | None = order + rest
    else:
        rest, kit_levels = [], levels
    kind = wanted
    if kind is None:
        reason = st.ignore_reason(numeric, levels)
        if reason is not None:
            notes.append(f"column {col} was left out ({reason})")
            return IgnoredColumn(name, reason)
        seen = kit_levels if merged else levels  # merging values (m, M, male → M) leaves fewer levels to count
        if numeric:  # two numbers make a binary column only in a sample big enough to have shown a third
            kind = "binary" if seen is not None and len(seen) == 2 and st.count >= SETTLE_ROWS else "numeric"
        else:
            kind = "binary" if len(seen) == 2 else "categorical"
    if kind == "numeric" and not numeric:
        raise ConfigError(f"column {col} cannot be numeric: the sample has {_quote(st.bad)} in it")
    if kind == "numeric" and name in choices.levels:
        raise ConfigError(f"column {col} is numeric, so it has no levels; give it a type with levels too")
    if kind != "numeric" and levels is None:
        limit = _MAX_NUMBERS if numeric else _MAX_DISTINCT
        raise ConfigError(f"column {col} has more than {limit:,} distinct values in the sample; it cannot be {kind}")
    if kind == "numeric" and merged:
        raise ConfigError(f"column {col} is numeric, so it has no levels to merge; give it a type with levels too")
    feature = FeatureColumn(name, type=kind)
    if kind != "numeric":
        if order and rest and kind == "ordinal":
            notes.append(f"level(s) {_quote_list(rest)} of column {col} were not given with --levels and were "
                         "put last")
        feature.levels = kit_levels
        feature.merged = merged or None
    if name in choices.other:  # kept for scripts: what it asked for is now every column's default
        notes.append(f"column {col}: --other is no longer needed: a value the kit does not know goes to the "
                     f"column's unseen bucket {UNSEEN_LEVEL}, which is no level (a level named 'other' stays a level)")
    notes += _small_sample_notes(name, kind, wanted is not None, st, numeric, feature.levels, feature.merged)
    set_choice(feature, choices.missing.get(name, default_choice(st.missing)))
    if st.missing:
        notes.append(f"column {col}: {sample_note(feature, st.missing, st.count + st.missing)}")
    _publish_statistics(feature, st, publish, numeric, classes)
    try:
        _check_feature(feature)
    except FormatError as exc:
        raise ConfigError(exc.message) from exc
    return feature


def _publish_statistics(feature: FeatureColumn, st: _ColumnStats, publish: tuple[bool, bool, int], numeric: bool,
                        classes: list[str]) -> None:
    """The sample's statistics the kit publishes of one column, only what is safe to publish of real rows
    (:mod:`core.data.public_stats`): its missing share; a numeric column's range (``with_ranges``, or a two-valued
    column's coding), mean and spread and per-class means and spreads over at least ``min_group`` rows; a typed
    column's level shares."""
    with_ranges, with_statistics, min_group = publish
    if not (with_ranges or with_statistics):
        return
    feature.missing_share = rounded_share(st.missing, st.count + st.missing, min_group)
    if feature.type == "numeric":
        if with_ranges or (st.numbers is not None and len(st.numbers) == 2):  # two numbers: their coding (0/1)
            feature.min, feature.max = rounded_range(st.lo, st.hi)  # (a whole-number coding stays as it is)
        if st.count >= min_group:
            feature.mean, feature.std = st.mean_std()
            if 2 <= len(classes) <= _MANY_CLASSES and st.by_class:
                feature.class_mean, feature.class_std = st.class_mean_std(classes, min_group)
    else:
        feature.frequencies = rounded_shares(st.level_counts(numeric, feature.levels, feature.merged), min_group)


@dataclass
class _ColumnStats:
    """What inference learns of one column in one pass: number statistics and its distinct text values."""

    count: int = 0
    missing: int = 0
    lo: float = math.inf
    hi: float = -math.inf
    bad: str | None = None  # the first cell that is not a number
    shift: float | None = None  # sums are of (x - shift), for a stable variance
    total: float = 0.0
    total_sq: float = 0.0
    integers: bool = True
    increasing: bool = True  # every number greater than the one before it, in file order
    last: float = -math.inf
    numbers: Counter | None = field(default_factory=Counter)  # number → rows (None: too many to track)
    texts: Counter | None = None  # stripped text → rows, once the column is known not to be all numbers
    overflow: int = 0  # the distinct-value limit a text column went past (its texts are then None)
    decimal: str = "."
    by_class: dict[str, list[np.ndarray]] | None = field(default_factory=dict)  # label → its rows' values
    kept: int = 0  # values kept in by_class (beyond _MAX_KEPT, none: no per-class statistics)

    def add(self, raw: Any, decimal: str, tokens: frozenset[str], groups: np.ndarray | None = None) -> None:
        """One chunk of the column (text cells; ``groups``: each row's label, None where it has none). Text values
        are counted only once a cell is not a number, so a column of numbers costs a parse, a count of its
        distinct numbers (capped) and per-class sums."""
        self.decimal = decimal
        values, missing, bad = _text_to_numbers(raw, decimal, tokens)
        bad |= ~missing & ~np.isfinite(values)
        self.missing += int(missing.sum())
        self.count += int((~missing).sum())
        if self.bad is None and bad.any():
            self.bad = str(raw.iloc[int(np.flatnonzero(bad)[0])]).strip()
            # the earlier chunks' numbers become levels as a number is written as a level ("1.0" → "1")
            self.texts = None if self.numbers is None else Counter(
                {level_text(v): k for v, k in self.numbers.items()})
            self.overflow = _MAX_NUMBERS if self.numbers is None else 0
        if self.bad is not None:
            if self.texts is not None:
                present = raw[~missing]
                self.texts.update(present.astype(str).str.strip().value_counts().to_dict())
                if len(self.texts) > _MAX_DISTINCT:
                    self.texts, self.overflow = None, _MAX_DISTINCT
            return
        present = values[~missing]
        if not present.size:
            return
        self.lo = min(self.lo, float(present.min()))
        self.hi = max(self.hi, float(present.max()))
        if self.shift is None:
            self.shift = float(present[0])
        d = present - self.shift
        self.total += float(d.sum())
        self.total_sq += float((d * d).sum())
        if groups is not None and self.by_class is not None:
            g = groups[~missing]
            for key in {k for k in g.tolist() if k is not None}:
                self.by_class.setdefault(key, []).append(present[g == key])
            self.kept += present.size
            if len(self.by_class) > _MANY_CLASSES or self.kept > _MAX_KEPT:
                self.by_class = None
        self.integers = self.integers and bool(np.all(present == np.rint(present)))
        self.increasing = self.increasing and present[0] > self.last and bool(np.all(np.diff(present) > 0))
        self.last = float(present[-1])
        if self.numbers is not None:
            distinct, counts = np.unique(present, return_counts=True)
            self.numbers.update(dict(zip(distinct.tolist(), counts.tolist(), strict=True)))
            if len(self.numbers) > _MAX_NUMBERS:
                self.numbers = None

    def levels(self, numeric: bool) -> list[str] | None:
        """The distinct values in order: numbers by value (written as levels are), text by the numbers it holds
        ("LT 8 yrs" < "8-12 yrs" < "MT 12 yrs") or else naturally (:func:`core.data.ordering.level_order`); None
        when too many."""
        if numeric:
            return None if self.numbers is None else [level_text(v) for v in sorted(self.numbers)]
        return None if self.texts is None else level_order(self.texts)

    def ignore_reason(self, numeric: bool, levels: list[str] | None) -> str | None:
        """Why a column is left out by default (identifier, free text, a single value), or None."""
        if numeric:
            if self.integers and self.increasing and not self.missing and self.count >= _MIN_ID_ROWS:
                return "identifier: every value is different (a row number)"
            return None
        if levels is None:
            return f"free text: more than {self.overflow:,} distinct values"
        if len(levels) == self.count and self.count > 1:
            return "identifier: every value is different"
        if len(levels) == 1:
            return f"a single value, {_quote(levels[0])}, in every row of the sample"
        if len(levels) <= MAX_LEVELS and len(levels) < self.count / 2:
            return None
        return f"free text: {len(levels):,} distinct values"

    def mean_std(self) -> tuple[float, float]:
        mean = self.total / self.count
        var = max(self.total_sq / self.count - mean * mean, 0.0) * self.count / max(self.count - 1, 1)
        return mean + (self.shift or 0.0), math.sqrt(var)

    def frequencies(self, numeric: bool, levels: list[str], merged: dict[str, list[str]] | None = None
                    ) -> list[float]:
        """Each level's share of the sample's non-missing cells, in ``levels`` order; the cells of the raw values
        merged into a level count as that level's."""
        counts = self.level_counts(numeric, levels, merged)
        total = sum(counts) or 1
        return [k / total for k in counts]

    def level_counts(self, numeric: bool, levels: list[str], merged: dict[str, list[str]] | None = None
                     ) -> list[int]:
        """Each level's count of the sample's non-missing cells, in ``levels`` order (merged raw values included)."""
        per: Counter = Counter()
        if numeric:
            for v, k in (self.numbers or {}).items():
                per[level_text(v)] += k
        else:
            per.update(self.texts or {})
        return [per[lv] + sum(per[_sample_text(v, numeric)] for v in (merged or {}).get(lv, [])) for lv in levels]

    def class_mean_std(self, classes: list[str], min_group: int = MIN_GROUP
                       ) -> tuple[list[float | None], list[float | None]]:
        """Per class (in ``classes`` order), the sample's mean and standard deviation; None for a class with fewer
        than ``min_group`` rows (the kit's rule for every mean it publishes, :mod:`core.data.public_stats`). A
        class's standard deviation s_c, a noisy estimate from a few rows (a 0/1
        column may show no 1 among them), is pulled toward the pooled within-class one s_w:
        √(((n_c − 1)·s_c² + k·s_w²) / (n_c − 1 + k)), k = :data:`_PRIOR_ROWS`."""
        values = {c: np.concatenate(parts) for c, parts in (self.by_class or {}).items()}
        var = {c: float(np.var(v, ddof=1)) for c, v in values.items() if v.size >= 2}
        dof = sum(values[c].size - 1 for c in var)
        pooled = sum((values[c].size - 1) * var[c] for c in var) / dof if dof > 0 else 0.0
        means: list[float | None] = []
        stds: list[float | None] = []
        for c in classes:
            n = values[c].size if c in values else 0
            if n < max(min_group, 2):
                means.append(None)
                stds.append(None)
                continue
            means.append(float(values[c].mean()))
            stds.append(math.sqrt(((n - 1) * var[c] + _PRIOR_ROWS * pooled) / (n - 1 + _PRIOR_ROWS)))
        return means, stds


def _sample_text(value: str, numeric: bool) -> str:
    """How the sample's counts name a raw value: a number as a level is written in a column of numbers."""
    return level_text(float(value)) if numeric and _NUMBER.match(value) else value


def _missed_share(rows: int) -> float:
    """How often a sample of ``rows`` rows shows no row of a value held by :data:`RARE_SHARE` of the patients."""
    return (1 - RARE_SHARE) ** rows


def _small_sample_notes(name: str, kind: str, chosen: bool, st: _ColumnStats, numeric: bool,
                        levels: list[str] | None, merged: dict[str, list[str]] | None) -> list[str]:
    """Where the sample is too small to trust a column's type or levels, one warning saying why and how many rows
    would settle it (:data:`SETTLE_ROWS`: a value held by 1 % of the patients then shows with 95 % probability):
    two numbers only (typed numeric, so another number at a site is just a number); a binary column's two levels;
    levels seen on one row (by Good–Turing, about n₁/n of the patients hold a level the sample lacks); a numeric
    column with a few whole numbers only (codes?)."""
    col = _quote(name)
    n = st.count
    small = n < SETTLE_ROWS
    missed = f"{_missed_share(n):.0%}"
    settle = f"about {SETTLE_ROWS} rows would settle it"
    if kind == "numeric" and numeric and st.numbers is not None:
        values = sorted(st.numbers)
        shown = ", ".join(level_text(v) for v in values)
        if len(values) == 2 and small and not chosen and n > 4:  # (fewer rows were never taken for binary)
            return [f"column {col}: only two numbers ({shown}) in the sample's {n:,} rows, too few to call it binary "
                    f"(a third value held by 1 % of patients is missed by {missed} of samples this size): it is "
                    f"numeric, so another number at a site is read as a number; if it is a yes/no column, give "
                    f"--type {name}=binary; {settle}"]
        if 2 < len(values) <= FEW_NUMBERS and small and st.integers and n >= 4 * len(values):  # repeated: codes?
            return [f"column {col}: only {len(values)} whole numbers ({shown}) in the sample's {n:,} rows: it is "
                    f"numeric (each step counts the same); if they are codes, give --type {name}=categorical (or "
                    f"ordinal); {settle}"]
        return []
    if kind == "binary" and small:
        return [f"column {col}: two levels ({', '.join(levels or [])}) in the sample's {n:,} rows, too few to trust "
                f"(a third level held by 1 % of patients is missed by {missed} of samples this size); a value the "
                f"kit does not know goes to the unseen bucket {UNSEEN_LEVEL}, read halfway between the two; {settle}"]
    if kind in ("categorical", "ordinal"):
        rows = dict(zip(levels or [], st.level_counts(numeric, levels or [], merged), strict=True))
        once = [lv for lv, k in rows.items() if k == 1]
        unseen_share = len(once) / n if n else 0.0
        if once and (small or unseen_share >= RARE_SHARE):
            rows_needed = max(SETTLE_ROWS, math.ceil(len(once) / RARE_SHARE))
            return [f"column {col}: level{'s' if len(once) > 1 else ''} {_quote_list(once)} "
                    f"appear{'s' if len(once) == 1 else ''} on one row{' each' if len(once) > 1 else ''} of the "
                    f"sample's {n:,}: about {unseen_share:.1%} of patients hold a level the sample lacks "
                    f"(Good–Turing); such levels go to the unseen bucket {UNSEEN_LEVEL} at each site; about "
                    f"{rows_needed:,} rows would settle it"]
    return []


def _missing_code_notes(name: str, st: _ColumnStats) -> list[str]:
    """A column of numbers but for a few cells that look like a source's missing-value code ("NA_NA", "n.a.",
    "-999"): one note naming them and the option that reads them as missing, before any site meets them."""
    if st.texts is None:
        return []
    codes = {v: k for v, k in st.texts.items() if _as_number(v, st.decimal) is None}
    numbers = st.count - sum(codes.values())
    if not codes or len(codes) > 3 or numbers < 0.8 * st.count or not all(looks_missing(v) for v in codes):
        return []
    shown = ", ".join(f"{_quote(v)} ({k:,} rows)" for v, k in codes.items())
    first = next(iter(codes))
    return [f"column {_quote(name)} holds numbers but for {shown}: if {_quote(first)} means a missing value, make the "
            f"kit with --missing-token {_quote(first)}; the kit then tells every site to read it as missing, and the "
            "column is numeric"]


def _as_number(text: str, decimal: str) -> float | None:
    """The number a sample cell writes with the file's decimal mark, or None."""
    t = text.strip()
    if decimal == ",":
        if "." in t:
            return None
        t = t.replace(",", ".")
    return float(t) if _NUMBER.match(t) else None
