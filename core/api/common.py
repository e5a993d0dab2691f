"""What both roles use (see :mod:`core.api`): kits and workspaces, sealed files as seen from outside, reading CSVs
and schemas, the missing-value vocabulary, the methods behind their seam and the figures people read. Nothing
here reaches the anchor secret (the analyst's side imports it)."""

from ..data.missing import CHOICES as MISSING_CHOICES
from ..data.missing import HELP as MISSING_HELP
from ..data.missing import LEGACY_MEAN
from ..data.missing import WORDS as MISSING_WORDS
from ..data.missing import choice_of as missing_choice
from ..data.schema import (
    COLUMN_TYPES,
    ColumnChoices,
    FeatureColumn,
    Schema,
    format_level_list,
    infer_schema,
    natural_sorted,
    with_blocks,
)
from ..data.tabular import MISSING_TOKENS, CsvFormat, CsvOptions, LocalTable, data_records, preview, read_table
from ..formats.audit import new_log_hint
from ..formats.audit_restart import Restart, restart_audit
from ..formats.envelope import SealedFile, file_digest, inspect
from ..formats.kit import Kit
from ..formats.workspace import AnalystWorkspace, SiteWorkspace, UntrustedPin, default_workspace, open_workspace
from ..learn.clinical_metrics import calibration_points, roc_points
from ..learn.figure_table import confusion_lines, figure_rows
from ..learn.intervals import describe as describe_estimate
from ..learn.reduction import default_dimension
from ..learn.site_update import UPDATE_WORDS
from ..learn.threshold import rates_at, threshold_for
from ..methods import (
    COEFFICIENTS,
    DISTILLED_ROWS,
    METHODS,
    PROTOTYPES,
    REDUCED_ROWS,
    SUMMARIES,
    ClientDistances,
    Disclosure,
    FitContext,
    Method,
    MethodResult,
    ReceivedBundle,
    Release,
    SiteExport,
    SiteInput,
    default_method,
    get_method,
    method_class,
    methods_for,
    register,
    unregister,
)
from ..methods.settings import Setting
from ..methods.views import Bars, Curve, Heatmap, PageTexts, Scatter, Table, Text, View

__all__ = ["COEFFICIENTS", "COLUMN_TYPES", "DISTILLED_ROWS", "LEGACY_MEAN", "METHODS",
           "MISSING_CHOICES", "MISSING_HELP", "MISSING_TOKENS", "MISSING_WORDS", "PROTOTYPES", "REDUCED_ROWS",
           "SUMMARIES", "UPDATE_WORDS", "AnalystWorkspace", "Bars", "ClientDistances",
           "ColumnChoices", "CsvFormat", "CsvOptions", "Curve", "Disclosure", "FeatureColumn", "FitContext", "Heatmap",
           "Kit", "LocalTable", "Method", "MethodResult", "PageTexts", "ReceivedBundle",
           "Release", "Restart", "Scatter", "Schema", "SealedFile", "Setting", "SiteExport", "SiteInput",
           "SiteWorkspace", "Table", "Text", "UntrustedPin", "View", "calibration_points",
           "confusion_lines", "data_records", "default_dimension", "default_method", "default_workspace",
           "describe_estimate", "figure_rows", "file_digest", "format_level_list", "get_method", "infer_schema",
           "inspect", "method_class", "methods_for", "missing_choice", "natural_sorted", "new_log_hint",
           "open_workspace", "preview", "rates_at", "read_table", "register",
           "restart_audit", "roc_points", "threshold_for", "unregister", "with_blocks"]
