"""DC Studio's public API: every name the app (``gui/``), the command line (:mod:`core.cli`) and the benchmarks call.

Nothing outside ``core`` imports anything else of it (``lint-imports`` holds ``gui`` and ``benchmarks`` to these
modules). The API has one module per audience, so each front end loads only what it needs:

======================== ===================================================================================
module                   what it holds
======================== ===================================================================================
:mod:`core.api`          the basics every front end uses, light (no numpy, pandas, scikit-learn or torch):
                         errors, progress and cancel, atomic files, identities, the kit's privacy limits and
                         threat model, shown text, the words people read, whether a window can open
:mod:`core.api.common`   what both roles use: kits, workspaces, sealed files, reading CSVs and schemas, the
                         missing-value vocabulary, the methods behind their seam (registry, results, views,
                         settings, what each releases), figures and the kit's privacy limits and threat model
:mod:`core.api.participant` a site's side: the export round, the anchor, the privacy levers, ``apply``
:mod:`core.api.analyst`  the analyst's side: the kit builder, the analysis round, its state and the report; it
                         never reaches the anchor secret (an import-linter contract)
:mod:`core.api.research` for experiments only (``benchmarks/``): the methods' algorithms and building blocks
======================== ===================================================================================

The method seam itself (:class:`core.methods.base.Method`: ``site_compute``, ``check_bundle``, ``fit``, ``apply``
and what a method shows) is documented with Parameters and Returns where it is declared.
"""

from .. import __version__, version_string
from ..control import JobControl, ensure
from ..display import check_display
from ..errors import (
    AuditLogRefused,
    Cancelled,
    ConfigError,
    DataError,
    DCError,
    FormatError,
    UnconfirmedSender,
    VerificationError,
)
from ..fileio import (
    atomic_writer,
    canonical_json,
    safe_name,
    utc_now,
    write_json_atomic,
    write_text_atomic,
)
from ..formats.identity import (
    MIN_PASSPHRASE_CHARS,
    SCRYPT_LOG_N_DEFAULT,
    SCRYPT_LOG_N_MIN,
    Identity,
    PublicCard,
    check_name,
    check_new_passphrase,
    passphrase_ok,
    passphrase_score,
    read_fingerprint,
)
from ..formats.threat import CHOICES as THREAT_CHOICES
from ..formats.threat import DEFAULT_PUBLIC_ROWS, ThreatModel
from ..formats.thresholds import DIRECTIONS, PrivacyThresholds, parse_threshold_args
from ..safe_text import is_safe, shown, shown_lines
from ..wording import ANCHOR_WORDS, KEPT_OWN_WORDS, leaves_sentence

__all__ = ["ANCHOR_WORDS", "DEFAULT_PUBLIC_ROWS", "DIRECTIONS", "KEPT_OWN_WORDS", "MIN_PASSPHRASE_CHARS",
           "SCRYPT_LOG_N_DEFAULT", "SCRYPT_LOG_N_MIN", "THREAT_CHOICES", "PrivacyThresholds", "ThreatModel",
           "parse_threshold_args",
           "AuditLogRefused", "Cancelled", "ConfigError", "DCError", "DataError", "FormatError", "Identity",
           "JobControl", "PublicCard", "UnconfirmedSender", "VerificationError", "__version__", "atomic_writer",
           "canonical_json", "check_display", "check_name", "check_new_passphrase", "ensure", "is_safe",
           "leaves_sentence", "passphrase_ok", "passphrase_score", "read_fingerprint", "safe_name", "shown",
           "shown_lines", "utc_now", "version_string", "write_json_atomic", "write_text_atomic"]
