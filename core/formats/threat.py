"""The threat model a kit declares (issue #35): which adversaries each site's privacy assessment counts against
an export, shown to every site before it exports (docs/privacy-and-security.md §"The threat model").

Two adversaries are always measured:

* **the analyst alone**, honest but curious, holding the bundle, the kit's public statistics and a public sample
  of up to ``public_rows`` rows like the site's (the kit's own sample, or a published cohort). Always in scope:
  no kit can declare the analyst blind to public data;
* **the analyst with one other site**, which holds the anchor (every site does, by design) and rows of its own.
  In scope unless the kit declares ``collusion`` false ("sites do not work with the analyst"): then its
  findings are still measured and shown, but an export they judge poor needs no confirmation.

The kit's optional ``threat_model`` block is omitted when it is the default (collusion in scope, 1,000 public
rows), so kits made before it keep their digest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError, FormatError
from .fields import kit_block

DEFAULT_PUBLIC_ROWS = 1000
MAX_PUBLIC_ROWS = 1_000_000
CHOICES = ("collusion", "no-collusion")  # ``kit new --threat-model``


@dataclass(frozen=True)
class ThreatModel:
    """Which adversaries count (module docstring).

    collusion : the analyst may work with one other site, which holds the anchor and rows like yours.
    public_rows : the rows of a public sample like the site's that the analyst (and a colluding site) may hold;
        the assessment stands in for them with at most this many of the site's own rows, never the rows it
        attacks (at most half of them).
    """

    collusion: bool = True
    public_rows: int = DEFAULT_PUBLIC_ROWS

    def __post_init__(self):
        if not isinstance(self.collusion, bool):
            raise ConfigError(f"the threat model's 'collusion' must be true or false, got {self.collusion!r}")
        if isinstance(self.public_rows, bool) or not isinstance(self.public_rows, int) \
                or not 0 <= self.public_rows <= MAX_PUBLIC_ROWS:
            raise ConfigError(f"the threat model's 'public_rows' must be a whole number from 0 to {MAX_PUBLIC_ROWS:,}, "
                              f"got {self.public_rows!r}")

    @property
    def name(self) -> str:
        return CHOICES[0] if self.collusion else CHOICES[1]

    def in_scope(self, adversary_colludes: bool) -> bool:
        """Whether a finding of an adversary that needs a colluding site (or not) counts against the export."""
        return self.collusion or not adversary_colludes

    def kit_block(self) -> dict:
        """The kit's ``threat_model`` block: only what differs from the default (empty when nothing does)."""
        out: dict = {}
        if not self.collusion:
            out["collusion"] = False
        if self.public_rows != DEFAULT_PUBLIC_ROWS:
            out["public_rows"] = self.public_rows
        return out

    def to_dict(self) -> dict:
        return {"collusion": self.collusion, "public_rows": self.public_rows}

    @classmethod
    def from_dict(cls, d: dict | None) -> ThreatModel:
        """Read a kit's ``threat_model`` block (FormatError naming what is wrong)."""
        if d is None:
            return cls()
        kit_block(d, "threat_model", ("collusion", "public_rows"))
        try:
            return cls(**d)
        except ConfigError as exc:
            raise FormatError(f"the kit's {exc.message}") from exc

    @classmethod
    def given(cls, choice: str | None = None, public_rows: int | None = None) -> ThreatModel:
        """The threat model an analyst states in a new kit (``--threat-model``, ``--public-rows``)."""
        if choice is not None and choice not in CHOICES:
            raise ConfigError(f"--threat-model takes {' or '.join(CHOICES)}, got {choice!r}")
        return cls(collusion=choice != CHOICES[1],
                   public_rows=DEFAULT_PUBLIC_ROWS if public_rows is None else int(public_rows))

    def lines(self) -> list[str]:
        """The threat model in plain words, one line per adversary (shown to every site before export)."""
        rows = f"{self.public_rows:,}"
        alone = (f"The analyst alone: honest but curious; may hold a public sample of up to {rows} rows like yours "
                 "(the kit's own sample or a published cohort) — always counted.")
        if self.collusion:
            other = ("The analyst working with one other site, which holds the anchor and rows of its own: "
                     "counted (the kit does not rule it out).")
        else:
            other = ("The analyst working with one other site: the kit declares that sites do not work with the "
                     "analyst — measured and shown, not counted against your export.")
        return [alone, other]
