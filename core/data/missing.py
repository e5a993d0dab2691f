"""Missing values: the one rule that fills them and the one vocabulary that names it, from the kit to the app.

**Vocabulary.** A kit column's policy is one of :data:`CHOICES`. The analyst chooses it (``kit new --missing
COL=CHOICE``, the app's schema grid) and everyone reads it in the same :data:`WORDS` (``kit new``/``kit show``,
the schema grid, the model card; :data:`HELP` says what each does). The kit file stores a choice as two fields
of the column, ``missing`` (one of :data:`KIT_POLICIES`) and ``indicator`` (a 0/1 "was missing" matrix column,
only with imputation). The table :data:`POLICIES` is the only translation between the three (:func:`choice_of`,
:func:`words_of` and :func:`set_choice` look it up):

==================== ============================ ====================
choice               kit: ``missing``, indicator  words
==================== ============================ ====================
``refuse``           refuse, no                   refuse missing
``impute``           impute, no                   impute
``impute+indicator`` impute, yes                  impute + indicator
==================== ============================ ====================

By default (:func:`default_choice`) a column imputes, with an indicator when the sample has missing cells in it.

**The rule** (:func:`fill_for`), the same at export and at apply, for every reader (:func:`core.data.tabular.
read_table` through :class:`Filling`, :func:`core.data.encoding.encode_frame`): a column whose policy refuses
missing cells is never filled (its reader names the first such cell); otherwise its missing cells take the value
given (``apply`` reuses the export's), else the site's own (:func:`site_fill_value`: the median of its numbers,
or its most frequent level), else — for a column of which this site has no value at all — the kit's published one
(:func:`kit_fill_value`: a numeric column's sample mean or the middle of its range, a typed column's most frequent
level; none when the kit publishes no shares or statistics, and then the column is named in one refusal,
:func:`unfillable_error`). Under a formal privacy option every fill is the kit's (:func:`public_fills`): a value
computed from the site's own rows would make one row's image depend on the others. Kits made before the kit
decided missing values may fill a refusing numeric column with the site's mean (``CsvOptions.impute = "mean"``).

**Markers.** A cell is missing when it is empty or one of the missing-value markers (:func:`missing_token_set`:
stripped and case-folded); :func:`looks_missing` spots a source's own code that is not (yet) one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError, DataError

# The one vocabulary: each policy as people choose it, as the kit stores it (``missing``, ``indicator``), as people
# read it. Everything below is a lookup in this table.
POLICIES = (("refuse", "refuse", False, "refuse missing"),
            ("impute", "impute", False, "impute"),
            ("impute+indicator", "impute", True, "impute + indicator"))
CHOICES = tuple(choice for choice, *_ in POLICIES)
KIT_POLICIES = ("refuse", "impute")  # the kit file's ``missing`` field
WORDS = {choice: words for choice, _, _, words in POLICIES}
_CHOICE_OF = {(missing, indicator): choice for choice, missing, indicator, _ in POLICIES}
_FIELDS_OF = {choice: (missing, indicator) for choice, missing, indicator, _ in POLICIES}
_WORDS_OF = {(missing, indicator): words for _, missing, indicator, words in POLICIES}
# The older kits' fill (a refusing numeric column filled with the site's own mean), as the app and the CLI name it
LEGACY_MEAN = "Older kits: fill missing values with the mean of my own column"
HELP = ("refuse missing: a row with an empty cell in the column stops the site's export. impute: each site fills an "
        "empty cell with its own median (numbers) or most frequent level, or with the kit's value when it has no "
        "value in the column at all. impute + indicator: the same, and a 0/1 column tells the model which cells "
        "were filled.")


class Column(Protocol):
    """What the rule needs of a kit column (:class:`core.data.schema.FeatureColumn`)."""

    name: str
    type: str
    levels: list[str] | None
    missing: str
    indicator: bool
    min: float | None
    max: float | None
    mean: float | None
    frequencies: list[float] | None

    @property
    def typed(self) -> bool: ...

    @property
    def known_levels(self) -> list[str]: ...


# ---- the vocabulary -------------------------------------------------------------------------------------------
def choice_of(column: Column) -> str:
    """The column's policy as people choose it: ``refuse``, ``impute`` or ``impute+indicator``."""
    return _CHOICE_OF[(column.missing, bool(column.indicator))]


def words_of(column: Column) -> str:
    """The column's policy as people read it (:data:`WORDS`)."""
    return _WORDS_OF[(column.missing, bool(column.indicator))]


def check_choice(choice: str, column: str) -> str:
    """``choice`` if it is one of :data:`CHOICES`, else ConfigError naming the column and the choices."""
    if choice not in CHOICES:
        raise ConfigError(f"unknown missing-value policy '{choice}' for column '{column}'; choose one of "
                          f"{', '.join(CHOICES)}")
    return choice


