"""The limits a privacy assessment judges an export against (docs/privacy-and-security.md §"Thresholds").

The kit may state them (its optional ``privacy`` block, omitted when every value is the default, so kits
made before it keep their digest); a site may only make them stricter. Each default is justified by a
measurement in docs/results/privacy/: e.g. guessing every cell as its column's mean already misses by a median
0.67 spread on normal data (0.50–0.76 on the benchmark tables), so a rebuild whose median error is below half a
spread (and below 90 % of that guess's) knows the rows better than their averages do.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from ..errors import ConfigError, FormatError
from .fields import kit_block

# name → (direction, plain words). "min": a larger limit is stricter; "max": a smaller limit is stricter.
DIRECTIONS = {
    "reconstruction_error_min": ("min", "the median error of a rebuilt value, in shares of its column's spread"),
    "recovered_share_max": ("max", "the share of rows rebuilt with every value within 10 % of its column's "
                                   "spread"),
    "membership_auc_max": ("max", "how well someone holding a patient's record can tell whether that patient "
                                  "was in your rows (0.5 = a coin toss, 1 = always)"),
    "membership_tpr_at_1pct_max": ("max", "the share of your patients recognised when only 1 % of outsiders "
                                          "are wrongly accused"),
    "nearest_record_ratio_min": ("min", "how close shipped rows come to your real rows, against rows that never "
                                        "left (1 = no closer)"),
    "group_size_min": ("min", "the fewest patients behind any shipped average"),
}


@dataclass(frozen=True)
class PrivacyThresholds:
    """Limits of the measured disclosure (each attack's verdict is "poor" when a number passes its limit).

    reconstruction_error_min : a colluding (or lone) rebuild's median relative cell error |x̂ − x| / sd_j must be
        at least this (0/1 columns: the share of cells wrong after rounding), unless it is no better than 90 % of
        the error of guessing every value as its column's mean (what the kit's public statistics already give).
    recovered_share_max : the share of rows with every column within 10 % of its spread must be at most this.
    membership_auc_max, membership_tpr_at_1pct_max : the distance-to-closest-shipped-row membership test's
        ROC AUC and its true-positive rate at 1 % false positives must be at most these.
    nearest_record_ratio_min : median distance from a shipped (distilled) row to the closest member row over the
        same to the closest hold-out row must be at least this.
    group_size_min : the smallest group behind any shipped average must hold at least this many rows.
    """

    reconstruction_error_min: float = 0.5
    recovered_share_max: float = 0.05
    membership_auc_max: float = 0.6
    membership_tpr_at_1pct_max: float = 0.05
    nearest_record_ratio_min: float = 0.8
    group_size_min: int = 5

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"the privacy threshold '{f.name}' must be a number ≥ 0, got {v!r}")
        for name in ("recovered_share_max", "membership_tpr_at_1pct_max"):
            if getattr(self, name) > 1:
                raise ConfigError(f"the privacy threshold '{name}' is a share: give a number from 0 to 1")
        if not 0.5 <= self.membership_auc_max <= 1:
            raise ConfigError("the privacy threshold 'membership_auc_max' must be from 0.5 to 1")

    def to_dict(self) -> dict:
        """Every limit (the raw record of an assessment)."""
        return asdict(self)

    def kit_block(self) -> dict:
        """The kit's ``privacy`` block: only the limits that differ from the defaults (empty when none do)."""
        default = PrivacyThresholds()
        return {k: v for k, v in asdict(self).items() if v != getattr(default, k)}

    @classmethod
    def from_dict(cls, d: dict | None) -> PrivacyThresholds:
        """Read a kit's ``privacy`` block (FormatError when it is not an object of known numeric limits)."""
        if d is None:
            return cls()
        kit_block(d, "privacy", DIRECTIONS, noun="limit")
        try:
            return cls(**{k: _number(k, v) for k, v in d.items()})
        except ConfigError as exc:
            raise FormatError(f"the kit's {exc.message}") from exc

    @classmethod
    def given(cls, values: dict) -> PrivacyThresholds:
        """Limits as the analyst states them in a new kit (any valid value; ConfigError naming a bad one)."""
        return cls(**{k: _number(k, v) for k, v in values.items()})

    def stricter(self, changes: dict[str, float]) -> PrivacyThresholds:
        """These limits with ``changes`` applied; ConfigError when a change would loosen a limit (a site may
        only tighten what the kit states)."""
        for name, value in changes.items():
            if name not in DIRECTIONS:
                raise ConfigError(f"unknown privacy threshold '{name}'; known: {', '.join(DIRECTIONS)}")
            current = getattr(self, name)
            looser = value < current if DIRECTIONS[name][0] == "min" else value > current
            if looser:
                raise ConfigError(f"the privacy threshold '{name}' can only be made stricter here: the kit says "
                                  f"{current:g}, so give a value {'≥' if DIRECTIONS[name][0] == 'min' else '≤'} "
                                  f"{current:g} (not {value:g})")
        return replace(self, **{k: _number(k, v) for k, v in changes.items()})


def _number(name: str, value) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"privacy threshold '{name}' must be a number, got {value!r}")
    return int(value) if name == "group_size_min" and float(value).is_integer() else float(value)


def parse_threshold_args(items: list[str] | None) -> dict[str, float]:
    """``NAME=VALUE`` pairs from the command line (``--privacy-threshold``) → {name: value}."""
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = str(item).partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in DIRECTIONS:
            raise ConfigError(f"--privacy-threshold takes NAME=VALUE with NAME one of {', '.join(DIRECTIONS)}; "
                              f"got {item!r}")
        try:
            out[name] = float(value)
        except ValueError as exc:
            raise ConfigError(f"--privacy-threshold {name} needs a number, got {value!r}") from exc
    return out
