"""The analyst's side (see :mod:`core.api`): the kit builder, the analysis round (import, run, outputs), its state
for the app, and the report. It never reaches the anchor secret (``lint-imports`` checks it)."""

from ..analyst import AnalystRound, ImportReport, RunOutputs, left_out_line, recover_outputs
from ..analyst_state import AnalystState
from ..kit_builder import build_kit, column_choices, default_anchor_kind
from ..methods.dc_analysis import update_words
from ..report import block_means, minority_flags, render_report, render_view
from ..robustness import describe as describe_scale_flag
from ..robustness import scale_flags

__all__ = ["AnalystRound", "AnalystState", "ImportReport", "RunOutputs", "block_means", "build_kit", "column_choices",
           "default_anchor_kind", "describe_scale_flag", "left_out_line", "minority_flags", "recover_outputs",
           "render_report", "render_view", "scale_flags", "update_words"]