def set_choice(column: Column, choice: str) -> None:
    """Store ``choice`` in the column's kit fields (``missing``, ``indicator``); ConfigError naming the choices."""
    column.missing, column.indicator = _FIELDS_OF[check_choice(choice, column.name)]


def default_choice(sample_missing: int) -> str:
    """A column's policy unless the analyst chooses: impute, with an indicator when the sample has missing cells."""
    return "impute+indicator" if sample_missing else "impute"


def fills(column: Column, legacy_mean: bool = False) -> bool:
    """Whether the rule fills this column's missing cells: it imputes, or (``legacy_mean``, kits made before the kit
    decided missing values) it is a refusing numeric column the site fills with its own mean."""
    return column.missing == "impute" or (legacy_mean and not column.typed)


def sample_note(column: Column, missing: int, total: int) -> str:
    """What ``kit new`` says of a column with missing cells in the sample (after "column NAME: "): how many, and
    what sites will do with them."""
    share = f"{100 * missing / total:.0f} %" if missing * 100 >= total else "under 1 %"
    what = f"{missing:,} of {total:,} cells missing in the sample ({share})"
    if column.missing == "refuse":
        return f"{what}: the kit refuses missing cells in it, so sites must fill them"
    how = "their own most frequent level" if column.typed else "their own median"
    return f"{what}: sites fill them with {how}" + (" and add a 'was missing' column" if column.indicator else "")


# ---- the rule -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fill:
    """The value a column's missing cells get and where it came from: "given" (``apply`` reuses the export's),
    "site" (this file's own median, most frequent level or, for older kits, mean) or "kit" (the kit's published
    value, for a column with no value in this file)."""

    value: float | str
    source: str


def site_fill_value(column: Column, values: np.ndarray) -> float | str:
    """What fills this site's missing cells: the median of its numbers (numeric column), else its most frequent
    level (ties go to the earlier kit level; "other" counts as a level). DataError if it has no value at all.
    ``values``: float64 with NaN where missing (numeric), or level codes, negative where missing (typed)."""
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


def kit_fill_value(column: Column) -> float | str | None:
    """What the kit publishes to fill a column: a numeric column's sample mean (or the middle of its published
    range when only that is published), a typed column's most frequent sample level; None when the kit publishes
    neither (a kit made with ``--no-statistics``): then nothing public can fill it."""
    if column.typed:
        if not column.frequencies or not column.levels:
            return None
        return column.levels[int(np.argmax(column.frequencies))]
    if column.mean is not None:
        return float(column.mean)
    if column.min is not None and column.max is not None:
        return (float(column.min) + float(column.max)) / 2
    return None


def public_fills(features: Iterable[Column]) -> tuple[dict[str, float | str], list[str]]:
    """(every column's fill from the kit's public values, :func:`kit_fill_value`; the columns it has none for):
    what a formal export fills with instead of the site's own values."""
    out: dict[str, float | str] = {}
    lacking: list[str] = []
    for f in features:
        value = kit_fill_value(f)
        if value is None:
            lacking.append(f.name)
        else:
            out[f.name] = value
    return out, lacking


def fill_for(column: Column, values: np.ndarray, given: float | str | None = None, *,
             mean: bool = False) -> Fill | None:
    """The missing-value rule (module doc): ``given`` if any; else this site's own value (:func:`site_fill_value`;
    ``mean``: the mean of its numbers, the older kits' imputation); else, when no cell of the column holds a value
    here, the kit's (:func:`kit_fill_value`). None when nothing can fill it: the caller names every such column in
    one sentence (:func:`unfillable_error`). ``values``: float64 with NaN where missing (numeric), or level codes
    (typed)."""
    if given is not None:
        return Fill(given, "given")
    present = values >= 0 if column.typed else ~np.isnan(values)
    if present.any():
        if mean and not column.typed:
            return Fill(float(np.mean(values[present])), "site")
        return Fill(site_fill_value(column, values), "site")
    kit = kit_fill_value(column)
    return None if kit is None else Fill(kit, "kit")


