"""The one way a kit is made, for the CLI's ``kit new`` and the app's Project page alike.

Every rule about what a kit may hold lives here (or in :class:`core.formats.kit.Kit` and the method's
declared settings): the method must suit the task, labels never leave a clustering site, feature blocks
are for clustering, a uniform anchor needs published ranges, and a method that needs no anchor gets none.
"""

from __future__ import annotations

from dataclasses import replace

from .data.missing import check_choice
from .data.schema import (
    COLUMN_TYPES,
    ColumnChoices,
    IgnoredColumn,
    Schema,
    parse_blocks,
    with_blocks,
)
from .errors import ConfigError
from .formats.identity import PublicCard
from .formats.kit import ANCHOR_KINDS, Kit
from .formats.threat import ThreatModel
from .methods import default_method, get_method, method_class

DEFAULT_ANCHOR_ROWS = 1000


def column_choices(*, ignore: list[str] | None = None, types: list[str] | None = None,
                   levels: list[str] | None = None, missing: list[str] | None = None,
                   other: list[str] | None = None) -> ColumnChoices:
    """The analyst's column decisions from their text forms (``kit new``'s flags), checked.

    ``ignore``: "a,b" items; ``types``: "COL=TYPE" (TYPE one of the column types or "ignored");
    ``levels``: "COL=a,b,c" (binary: the first is the reference), an item "NAME=x|y" merging raw values x and y
    into level NAME (:func:`core.data.schema.parse_level_list`); ``missing``: "COL=POLICY" (refuse, impute,
    impute+indicator); ``other``: column names. ConfigError with one sentence on a malformed item."""
    out = ColumnChoices()
    for item in ignore or []:
        out.ignore.update(c.strip() for c in item.split(",") if c.strip())
    for flag, items, target in (("--type", types, out.types), ("--missing", missing, out.missing)):
        for item in items or []:
            col, value = _pair(flag, item)
            target[col] = value
    for col, value in out.types.items():
        if value not in (*COLUMN_TYPES, "ignored"):
            raise ConfigError(f"unknown column type '{value}' for column '{col}'; choose one of "
                              f"{', '.join(COLUMN_TYPES)}, ignored")
    for col, value in out.missing.items():
        check_choice(value, col)
    for item in levels or []:
        col, value = _pair("--levels", item)
        out.set_levels(col, value)
        if col not in out.levels:
            raise ConfigError(f"--levels for column '{col}' lists no level")
    out.other.update(c.strip() for item in other or [] for c in item.split(",") if c.strip())
    return out


def _pair(flag: str, item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"{flag} takes COLUMN=VALUE, got '{item}'")
    col, value = (p.strip() for p in item.split("=", 1))
    if not col or not value:
        raise ConfigError(f"{flag} takes COLUMN=VALUE, got '{item}'")
    return col, value


def default_anchor_kind(task: str) -> str:
    """Uniform in the public ranges for clustering (DC-Clustering's anchor); extended SMOTE otherwise."""
    return "uniform" if task == "clustering" else "smote"


def build_kit(*, name: str, schema: Schema, analyst: PublicCard, task: str | None = None, method: str | None = None,
              settings: dict | None = None, blocks: str | None = None, anchor_kind: str | None = None,
              anchor_rows: int | None = None, roster: list[PublicCard] | None = None,
              threat: ThreatModel | None = None) -> tuple[Kit, list[str]]:
    """A checked, unsigned kit and notes for the person making it (e.g. a label column left out).

    ``threat``: the threat model the kit declares (default: a colluding site counts). ``task`` defaults to the
    method's, ``method`` to the task's first registered method; ``blocks`` is the text form ``"name=a,b;other=c"``.
    Raises ConfigError with one sentence on any rule broken."""
    notes: list[str] = []
    if not name.strip():
        raise ConfigError("give the project a name")
    if method is None:
        method = default_method(task or "classification")
    cls = method_class(method)
    task = task or cls.task
    if cls.task != task:
        raise ConfigError(f"method '{method}' is for {cls.task}, not {task}")
    if task == "clustering" and schema.label is not None:
        notes.append(f"column '{schema.label}' is left out: labels never leave a site in a clustering project")
        schema = Schema([replace(f, class_mean=None, class_std=None) for f in schema.features],
                        id_column=schema.id_column, missing_tokens=list(schema.missing_tokens), ignored=[
            *schema.ignored, IgnoredColumn(schema.label, "a label: labels never leave a site in a clustering project")])
    if blocks:
        if task != "clustering":
            raise ConfigError("feature blocks (a vertical partition) are for clustering projects")
        schema, more = with_blocks(schema, parse_blocks(blocks))
        notes += more
    schema.validate()
    settings = dict(settings or {})
    get_method(method, settings)  # refuse bad settings now, not at every site
    anchor: dict = {}
    if cls.needs_anchor:
        kind = anchor_kind or default_anchor_kind(task)
        if kind not in ANCHOR_KINDS:
            raise ConfigError(f"unknown anchor kind '{kind}'; choose one of {', '.join(ANCHOR_KINDS)}")
        has_ranges = all(c.min is not None and c.max is not None for c in schema.features if not c.typed)
        if kind == "uniform" and not has_ranges:
            raise ConfigError("a uniform anchor needs the sample's public min/max ranges in the kit "
                              "(publish them, or choose another anchor kind)")
        rows = int(anchor_rows or DEFAULT_ANCHOR_ROWS)
        if not 10 <= rows <= 100_000:
            raise ConfigError(f"the anchor needs between 10 and 100,000 rows, got {rows}")
        anchor = {"kind": kind, "rows": rows}
    elif anchor_kind:
        notes.append(f"method '{method}' needs no anchor: the anchor settings are not used")
    listed = None if roster is None else [{"name": c.name, "fingerprint": c.fingerprint} for c in roster]
    kit = Kit(name=name.strip(), task=task, schema=schema, method=method, analyst=analyst, settings=settings,
              anchor=anchor, roster=listed, threat_model=(threat or ThreatModel()).kit_block())
    return kit, notes
