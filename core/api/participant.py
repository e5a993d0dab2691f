"""A site's side (see :mod:`core.api`): the export round and its anchor, what leaves and what the levers do to it,
and ``apply``. The analyst's side never imports this module (it holds the anchor secret)."""

from ..data.encoding import encoded_ranges
from ..formats.anchor import KINDS as ANCHOR_KINDS
from ..formats.anchor import SHAREABLE_WARNING, AnchorFile, anchor_for_kit, make_anchor
from ..participant import (
    ALREADY_APPLIED,
    ApplyResult,
    ParticipantRound,
    analyst_pin_status,
    apply_package,
    load_anchor,
    needs_anchor,
)
from ..privacy.assessment import PrivacyAssessment
from ..privacy.levers import (
    EPSILON_SETTING,
    LEVER_WORDS,
    USELESS_AUC,
    LeverOption,
    Levers,
    finding_key,
    formal_words,
    measure_levers,
    summarise,
)

__all__ = ["ALREADY_APPLIED", "ANCHOR_KINDS", "EPSILON_SETTING", "LEVER_WORDS", "SHAREABLE_WARNING", "USELESS_AUC",
           "AnchorFile", "ApplyResult", "LeverOption", "Levers", "ParticipantRound", "PrivacyAssessment",
           "analyst_pin_status", "anchor_for_kit", "apply_package", "encoded_ranges", "finding_key", "formal_words",
           "load_anchor", "make_anchor", "measure_levers", "needs_anchor", "summarise"]