def fill_code(column: Column, value: float | str) -> float | int:
    """A fill value as the column holds it: a finite number, or the level's code. DataError if it does not fit."""
    if column.typed:
        if not isinstance(value, str) or value not in column.known_levels:
            raise DataError(f"the fill value {value!r} of column '{column.name}' is not one of its levels")
        return column.known_levels.index(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise DataError(f"the fill value {value!r} of column '{column.name}' is not a finite number")
    return float(value)


def kit_fill_note(column: Column, fill: Fill) -> str:
    """The sentence a site reads when a column it has no value of is filled with the kit's value."""
    what = (f"the kit's most frequent level {fill.value!r}" if column.typed
            else f"the kit's sample value {float(fill.value):.6g}")
    marked = f" and marked in its '{column.name} (missing)' column" if column.indicator else ""
    return f"column '{column.name}' has no value in any row of this file: filled with {what}{marked}"


def unfillable_error(names: list[str], path: Any = None) -> DataError:
    """One sentence for every column that has no value in any row and nothing to fill it with, and one remedy."""
    shown = ", ".join(f"'{n}'" for n in names)
    columns = f"column {shown} has" if len(names) == 1 else f"columns {shown} have"
    return DataError(f"{columns} no value in any row of this file, and the kit publishes no sample value to fill "
                     f"{'it' if len(names) == 1 else 'them'} with; ask the analyst for a kit that publishes the "
                     "sample's statistics (kit new --statistics, the default) or that leaves "
                     f"{'it' if len(names) == 1 else 'them'} out (kit new --ignore {','.join(names)})", path=path)


@dataclass
class Filling:
    """The rule applied to one table, column by column: what it filled, with what, and what a site is told.

    ``given``: fill values that win over the site's own (``apply`` reuses the export's; a formal export the kit's,
    :func:`public_fills`). ``legacy_mean``: the older kits' mean imputation of refusing numeric columns. Call
    :meth:`column` for each column with missing cells its policy fills (:func:`fills`), then :meth:`finish`."""

    given: dict[str, float | str] = field(default_factory=dict)
    legacy_mean: bool = False
    filled: dict[str, int] = field(default_factory=dict)  # cells filled per column
    used: dict[str, float | str] = field(default_factory=dict)  # the value each filled column got
    notes: dict[str, str] = field(default_factory=dict)  # columns filled with the kit's value: the sentence
    unfillable: list[str] = field(default_factory=list)

    def column(self, column: Column, values: np.ndarray, missing: np.ndarray) -> None:
        """Fill ``values[missing]`` in place by :func:`fill_for` (nothing when no cell is missing)."""
        count = int(np.count_nonzero(missing))
        if not count:
            return
        fill = fill_for(column, values, self.given.get(column.name),
                        mean=self.legacy_mean and column.missing == "refuse")
        if fill is None:
            self.unfillable.append(column.name)
            return
        if fill.source == "kit":
            self.notes[column.name] = kit_fill_note(column, fill)
        self.used[column.name] = fill.value if column.typed else float(fill.value)
        values[missing] = fill_code(column, fill.value)
        self.filled[column.name] = count

    def finish(self, order: list[str], path: Any = None) -> tuple[dict[str, int], dict[str, float | str], list[str]]:
        """(cells filled per column, the value used per filled column, notes on columns filled with the kit's value),
        in ``order`` (the kit's column order); DataError naming every column nothing could fill."""
        at = {n: i for i, n in enumerate(order)}
        if self.unfillable:
            raise unfillable_error(sorted(self.unfillable, key=at.__getitem__), path=path)
        names = sorted(self.filled, key=at.__getitem__)
        return ({n: self.filled[n] for n in names}, {n: self.used[n] for n in names},
                [self.notes[n] for n in names if n in self.notes])


# ---- markers ----------------------------------------------------------------------------------------------------
def missing_token_set(tokens: Iterable[str]) -> frozenset[str]:
    """The missing-value markers as cells are compared with them: stripped and case-folded, so 'n/a', ' N/A '
    and 'N/a' are one marker (compare ``cell.strip().casefold()``)."""
    return frozenset(t.strip().casefold() for t in tokens)


def looks_missing(value: str) -> bool:
    """Whether a cell looks like a missing-value code a source wrote (``NA_NA``, ``n.a.``, ``#N/A``, ``missing``,
    ``unknown``, ``.``, ``-``, ``-999``): such a value is named with the option that reads it as missing."""
    s = value.strip().casefold()
    if not s:
        return False
    if re.fullmatch(r"[-.?*#/_\s]+", s) or re.fullmatch(r"-?9{2,}(?:\.0+)?", s):
        return True
    letters = re.sub(r"[^a-z]", "", s)
    return letters in {"na", "nana", "nan", "nd", "nk", "null", "none", "nil", "missing", "unknown", "unk",
                       "notavailable", "notknown", "notdone", "blank", "empty", "void"}


def missing_token_hint(value: str, *, named: bool = True) -> str:
    """How a site reads a value as missing: the command-line option and the app's box (``named``: the sentence
    names the value again, where the sentence before it did not)."""
    which = f"'{value}'" if named else "it"
    return (f"if {which} means a missing value, add it to the missing-value markers (CLI: --missing-token "
            f"'{value}'; in the app: 'Also treat as missing')")
