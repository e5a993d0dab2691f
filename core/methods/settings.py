"""A method's settings declared as data (in the spirit of scikit-learn's parameter constraints).

Every setting a method accepts is one :class:`Setting`: its name, kind, default, allowed range or
choices, a one-line help and which side chooses it. The CLI's ``--set`` and ``--help``, the analyst's
settings form, the participant's privacy page and the kit's validation are all generated from these
declarations; nothing outside :mod:`core.methods` lists a method's settings by hand.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

KINDS = ("int", "float", "bool", "choice", "text", "int_pair", "float_list", "int_list")
SIDES = ("analyst", "site")


@dataclass(frozen=True)
class Setting:
    """One setting of a method.

    kind : ``int`` | ``float`` | ``bool`` | ``choice`` | ``text`` | ``int_pair`` (two whole numbers, low ≤ high)
        | ``float_list`` | ``int_list``.
    auto : the value may also be ``"auto"`` (the method chooses; ``auto_help`` says how).
    optional : the value may be ``None`` (``none_help`` says what the method then does, e.g. "m − 1").
    side : ``analyst`` (fixed in the signed kit, the same for every site) or ``site`` (each participant
        chooses at export, on the privacy page or with ``participant export --NAME``).
    advanced : shown in the GUI's advanced table instead of a form row.
    at_run : the analyst may change it when running the analysis (Models page; ``analyst run --set``).
    role : ``threshold`` marks the setting the Clients page's draggable line sets.
    high_from : ``columns`` bounds the value by the site's number of columns (known only at the site).
    """

    name: str
    kind: str
    default: Any
    help: str
    label: str = ""
    choices: tuple = ()
    choice_help: tuple = ()  # one phrase per choice, for people (same order as choices)
    low: float | None = None
    high: float | None = None
    auto: bool = False
    auto_help: str = ""
    optional: bool = False
    none_help: str = ""
    side: str = "analyst"
    advanced: bool = False
    at_run: bool = False
    role: str = ""
    high_from: str = ""  # "columns": at most the site's number of columns (checked at the site)

    def __post_init__(self):
        if self.kind not in KINDS or self.side not in SIDES:
            raise ValueError(f"setting {self.name}: kind {self.kind!r} / side {self.side!r}")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")

    def describe(self) -> str:
        """One line for ``--help``: name, what it is, allowed values and default."""
        allowed = self.allowed()
        return f"{self.name}: {self.help} ({allowed}; default {json.dumps(self.default)})"

    def allowed(self) -> str:
        parts = []
        if self.kind == "choice":
            parts.append(" | ".join(str(c) for c in self.choices))
        elif self.kind in ("int", "float"):
            word = "whole number" if self.kind == "int" else "number"
            if self.low is not None and self.high is not None:
                parts.append(f"{word} {self.low:g}…{self.high:g}")
            elif self.low is not None:
                parts.append(f"{word} ≥ {self.low:g}")
            else:
                parts.append(word)
        elif self.kind == "bool":
            parts.append("true | false")
        elif self.kind == "int_pair":
            parts.append("[low, high]")
        elif self.kind in ("float_list", "int_list"):
            parts.append("a list of numbers")
        else:
            parts.append("text")
        if self.auto:
            parts.append("auto")
        if self.optional:
            parts.append("null")
        return " or ".join(parts)

    # ---- values ---------------------------------------------------------------------------------------------
    def parse(self, text: str) -> Any:
        """A value from command-line text: JSON when it parses (``0.3``, ``[2, 8]``, ``true``), else the text."""
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        return self.check(value)

    def check(self, value: Any) -> Any:
        """The value, normalised (e.g. 3 → 3.0 for a float); ConfigError with one sentence if not allowed."""
        if self.auto and value == "auto":
            return "auto"
        if self.optional and value is None:
            return None
        bad = ConfigError(f"setting '{self.name}' must be {self.allowed()}, got {json.dumps(value, default=str)}")
        k = self.kind
        if k == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if k == "choice":
            if value not in self.choices:
                raise bad
            return value
        if k == "text":
            if not isinstance(value, str):
                raise bad
            return value
        if k in ("int", "float"):
            return self._number(value, k == "int", bad)
        if k == "int_pair":
            if not isinstance(value, list | tuple) or len(value) != 2:
                raise bad
            lo, hi = (self._number(v, True, bad) for v in value)
            if lo > hi:
                raise bad
            return [lo, hi]
        if not isinstance(value, list | tuple) or not value:  # the lists
            raise bad
        return [self._number(v, k == "int_list", bad) for v in value]

    def _number(self, value: Any, whole: bool, bad: ConfigError) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if whole and (isinstance(value, float) and not value.is_integer()):
            raise bad
        if not math.isfinite(value):
            raise bad
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise bad
        return int(value) if whole else float(value)


def check_settings(owner: str, declared: tuple[Setting, ...], given: dict, *, side: str) -> dict:
    """Defaults of ``side`` overlaid with ``given``, each value checked; ConfigError on an unknown name."""
    specs = {s.name: s for s in declared if s.side == side}
    unknown = sorted(set(given) - set(specs))
    if unknown:
        others = {s.name for s in declared if s.side != side}
        where = [f"'{n}' is chosen by the {'site' if side == 'analyst' else 'analyst'}" for n in unknown if n in others]
        hint = f" ({'; '.join(where)})" if where else f"; {owner}'s settings are {', '.join(specs) or 'none'}"
        raise ConfigError(f"unknown setting(s) for {owner}: {', '.join(unknown)}{hint}")
    return {name: spec.check(given[name]) if name in given else spec.default for name, spec in specs.items()}
