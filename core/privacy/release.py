"""What a method releases of a site's rows: the declaration every method makes on the method seam
(:attr:`core.methods.base.Method.discloses`), which the privacy layer reads instead of guessing from array names.

=================== ============================================================== ==================================
kind                what leaves                                                    what the assessment measures
=================== ============================================================== ==================================
``reduced rows``    one private image of every row, beside the anchor's image     rows rebuilt through the anchor
                    (the DC family: DC, DC-CFL, FedDAG, DC-Clustering)             pairs and from a public sample;
                                                                                   membership on the export itself
``distilled rows``  a few made-up rows per class, beside (a subset of) the        membership and near copies, on a
                    anchor's image (HFLDD)                                         simulated release of half the rows
``prototypes``      averages of small groups of rows and the groups' sizes        membership on a simulated release;
                    (GOLD's micro-cluster centroids)                               the smallest group
``coefficients``    a model fitted on the rows: its coefficients (meta-lr)        membership by the model's loss on a
                                                                                   simulated release
``summaries``       other aggregates of all the rows (e.g. column means and       nothing here (no attack is known to
                    class counts)                                                  apply; said so)
=================== ============================================================== ==================================

Only a release of one image per row can be measured on the export itself: leaving a row's image out of it is the
export that row never joined (each image depends on its own row alone, the map aside). A joint release — a
summary, prototypes, distilled rows — mixes every row into every number, so its membership test needs a release
made without the rows held out (:func:`core.privacy.assessment.assess_export` simulates one on half the rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

REDUCED_ROWS = "reduced rows"
DISTILLED_ROWS = "distilled rows"
PROTOTYPES = "prototypes"
COEFFICIENTS = "coefficients"
SUMMARIES = "summaries"
KINDS = (REDUCED_ROWS, DISTILLED_ROWS, PROTOTYPES, COEFFICIENTS, SUMMARIES)
WORDS = {REDUCED_ROWS: "a compressed copy of every row", DISTILLED_ROWS: "distilled rows",
         PROTOTYPES: "averages of groups of rows", COEFFICIENTS: "a fitted model's coefficients",
         SUMMARIES: "summaries of all your rows"}


@dataclass(frozen=True)
class Release:
    """What one method's bundle releases of the site's rows.

    Parameters
    ----------
    kind : one of :data:`KINDS`.
    rows : the bundle array that holds it (the row images, the distilled rows, the prototypes, the coefficients).
    anchor : the bundle array holding the anchor's image beside it ("" when none ships).
    counts : the bundle array holding each prototype's group size ("" when none ships).
    anchor_rows : ``anchor_rows(anchor_total, shipped)`` → the indices of the anchor rows behind a shipped anchor
        image of ``shipped`` rows (None: the whole anchor, in order).
    predict : ``predict(coefficients, X)`` → each row's class probabilities under the released model
        (``coefficients`` kind).
    """

    kind: str
    rows: str
    anchor: str = ""
    counts: str = ""
    anchor_rows: Callable[[int, int], np.ndarray] | None = None
    predict: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown release kind {self.kind!r}; the kinds are {', '.join(KINDS)}")

    @property
    def per_row(self) -> bool:
        """Whether every row has an image of its own in the release (measured on the export itself)."""
        return self.kind == REDUCED_ROWS

    @property
    def words(self) -> str:
        return WORDS[self.kind]

    def anchor_pairs(self, anchor: np.ndarray, image: np.ndarray) -> np.ndarray:
        """The anchor rows behind a shipped anchor ``image`` (a subset of them for distilled rows)."""
        if self.anchor_rows is None or len(image) == len(anchor):
            return anchor
        return anchor[self.anchor_rows(len(anchor), len(image))]

    def ships(self, arrays: dict[str, np.ndarray]) -> bool:
        """Whether a bundle's ``arrays`` hold this release (a method may fit nothing at a site, e.g. too few rows)."""
        return all(not name or name in arrays for name in (self.rows, self.anchor, self.counts))


class Releasing(Protocol):
    """What the privacy layer needs of a method (:class:`core.methods.base.Method`): its declaration, its settings and
    its site computation, to simulate a release of fewer rows."""

    name: str
    settings: dict
    discloses: Release

    def site_compute(self, site: Any, control: Any = None) -> Any: ...

    def site_settings_spec(self) -> tuple: ...
